"""The HTML pages: leaderboard, submission, upload form, SQL console, API reference.

Pages render on the server from the same functions the JSON API uses (proforma.app.scoring's
leaderboard, the eval.* aggregate tables, the public snapshot's schema); charts are drawn
in the browser by app/web/static/charts.js from JSON embedded in the page.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from proforma.app import __version__
from proforma.app.read import queries
from proforma.app.read.deps import SettingsDep, WarehouseDep
from proforma.app.read.errors import NotFound
from proforma.app.read.formats import clean, human_bytes
from proforma.app.read.queries import (
    TRACK_INFO,
    footprint_names,
    leaderboard_table,
    score_run,
    submission_record,
    submission_scores,
)
from proforma.app.read.sqlguard import snapshot_schema
from proforma.app.scoring.cards import CardFilter, cards
from proforma.app.scoring.leaderboard import provenance
from proforma.app.store.warehouse import Warehouse
from proforma.app.web import TEMPLATES_DIR
from proforma.contracts import families
from proforma.contracts.metrics import METRICS, Better, Metric, coverage_names

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(TEMPLATES_DIR))

_HIDDEN = {"rank", "submission_id", "n_components", "sig", "footprint", "score_run_id"}
#: Column headers other than the metrics' (whose labels are their definitions',
#: contracts/metrics.py).
_LABELS = {
    "n": "cells",
    "model": "model",
    "dm_vs_leader": "DM vs leader",
    "dm_vs_reference": "DM vs reference",
    "p_value": "p",
    "p_best": "P(best)",
}
#: Which way each direction of `Better` points on a metric's header (issue 49).
_ARROWS = {Better.lower: "↓", Better.higher: "↑", Better.target: "→·←"}


def _label(column: str) -> str:
    spec = METRICS.get(column)
    if spec is None:
        return _LABELS.get(column, column)
    return f"{spec.label} {_ARROWS[spec.better]}"


def score_metrics() -> list[Metric]:
    """The metrics that score (better lower or higher), not the calibration diagnostics
    (z², coverage: best at a target): the columns of the per-item table."""
    return [m for m in METRICS.values() if m.better is not Better.target]


def fmt_metric(value: Any, metric: str) -> str:
    """A metric's value with its definition's digits (as `fmt` otherwise)."""
    spec = METRICS.get(metric)
    if spec is None or not isinstance(value, float) or not math.isfinite(value):
        return fmt(value)
    return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.{spec.digits}f}"


def fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4f}"
    return str(value)


templates.env.globals["fmt"] = fmt
templates.env.globals["fmt_metric"] = fmt_metric
#: Every metric's definition, in registry order: the templates' metric columns.
templates.env.globals["metrics"] = METRICS
#: The scores among them (better lower or higher; not the calibration diagnostics).
templates.env.globals["score_metrics"] = score_metrics
#: The density families (contracts/families.py), read as a page renders: the upload
#: forms' options and shape-parameter fields.
templates.env.globals["density_families"] = families


def _render(request: Request, name: str, page: str, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(
        request, name, {"page": page, "version": __version__, **context}
    )


def _columns(names: list[str], types: dict[str, str], metric: str) -> list[dict[str, Any]]:
    """Displayed columns of a scoring.leaderboard table; the DM mark sits on the track's metric."""
    cols = []
    for c in names:
        # the board's uncertainty shows inside the metric's and the model's cells
        if (
            c in _HIDDEN
            or c
            in (
                "in_mcs",
                "mcs_p",
                "after_test_start",
                "clean_cells",
                "clean_after",
                "training_cutoff",
            )
            or c.endswith(("_lo", "_hi", "_clean"))
        ):
            continue
        col: dict[str, Any] = {
            "name": c,
            "label": _label(c),
            "text": types.get(c) == "string",
            # a metric a submission does not have (a quantile forecast's NLL)
            "dash": c in METRICS,
        }
        if c == metric and "sig" in names:
            col["mark"] = "sig"
        if f"{c}_lo" in names:
            col["interval"] = (f"{c}_lo", f"{c}_hi")
        if f"{c}_clean" in names:
            col["clean"] = f"{c}_clean"
        cols.append(col)
    return cols


def _metric(track: str) -> str:
    return next((t for t in TRACK_INFO if t["name"] == track), TRACK_INFO[0])["metric"]


def _chart(wh: Warehouse, run: dict[str, Any], track: str, order: list[str]) -> dict[str, Any]:
    """Series for the charts: the track's main metric by horizon, coverage, PIT."""
    metric = _metric(track)
    rows = queries.horizon_series(wh, run["score_run_id"], metric)
    series: dict[int, dict[str, Any]] = {}
    for sid, name, h, v in rows:
        series.setdefault(sid, {"name": name, "points": []})["points"].append([h, v])
    coverage = queries.density_coverage(wh, run["score_run_id"])
    pit_rows = queries.pit_histograms(wh, run["score_run_id"])
    return clean(
        {
            # one colour per model on every chart: its place on the leaderboard
            "colors": {name: i for i, name in enumerate(order)},
            "metric": metric,
            "metric_label": _label(metric),
            "by_horizon": list(series.values()),
            "coverage": [
                {
                    "name": name,
                    "points": [
                        [METRICS[c].target, v]
                        for c, v in zip(coverage_names(), values, strict=True)
                    ],
                }
                for _, name, *values in coverage
            ],
            "pit": [
                {"submission_id": sid, "name": name, "shares": shares, "index": i}
                for i, (sid, name, shares) in enumerate(pit_rows)
            ],
        }
    )


@router.get("/", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    wh: WarehouseDep,
    footprint: str | None = None,
    track: str = TRACK_INFO[0]["name"],
    against: str | None = None,
    clean_after: str | None = None,
    model_family: str | None = None,
    all_entries: bool = False,
) -> HTMLResponse:
    names = footprint_names(wh)
    if track not in {t["name"] for t in TRACK_INFO}:
        track = TRACK_INFO[0]["name"]
    if footprint not in names:
        footprint = "full" if "full" in names else (names[0] if names else None)
    context: dict[str, Any] = {
        "footprints": names,
        "footprint": footprint,
        "tracks": TRACK_INFO,
        "track": track,
        "run": None,
        "against": against or "",
    }
    run = score_run(wh, footprint) if footprint else None
    if run and footprint:
        scored = queries.submission_names(wh, run["submission_ids"])
        if against not in scored:
            against = None  # a model not on this footprint: back to the leader
        families = sorted(
            {str(c["model_family"]) for c in cards(wh, run["submission_ids"]).values()}
        )
        if model_family not in families:
            model_family = None
        chosen = CardFilter(all_entries=all_entries, model_family=model_family)
        table = leaderboard_table(
            wh, footprint, track, "global", against, score_run_id=run["score_run_id"], cards=chosen
        )
        # the clean slices a reader can rank on: after each member's declared cutoff
        cutoffs = sorted({c for c in table.column("training_cutoff").to_pylist() if c})
        if clean_after in cutoffs:
            table = leaderboard_table(
                wh,
                footprint,
                track,
                "global",
                score_run_id=run["score_run_id"],
                clean_after=clean_after,
                cards=chosen,
            )
        else:
            clean_after = None
        types = {
            f.name: ("string" if str(f.type) in ("string", "large_string") else "number")
            for f in table.schema
        }
        context.update(
            run=run,
            columns=_columns(table.column_names, types, _metric(track)),
            rows=table.to_pylist(),
            chart=_chart(wh, run, track, [r.get("model") for r in table.to_pylist()]),
            models=scored,
            cutoffs=cutoffs,
            families=families,
            model_family=model_family or "",
            all_entries=all_entries,
            clean_after=clean_after or "",
            uncertainty=provenance(table).get("uncertainty"),
            against=against or "",
            dm_note=f"Diebold–Mariano tests against {against or 'the leader'} (quarter-clustered, "
            "Newey–West, HLN; DM > 0 favours the row's model): * / ** / *** "
            f"{'the reference' if against else 'leader'} better at 10 / 5 / 1%, † this "
            "model better at 1%.",
        )
    return _render(request, "leaderboard.html", "leaderboard", **context)


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(request: Request, submission_id: int, wh: WarehouseDep) -> HTMLResponse:
    record = submission_record(wh, submission_id)
    if record is None:
        raise NotFound(f"No submission {submission_id}.")
    return _render(
        request,
        "submission.html",
        "submission",
        sub=record,
        scores=clean(submission_scores(wh, submission_id)),
    )


@router.get("/upload", response_class=HTMLResponse)
def upload_page(request: Request, settings: SettingsDep) -> HTMLResponse:
    return _render(
        request,
        "upload.html",
        "upload",
        max_size=human_bytes(settings.upload_max_bytes),
        per_day=settings.uploads_per_day,
    )


@router.get("/query", response_class=HTMLResponse)
def query_page(request: Request, settings: SettingsDep) -> HTMLResponse:
    schema = snapshot_schema(settings.public_snapshot)
    return _render(
        request,
        "query.html",
        "query",
        max_rows=f"{settings.query_max_rows:,}",
        timeout=f"{settings.query_timeout_s:g}",
        tables={t: list(cols) for t, cols in schema.items()},
    )


@router.get("/api/docs", response_class=HTMLResponse)
def api_docs(request: Request) -> HTMLResponse:
    spec = request.app.openapi()
    operations = []
    for path, methods in spec.get("paths", {}).items():
        for method, op in methods.items():
            params = [
                {
                    "name": p["name"],
                    "where": p["in"],
                    "required": p.get("required", False),
                    "type": p.get("schema", {}).get(
                        "type", p.get("schema", {}).get("anyOf", [{}])[0].get("type", "")
                    ),
                    "description": p.get("description", ""),
                }
                for p in op.get("parameters", [])
            ]
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                schema = content.get("schema", {})
                if "$ref" in schema:
                    ref = schema["$ref"].rsplit("/", 1)[-1]
                    schema = spec.get("components", {}).get("schemas", {}).get(ref, {})
                for name, prop in schema.get("properties", {}).items():
                    params.append(
                        {
                            "name": name,
                            "where": f"body ({media})",
                            "required": name in schema.get("required", []),
                            "type": prop.get("type", prop.get("format", "")),
                            "description": prop.get("description", ""),
                        }
                    )
            operations.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": op.get("summary", ""),
                    "description": op.get("description", ""),
                    "params": params,
                    "secured": bool(op.get("security")),
                }
            )
    return _render(request, "api_docs.html", "docs", operations=operations)


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    return Response(status_code=204)
