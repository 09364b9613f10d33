"""`proforma train forma`, `proforma predict forma`, `proforma scenario`, `proforma forma ...`.

Training and forecasting run in app/flows/forma.py, the scenario and the oracle experiment
in app/flows/scenario.py (which the report and the API can call too); this layer parses
arguments and prints. models/forma never touches the database.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import pyarrow as pa
import typer
from rich.table import Table

from proforma.app.cli.common import console, note, summary
from proforma.app.flows import forma as flows
from proforma.app.flows.forma import (
    identities_table,
    read_only,
    resolve_device,
    tuple_reader,
)
from proforma.app.flows.forma import require_panel as _require_panel
from proforma.contracts.errors import UserError
from proforma.contracts.quarters import parse_quarter, quarter_label

forma_app = typer.Typer(
    help="Forma, the tuple-set transformer: export, oracle experiment, info.", no_args_is_help=True
)

PRESET_OPT = typer.Option(
    "small",
    "--preset",
    help="paper (942,210 parameters), mid or small (the demo's); docs/forma.md.",
)
FAMILY_OPT = typer.Option(
    "gaussian", "--family", help="gaussian (R2/CRPS track) or laplace (MAE track)."
)
SEEDS_OPT = typer.Option("60-64", "--seeds", help="Seeds: a range 60-64 or a list 60,61.")
DEVICE_OPT = typer.Option("auto", "--device", help="auto, cpu, cuda or cuda:N.")
THREADS_OPT = typer.Option(
    0,
    "--threads",
    min=0,
    help="CPU threads for PyTorch (0 = PyTorch's default, one per core). "
    "On a CPU shared with other jobs, 1 avoids threads waiting on each other.",
)


# -- helpers -------------------------------------------------------------------------
def parse_seeds(text: str) -> list[int]:
    """'60-64' -> [60..64]; '60,62' -> [60, 62]."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)-(\d+)", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            if b < a:
                raise UserError(f"Seed range {part!r} runs backwards")
            seeds.extend(range(a, b + 1))
        elif part.isdigit():
            seeds.append(int(part))
        else:
            raise UserError(f"Not a seed list: {text!r} (use 60-64 or 60,61)")
    if not seeds or len(set(seeds)) != len(seeds):
        raise UserError(f"Seeds must be distinct and non-empty: {text!r}")
    return seeds


def parse_epochs(text: str) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); '' -> ()."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not all(p.isdigit() and int(p) > 0 for p in parts):
        raise UserError(f"--keep-epochs takes positive epoch numbers like 1,2,4: {text!r}")
    return tuple(int(p) for p in parts)


# -- train ---------------------------------------------------------------------------
def train_forma(
    preset: str = PRESET_OPT,
    seeds: str = SEEDS_OPT,
    family: str = FAMILY_OPT,
    resume: bool = typer.Option(False, "--resume", help="Continue unfinished checkpoints."),
    device: str = DEVICE_OPT,
    bf16: bool = typer.Option(
        False, "--bf16", help="bf16 autocast (for GPUs; runs on CPU, slower)."
    ),
    compile: bool = typer.Option(
        False, "--compile", help="torch.compile the network (for GPUs; see docs/forma.md)."
    ),
    origins_per_epoch: int = typer.Option(
        0, "--origins-per-epoch", help="Seeded subsample of origins per epoch (0 = preset)."
    ),
    epochs: int = typer.Option(0, "--epochs", help="Override the preset's epochs (0 = preset)."),
    threads: int = THREADS_OPT,
    workers: int = typer.Option(
        0, "--workers", min=0, help="Processes building training batches (GPUs; 0 = this process)."
    ),
    use_shipped: bool = typer.Option(
        False,
        "--use-shipped",
        help="Install the repository's checkpoint instead of training when "
        "it was trained on this very panel (same signature); train otherwise.",
    ),
    shipped_only: bool = typer.Option(
        False,
        "--shipped-only",
        help="Install the repository's checkpoint when it was trained on this very panel; "
        "never train (the demo's first choice).",
    ),
    ship: bool = typer.Option(
        False,
        "--ship",
        help="Also write each finished checkpoint (without "
        "optimizer state) to models/forma/checkpoints/ for the repository.",
    ),
    jobs: int = typer.Option(
        1,
        "--jobs",
        min=1,
        help="Seeds trained at once, one process each (with --threads threads, default 1).",
    ),
    keep_epochs: str = typer.Option(
        "",
        "--keep-epochs",
        help="Comma-separated epochs after which a copy of the checkpoint is kept as "
        "seed<N>.epoch<E>.pt (learning curves: bench/forma_curve.py --checkpoints).",
    ),
) -> None:
    """Train Forma on train + validation tuple windows (each origin once), one checkpoint per seed."""
    overrides: dict = {"bf16": bf16, "compile": compile}
    if origins_per_epoch:
        overrides["origins_per_epoch"] = origins_per_epoch
    if epochs:
        overrides["epochs"] = epochs
    rep = flows.train(
        preset,
        parse_seeds(seeds),
        family,
        resume=resume,
        device=device,
        threads=threads,
        workers=workers,
        overrides=overrides,
        use_shipped=use_shipped,
        shipped_only=shipped_only,
        ship=ship,
        jobs=jobs,
        keep_epochs=parse_epochs(keep_epochs),
        log=note,
        command="proforma " + " ".join(sys.argv[1:]),
    )
    trained = ", ".join(f"{s} loss {v:.3f}" for s, v in rep.final_losses.items())
    shipped = (
        f"; seed(s) {', '.join(map(str, rep.shipped))} from the shipped checkpoint"
        if rep.shipped
        else ""
    )
    summary(
        f"Forma {rep.preset}/{family} seeds {seeds} on {rep.origins:,} origins (panel "
        f"{rep.signature}) in {rep.seconds:.0f}s"
        + (f"; trained {trained}" if trained else "")
        + shipped
    )


# -- predict -------------------------------------------------------------------------
def predict_forma(
    preset: str = PRESET_OPT,
    seeds: str = SEEDS_OPT,
    family: str = FAMILY_OPT,
    split: str = typer.Option("test", "--split", help="Origins to forecast: test, val or train."),
    name: str = typer.Option(
        "", "--name", help="Submission name (default forma-<preset>-<family>)."
    ),
    device: str = DEVICE_OPT,
    batch_size: int = typer.Option(
        0,
        "--batch-size",
        min=0,
        help="Origins per forward pass (0: 8 on a CPU, where small batches stay in the "
        "caches; 64 on a GPU).",
    ),
    score: bool = typer.Option(True, "--score/--no-score", help="Score the forecasts right away."),
    calibrate: bool = typer.Option(
        True,
        "--calibrate/--no-calibrate",
        help="Scale sigma per horizon so the intervals cover the validation origins held "
        "out of training (presets with calibration_origins; docs/forma.md).",
    ),
    threads: int = THREADS_OPT,
    jobs: int = typer.Option(
        1,
        "--jobs",
        min=1,
        help="Forecast in this many processes side by side, each with --threads threads "
        "(default 1): on a CPU they keep the cores busy where one process's threads wait.",
    ),
    ship_calibration: bool = typer.Option(
        False,
        "--ship-calibration",
        help="Only calibrate the intervals afresh and record the result beside the shipped "
        "checkpoints (models/forma/checkpoints/calibration.json; no forecast): later "
        "forecasts with the same weights and held-out windows take it as it is.",
    ),
) -> None:
    """Forecast every origin of a split (all future hidden, one pass), write the seeds as
    mixture components through the common forecast path, and score them."""
    seed_list = parse_seeds(seeds)
    if ship_calibration:
        got = flows.ship_interval_calibration(
            preset,
            seed_list,
            family,
            device=device,
            batch_size=batch_size,
            threads=threads,
            log=note,
        )
        summary(
            "forma: no validation origins held out: nothing to calibrate"
            if got is None
            else f"forma: calibration of seeds {seed_list} recorded in "
            f"{flows.SHIPPED_DIR / flows.SHIPPED_CALIBRATION}"
        )
        return
    rep = flows.predict(
        preset,
        seed_list,
        family,
        split=split,
        name=name,
        device=device,
        batch_size=batch_size,
        score=score,
        calibrate=calibrate,
        threads=threads,
        jobs=jobs,
        log=note,
    )
    scored = ""
    if rep.score_run_id is not None:
        view = Table(title=f"full footprint, score run {rep.score_run_id}")
        cols = [c for c in ("model", "n", "r2", "mae", "crps") if rep.board and c in rep.board[0]]
        for c in cols:
            view.add_column(c, justify="right")
        for r in rep.board:
            view.add_row(*(f"{r[c]:.4f}" if isinstance(r[c], float) else str(r[c]) for c in cols))
        console.print(view)
        scored = f"; scored in run {rep.score_run_id} (`proforma leaderboard` for more)"
    summary(
        f"Forma {preset}/{family} x{len(seed_list)} seeds forecast {rep.origins:,} {split} "
        f"origins in {rep.seconds:.0f}s -> submission {rep.submission_id} '{rep.name}'{scored}"
    )


# -- scenario ------------------------------------------------------------------------
_PIN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:@\s*(\d+)(?:\s*-\s*(\d+))?)?\s*=\s*(\S+)\s*$")


def parse_pins(specs: list[str]) -> list[tuple[str, list[int] | None, str, float]]:
    """'revtq=120' (every horizon), 'revtq@1=120', 'revtq@1-4=std:0.5', comma-separated ok.
    Returns (item, horizons or None for all, 'usd'|'std', value)."""
    out = []
    for spec in specs:
        for part in spec.split(","):
            if not part.strip():
                continue
            m = _PIN.match(part)
            if not m:
                raise UserError(
                    f"Not a pin: {part!r} (use revtq=1200, revtq@1=1200 or revtq@1-4=std:0.5)"
                )
            item, a, b, raw = m.groups()
            hz = None if a is None else list(range(int(a), int(b or a) + 1))
            if hz is not None and (min(hz) < 1 or max(hz) > 20):
                raise UserError(f"Pin horizons must lie in 1..20: {part!r}")
            unit = "usd"
            if raw.lower().startswith("std:"):
                unit, raw = "std", raw[4:]
            try:
                value = float(raw)
            except ValueError:
                raise UserError(f"Pin value is not a number: {part!r}") from None
            if not np.isfinite(value):
                raise UserError(f"Pin value must be finite: {part!r}")
            out.append((item.lower(), hz, unit, value))
    return out


def scenario_command(
    firm: str = typer.Option(..., "--firm", help="gvkey of the firm (e.g. 001690)."),
    origin: str = typer.Option(..., "--origin", help="Forecast origin quarter, e.g. 2015Q4."),
    pin: Annotated[
        list[str] | None,
        typer.Option(
            "--pin",
            help="Pinned future values: revtq=1200 (dollars, all horizons), revtq@1=1200, "
            "revtq@1-4=std:0.5 (standardized). Repeatable.",
        ),
    ] = None,
    preset: str = PRESET_OPT,
    seeds: str = typer.Option(
        "",
        "--seeds",
        help="Seeds: a range 60-64 or a list 60,61 (default: every trained seed of the preset).",
    ),
    family: str = FAMILY_OPT,
    horizons: str = typer.Option("1,4,8,12,20", "--horizons", help="Horizons shown in the table."),
    level: int = typer.Option(80, "--level", help="Central interval shown: 50, 80, 90 or 95."),
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the full conditional forecast as parquet.")
    ] = None,
    device: str = DEVICE_OPT,
) -> None:
    """Conditional statement forecast: pin future values, forecast the rest, in expected
    dollars with intervals and the identity check."""
    import pyarrow.parquet as pq

    from proforma.app.flows.scenario import conditional_statement, load_forma, scenario_view

    if level not in (50, 80, 90, 95):
        raise UserError("--level must be 50, 80, 90 or 95")
    try:
        shown = [int(h) for h in horizons.split(",") if h.strip()]
    except ValueError:
        raise UserError(
            f"--horizons takes a comma-separated list such as 1,4,8: {horizons!r}"
        ) from None
    oq = parse_quarter(origin)
    pins_spec = parse_pins(pin or [])
    dev = resolve_device(device)
    models, used, _ = load_forma(preset, family, parse_seeds(seeds) if seeds.strip() else None, dev)
    with read_only() as wh:
        _require_panel(wh)
        result = conditional_statement(wh, models, firm, oq, pins_spec, family=family, device=dev)
    console.print(scenario_view(result, shown, level))
    viol = result.check.column("violation").to_numpy() if result.check.num_rows else np.zeros(0)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(result.table, out)
    med = (
        f"median identity violation {np.median(viol):.1%} over {len(viol)} (identity, horizon) pairs"
        if len(viol)
        else "no identity fully forecast"
    )
    pinned = result.table.column("pinned").to_numpy(zero_copy_only=False)
    summary(
        f"scenario {result.firm} {quarter_label(oq)} (Forma {preset}/{family}, seeds "
        f"{','.join(map(str, used))}): {result.pins} pinned cell(s), "
        f"{int((~pinned).sum())} forecast; {med}" + (f"; written to {out}" if out else "")
    )


# -- forma group: oracle experiment, export, info --------------------------------------
@forma_app.command("oracle-experiment")
def oracle_experiment(
    preset: str = PRESET_OPT,
    seeds: str = SEEDS_OPT,
    family: str = FAMILY_OPT,
    item: str = typer.Option("revtq", "--item", help="Item whose realized path is pinned."),
    origins: int = typer.Option(768, "--origins", help="Test origins sampled (0 = all)."),
    sample_seed: int = typer.Option(0, "--sample-seed", help="Seed of the origin sample."),
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the summary table as parquet.")
    ] = None,
    device: str = DEVICE_OPT,
) -> None:
    """Pin the realized path of --item on test origins and report the change in MAE and
    change-space R2 of the other cells vs. the unconditional forecast, by horizon and statement."""
    import pyarrow.parquet as pq

    from proforma.app.flows.scenario import load_forma
    from proforma.app.flows.scenario import oracle_experiment as run_oracle_experiment

    seed_list = parse_seeds(seeds)
    dev = resolve_device(device)
    models, _, _ = load_forma(preset, family, seed_list, dev)
    with read_only() as wh:
        _require_panel(wh)
        table, _, n_origins = run_oracle_experiment(
            wh, models, item=item, origins=origins, sample_seed=sample_seed, device=dev
        )
    view = Table(
        title=f"Oracle experiment: pin the realized {item} path ({len(seed_list)}-seed mixture)"
    )
    for c in table.column_names:  # the experiment's own columns, in its order
        view.add_column(c, justify="right")
    for r in table.to_pylist():
        view.add_row(
            r["group"],
            r["key"],
            f"{r['cells']:,}",
            *(
                f"{r[c]:.4f}"
                for c in ("mae_uncond", "mae_cond", "d_mae", "r2_uncond", "r2_cond", "d_r2")
            ),
        )
    console.print(view)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, out)
    top = table.to_pylist()[0]
    summary(
        f"oracle {item}: {n_origins:,} origins, {top['cells']:,} non-pinned cells; MAE "
        f"{top['mae_uncond']:.3f} -> {top['mae_cond']:.3f}, R2 {top['r2_uncond']:.1%} -> "
        f"{top['r2_cond']:.1%}" + (f"; written to {out}" if out else "")
    )


@forma_app.command("export")
def export_windows(
    folder: Annotated[Path, typer.Argument(help="Folder for the Arrow IPC files.")],
    splits: str = typer.Option("train,val", "--splits", help="Splits to export."),
) -> None:
    """Write tuple windows and identities as Arrow IPC files for `torchrun -m proforma.models.forma.train`."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = 0
    with read_only() as wh:
        _require_panel(wh)
        for s in [p.strip() for p in splits.split(",") if p.strip()]:
            reader = tuple_reader(wh, s, future=True)
            with (
                pa.OSFile(str(folder / f"windows_{s}.arrow"), "wb") as f,
                pa.ipc.new_file(f, reader.schema) as w,
            ):
                for b in reader:
                    w.write_batch(b)
                    rows += b.num_rows
        ids = identities_table(wh)
        with (
            pa.OSFile(str(folder / "identities.arrow"), "wb") as f,
            pa.ipc.new_file(f, ids.schema) as w,
        ):
            w.write_table(ids)
    summary(
        f"exported {rows:,} origin windows to {folder}; train with: torchrun --nproc_per_node=N "
        f"-m proforma.models.forma.train --windows {folder}/windows_*.arrow --identities "
        f"{folder}/identities.arrow --out seed60.pt"
    )


@forma_app.command("info")
def info(preset: str = PRESET_OPT) -> None:
    """Show a preset's configuration and trainable parameter count."""
    from proforma.models.forma.network import count_parameters
    from proforma.models.forma.presets import preset as get_preset
    from proforma.models.forma.train import build_model

    cfg = get_preset(preset)
    n = count_parameters(build_model(cfg))
    for k, v in cfg.to_dict().items():
        console.print(f"{k:>22}: {v}")
    summary(f"preset {preset}: {n:,} trainable parameters")
