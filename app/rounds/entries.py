"""The entries every round receives at its open (docs/rounds.md): the reference baselines
(seasonal random walk and fade / AR(1), by the static baselines' rules and fit,
sql/eval/087 and 089, over the round's cells: sql/rounds/080, 081) and, on a grown synthetic panel, the oracle
from the frontier's simulated futures (sql/rounds/082). They go through the same checks
and storage as any submission (app/rounds/submit.submit_table)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.rounds.store import get_round
from proforma.app.rounds.submit import RoundClosed, submit_table
from proforma.app.scoring.baselines import BASELINE_RULES, FADE, FADE_FIT, SEASONAL_RW
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow
from proforma.contracts.rules import RuleSet

#: (name, step, family): the reference baselines under their static boards' names
#: (app/scoring/baselines.REFERENCE_BASELINES), one name for one model everywhere.
BASELINES = (
    (SEASONAL_RW, "rounds/080_entry_seasonal_rw", "point"),
    (FADE, "rounds/081_entry_fade", "point"),
)


def _oracle_ready(wh: Warehouse, origin_q: int) -> bool:
    if not (wh.table_exists("raw.oracle_origins") and wh.table_exists("raw.oracle_paths")):
        return False
    return bool(wh.scalar("SELECT count(*) FROM raw.oracle_origins WHERE origin_q = ?", [origin_q]))


def enter_entries(wh: Warehouse, round_name: str) -> list[dict[str, Any]]:
    """Enter the reference baselines (and the oracle where its paths exist) into a round;
    returns the submission records. Entries already in the round are kept as they are."""
    rnd = get_round(wh, round_name)
    have = {
        r[0]
        for r in wh.fetchall(
            "SELECT name FROM rounds.submissions WHERE round_id = ?", [rnd["round_id"]]
        )
    }
    params = {
        "round_id": rnd["round_id"],
        "origin_q": rnd["origin_q"],
        "fade_fallback": RuleSet.parse(rnd["rules"], "The round records").fade_fallback,
    }
    todo = [b for b in BASELINES if b[0] not in have]
    if "oracle" not in have and _oracle_ready(wh, rnd["origin_q"]):
        todo.append(("oracle", "rounds/082_entry_oracle", "gaussian"))
    entered = []
    # the static baselines' rules and fade fit (one definition: sql/eval/087, 089)
    wh.run_step(BASELINE_RULES)
    wh.run_step(FADE_FIT[0])
    try:
        tables = [(name, wh.query_step(step, params), step, family) for name, step, family in todo]
    finally:
        wh.execute(f"DROP TABLE IF EXISTS {FADE_FIT[1]}")
    for name, table, step, family in tables:
        if table.num_rows == 0:
            continue
        entered.append(
            submit_table(
                wh,
                round_name,
                name,
                table,
                kind="oracle" if name == "oracle" else "baseline",
                family=family,
                metadata={"entry": step},
            )
        )
    return entered


def enter_forma(
    wh: Warehouse, round_name: str, preset: str, seed: int = 60, family: str = "gaussian"
) -> dict[str, Any]:
    """Enter Forma (the trained checkpoint of `preset` and `seed`, app/flows/forma.py) into
    a round: one forward pass over the round's origins with every future hidden and the
    future grid cut only at the round's twentieth quarter (the static splits cut it at
    their last quarter, which is the round's origin), its forecasts kept for the round's
    cells. One seed, so one component (rounds take no mixtures); the sigmas are the
    network's own, without the static predictions' interval calibration."""
    from proforma.app.flows.forma import load_models, load_store, resolve_device
    from proforma.models.forma.predict import predict

    rnd = get_round(wh, round_name)
    split = wh.scalar(
        "SELECT any_value(split) FROM panel.origins WHERE origin_q = ?", [rnd["origin_q"]]
    )
    if split is None or rnd["build_id"] != wh.scalar("SELECT max(build_id) FROM meta.builds"):
        raise UserError(
            f"Forma enters round {round_name!r} from the build it was opened on "
            f"(build {rnd['build_id']}); the warehouse has moved on since"
        )
    device = resolve_device("cpu")
    models, _ = load_models(preset, family, [seed], device)
    store = load_store(wh, [split], future=False, origin_q=rnd["origin_q"])
    batches = list(predict(models, store, device=device, last_q={split: rnd["origin_q"] + 20}))
    forecasts = pa.Table.from_batches(batches) if batches else None
    if forecasts is None or forecasts.num_rows == 0:
        raise UserError(f"Forma made no forecast for round {round_name!r}")
    view = "forma_round_rows"
    wh.con.register(view, forecasts)
    try:
        table = wh.arrow(
            f"""SELECT b.gvkey, i.item AS target, f.origin_q::INTEGER AS origin_q,
                       f.horizon::TINYINT AS horizon, f.mu, f.sigma
                FROM {view} AS f
                JOIN panel.firms AS pf ON pf.firm_id = f.firm_id
                JOIN rounds.baselines AS b
                  ON b.round_id = ? AND b.gvkey = pf.gvkey AND b.item_id = f.item_id
                JOIN ref.items AS i ON i.item_id = f.item_id
                WHERE f.origin_q = ? AND f.component = 0
                ORDER BY b.gvkey, f.item_id, f.horizon""",
            [rnd["round_id"], rnd["origin_q"]],
        )
    finally:
        wh.con.unregister(view)
    return submit_table(
        wh,
        round_name,
        f"forma-{preset}-{family}",
        table,
        kind="model",
        family=family,
        metadata={"model": "forma", "preset": preset, "seed": seed, "calibrated": False},
    )


def _round_build(wh: Warehouse, rnd: dict[str, Any], who: str) -> None:
    """Models enter from the build the round was opened on: its panel ends at the round's
    quarter, so nothing they read depends on a later one."""
    if rnd["build_id"] != wh.scalar("SELECT max(build_id) FROM meta.builds"):
        raise UserError(
            f"{who} enter(s) round {rnd['name']!r} from the build it was opened on "
            f"(build {rnd['build_id']}); the warehouse has moved on since"
        )


def round_views(wh: Warehouse, rnd: dict[str, Any], data: str) -> dict[str, Any]:
    """The data a competitor fits and forecasts a round with, from the build of its open:
    the three splits of its view (`data`, one of suite.DATA), as the static flow loads
    them (so a static run's finished fits are reused), and `origins`, the view's rows of
    the round's frozen origins (origin quarter t, the round's firms)."""
    from proforma.app.flows.baselines import load_splits

    t = rnd["origin_q"]
    firms = [
        r[0]
        for r in wh.fetchall(
            "SELECT f.firm_id FROM rounds.origins o JOIN panel.firms f USING (gvkey) "
            "WHERE o.round_id = ?",
            [rnd["round_id"]],
        )
    ]
    out: dict[str, Any] = dict(load_splits(wh, data))
    rows = [d.rows((d.origin_q == t) & np.isin(d.firm_id, firms)) for d in out.values()]
    found = [d for d in rows if d.n]
    if not found:
        raise UserError(f"Round {rnd['name']!r}: the view has no row of its origins")
    out["origins"] = found[0]
    return out


def competitor_name(spec_name: str, preset: str) -> str:
    """A competitor's entry name in a round: its name on the static boards (`enet`,
    `enet (demo)`), so that one model has one name everywhere."""
    from proforma.models.baselines import suite

    return suite.submission_name(spec_name, preset)


def enter_competitors(
    wh: Warehouse,
    round_name: str,
    which: list[str],
    preset: str = "paper",
    *,
    engine: str = "joblib",
    n_jobs: int = 1,
    items: tuple[str, ...] | None = None,
    horizons: tuple[int, ...] | None = None,
    tracker: Any = None,
) -> list[dict[str, Any]]:
    """Enter learned competitors of the suite (models/baselines/suite.py) into a round: each
    is fit on the train and val splits of the build the round was opened on, as its static
    fit is, and forecasts the round's frozen origins through the suite's
    forecast-at-origins entry point (`suite.forecast_at_origins`); its forecasts of the
    round's cells go through the same checks and storage as an upload (a mixture when it
    returns several components). A static run of the same preset on the same build has
    left its finished fits in the fit cache (models/baselines/fit_cache.py): they are
    reused. Entries already in the round are kept as they are; a round past its deadline
    is refused before anything is fit."""
    from proforma.app.model_inputs.imputed import build_imputed, current_imputation
    from proforma.app.store.settings import get_settings
    from proforma.models.baselines import suite
    from proforma.models.baselines.fanout import FanOut, Tracker

    rnd = _open_round(wh, round_name)
    specs = [suite.get(m) for m in which]
    configs = suite.preset(preset)
    _round_build(wh, rnd, ", ".join(s.name for s in specs) or "competitors")
    specs = _not_entered(wh, rnd, specs, preset)
    tracker = tracker or Tracker()
    if any(s.data == "tabular_imputed" for s in specs) and current_imputation(wh) is None:
        build_imputed(wh, tracker=tracker)
    views = {d: round_views(wh, rnd, d) for d in {s.data for s in specs}}
    fan = FanOut(engine, n_jobs)
    root = get_settings().models_dir / "baselines"
    entered = []
    for spec in specs:
        data = views[spec.data]
        request = suite.FitRequest(
            data["train"],
            data["val"],
            data["test"],
            configs[spec.name],
            root,
            fan,
            tracker,
            items,
            horizons,
        )
        forecast = suite.forecast_at_origins(spec, request, data["origins"])
        entered.append(_enter(wh, rnd, round_name, spec, preset, configs[spec.name], forecast))
    return entered


def _open_round(wh: Warehouse, round_name: str) -> dict[str, Any]:
    """The round, refused when its deadline has passed (before anything is fit)."""
    rnd = get_round(wh, round_name)
    if utcnow() >= rnd["deadline"]:
        raise RoundClosed(
            f"Round {round_name!r} closed at {rnd['deadline']:%Y-%m-%d %H:%M:%S} UTC: no entry "
            "is fit for it"
        )
    return rnd


def _not_entered(wh: Warehouse, rnd: dict[str, Any], specs: list, preset: str) -> list:
    """The competitors of `specs` whose entry (under this preset's name) the round lacks."""
    have = {
        r[0]
        for r in wh.fetchall(
            "SELECT name FROM rounds.submissions WHERE round_id = ?", [rnd["round_id"]]
        )
    }
    return [s for s in specs if competitor_name(s.name, preset) not in have]


def _enter(
    wh: Warehouse,
    rnd: dict[str, Any],
    round_name: str,
    spec: Any,
    preset: str,
    config: dict[str, Any],
    forecast: Any,
) -> dict[str, Any]:
    """Submit one competitor's forecast of the round's cells to the round as a model entry;
    a competitor without sigmas enters as points."""
    table = _round_rows(wh, rnd, forecast)
    if table.num_rows == 0:
        raise UserError(f"{spec.name} made no forecast for round {round_name!r}")
    # a model without sigmas (the elastic net, the random forest) enters as points
    family = spec.family if table.column("sigma").null_count < table.num_rows else "point"
    return submit_table(
        wh,
        round_name,
        competitor_name(spec.name, preset),
        table,
        kind="model",
        family=family,
        metadata={
            "model": spec.name,
            "preset": preset,
            "config": config,
            "build_id": rnd["build_id"],
            "registry_run": forecast.info.get("run"),
        },
    )


def _round_rows(wh: Warehouse, rnd: dict[str, Any], forecast: Any) -> pa.Table:
    """A competitor's finite forecasts of the round's cells, as submit_table takes them."""
    batches = list(forecast.batches(scored_only=False))
    rows = pa.Table.from_batches(batches) if batches else None
    if rows is None:
        return pa.table({})
    view = "competitor_round_rows"
    wh.con.register(view, rows)
    try:
        return wh.arrow(
            f"""SELECT b.gvkey, i.item AS target, f.origin_q::INTEGER AS origin_q,
                       f.horizon::TINYINT AS horizon, f.mu, f.sigma, f.component
                FROM {view} AS f
                JOIN panel.firms AS pf ON pf.firm_id = f.firm_id
                JOIN rounds.baselines AS b
                  ON b.round_id = ? AND b.gvkey = pf.gvkey AND b.item_id = f.item_id
                JOIN ref.items AS i ON i.item_id = f.item_id
                WHERE f.origin_q = ? AND isfinite(f.mu)
                ORDER BY b.gvkey, f.item_id, f.horizon, f.component""",
            [rnd["round_id"], rnd["origin_q"]],
        )
    finally:
        wh.con.unregister(view)
