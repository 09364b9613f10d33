"""`proforma demo`: the whole benchmark on the synthetic panel, then the service.

Each stage is the same `proforma` command a user would run, started as a child process
so that it holds the warehouse only while it works (one writer at a time). A stage whose
result is already in the warehouse is skipped, so a second `make demo` goes straight to
serving; `--fresh` starts from an empty warehouse.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from proforma.app.cli import rounds
from proforma.app.cli.common import console, note, summary
from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import Warehouse, connect
from proforma.contracts.errors import UserError
from proforma.models.baselines import suite
from proforma.models.numerics import one_blas_thread

#: The competitors the demo fits by default (demo preset: docs/baselines.md lists what it
#: shrinks). On 2 cores the random forest and each chained-GBM arm alone take most of the
#: demo's time budget even at the demo preset (docs/forma.md, "The demo's stages");
#: `--competitors all` or `proforma run baselines --preset demo` adds them.
DEMO_COMPETITORS = suite.demo_names()
#: The paper's footprints the demo scores (and, last, the oracle's origins).
SCORED_FOOTPRINTS = ("full", "geert", "llm")
#: One seed keeps the demo near its budget on 2 cores; the paper mixes seeds 60-64.
FORMA_SEEDS = "60"
#: Figure 2's oracle experiment in the demo: a third of the paper's 768 origins keeps the
#: report's Forma forward passes within the demo's budget.
REPORT_ORACLE_ORIGINS = 256
#: The demo's commands run BLAS (numpy's and scipy's OpenBLAS) on one thread: two jobs
#: share the 2 cores throughout (Forma's forecasts beside the rest), so a job's BLAS
#: threads only contend with the other's. The elastic net's demo fit alone took 57
#: CPU-s against 70 with BLAS on two threads, its forecasts equal to the bit.
CHILD_BLAS = {"OPENBLAS_NUM_THREADS": "1"}
#: Forma in the demo: the repository's `mid` checkpoint (seed 60 of `proforma train forma
#: --preset mid --seeds 60,61 --jobs 2`) when it was trained on this very panel
#: (docs/forma.md, "Shipped checkpoint"); on any other panel a short run of `small`
#: (8 x 768 origins), since `mid`'s schedule would not fit the demo's time budget
#: (docs/forma.md, "Presets" and "The demo's stages", have the times).
FORMA_SHIPPED = [
    "train",
    "forma",
    "--preset",
    "mid",
    "--seeds",
    FORMA_SEEDS,
    "--shipped-only",
]
FORMA_TRAIN = [
    "train",
    "forma",
    "--preset",
    "small",
    "--seeds",
    FORMA_SEEDS,
    "--resume",
    "--epochs",
    "8",
    "--origins-per-epoch",
    "768",
]


def forma_preset() -> str:
    """`mid` when the models folder holds the shipped `mid` checkpoint (installed by
    FORMA_SHIPPED, which checks the panel), `small` otherwise."""
    import torch

    from proforma.app.flows.forma import checkpoint_path, shipped_path

    installed = checkpoint_path("mid", "gaussian", int(FORMA_SEEDS))
    shipped = shipped_path("mid", "gaussian", int(FORMA_SEEDS))
    if not (installed.exists() and shipped.exists()):
        return "small"
    same = installed.read_bytes() == shipped.read_bytes()
    if not same:  # trained here rather than installed: the same model if the same panel
        signature = torch.load(shipped, map_location="cpu", weights_only=False)
        mine = torch.load(installed, map_location="cpu", weights_only=False)
        same = mine.get("complete") and mine.get("panel_signature") == signature.get(
            "panel_signature"
        )
    return "mid" if same else "small"


def forma_submission() -> str:
    return f"forma-{forma_preset()}-gaussian"


@dataclass(frozen=True)
class Stage:
    title: str
    #: the command, or a function giving it when it depends on an earlier stage
    args: list[str] | Callable[[], list[str]]
    done: Callable[[Warehouse], bool]
    #: Forma's forecasts: the command's first half runs in this process, and its
    #: forecasting processes work beside the stages that follow (start_forma_forecasts)
    background: bool = False
    #: reads Forma's forecasts, so they are stored before it runs
    after_forecasts: bool = False

    def command(self) -> list[str]:
        return self.args() if callable(self.args) else self.args


def _rows(wh: Warehouse, sql: str, params: list | None = None) -> int:
    try:
        return int(wh.scalar(sql, params) or 0)
    except Exception:  # noqa: BLE001 - a table not there yet means "not done"
        return 0


def _latest_build(wh: Warehouse) -> int:
    return _rows(
        wh,
        "SELECT max(build_id) FROM meta.builds WHERE status = 'succeeded' "
        "AND raw_ingest_id = (SELECT max(ingest_id) FROM raw.ingests)",
    )


def _has_model(wh: Warehouse, name_like: str) -> bool:
    build = _latest_build(wh)
    return (
        build > 0
        and _rows(
            wh,
            "SELECT count(*) FROM eval.submissions WHERE name LIKE ? AND retired_at IS NULL "
            "AND rows > 0 AND created_at >= (SELECT finished_at FROM meta.builds WHERE build_id = ?)",
            [name_like, build],
        )
        > 0
    )


def _reconciled(wh: Warehouse, weights: str) -> bool:
    """A current reconciliation of the current Forma submission exists."""
    parent = _rows(
        wh,
        "SELECT max(submission_id) FROM eval.submissions WHERE name = ? AND retired_at IS NULL",
        [forma_submission()],
    )
    return (
        parent > 0
        and _rows(
            wh,
            "SELECT count(*) FROM eval.submissions WHERE retired_at IS NULL AND rows > 0 "
            "AND json_extract_string(metadata, '$.parent_id') = ? "
            "AND json_extract_string(metadata, '$.method') = ?",
            [str(parent), f"reconcile/{weights}"],
        )
        > 0
    )


#: Forma's forecasts in the demo: two processes of one thread keep both cores busy, and a
#: machine shared with other work slows them in proportion (bench/demo_stages.py --busy).
FORECAST_JOBS, FORECAST_THREADS = 2, 1


def forma_forecasts_command() -> list[str]:
    """`proforma predict forma` as the demo runs it (start_forma_forecasts and
    finish_forma_forecasts run its two halves)."""
    return [
        "predict",
        "forma",
        "--preset",
        forma_preset(),
        "--seeds",
        FORMA_SEEDS,
        "--no-score",
        "--jobs",
        str(FORECAST_JOBS),
        "--threads",
        str(FORECAST_THREADS),
    ]


def start_forma_forecasts(clock: StageClock, stage: Stage) -> Any:
    """The first half of the stage's `proforma predict forma`, in this process
    (flows.start_predict): the windows read and the warehouse closed again, the
    forecasting processes started. They work while the next stages run; the
    PendingForecast returned is finished by finish_forma_forecasts."""
    from proforma.app.flows import forma as flows

    console.print(
        f"[bold cyan]$ proforma {' '.join(stage.command())}[/] (started here; its "
        f"{FORECAST_JOBS} forecasting processes work beside the next stages)",
        highlight=False,
    )
    with clock.stage(f"{stage.title}: windows read, processes started"):
        return flows.start_predict(
            forma_preset(),
            [int(FORMA_SEEDS)],
            jobs=FORECAST_JOBS,
            threads=FORECAST_THREADS,
            progress=False,
            log=note,
        )


def finish_forma_forecasts(clock: StageClock, stage: Stage, pending: Any) -> None:
    """The second half: wait for the forecasting processes and store their forecasts
    (flows.finish_predict, unscored as `--no-score`); their CPU time is counted here,
    when they are waited for."""
    from proforma.app.flows import forma as flows

    with clock.stage(f"{stage.title}: processes waited for, forecasts stored"):
        rep = flows.finish_predict(pending, score=False)
    summary(
        f"Forma {forma_preset()} seeds {FORMA_SEEDS} forecast {rep.origins:,} test origins in "
        f"{rep.seconds:.0f}s -> submission {rep.submission_id} '{rep.name}'"
    )


def stages(firms: int | None, competitors: tuple[str, ...] = DEMO_COMPETITORS) -> list[Stage]:
    """The demo's stages in order. Forma's forecasts, the longest, start as soon as its
    checkpoint is there and work beside the reference baselines, the oracle and the
    competitors; the reconciliations wait for them."""
    ingest = ["ingest", "synthetic", "--scale", "demo"] + (["--firms", str(firms)] if firms else [])
    return [
        Stage(
            "synthetic panel",
            ingest,
            lambda wh: _rows(wh, "SELECT count(*) FROM raw.ingests WHERE source = 'synthetic'") > 0,
        ),
        Stage("benchmark build", ["build"], lambda wh: _latest_build(wh) > 0),
        Stage(
            "Forma: the shipped mid checkpoint, if trained on this panel",
            FORMA_SHIPPED,
            lambda wh: forma_preset() == "mid" or _has_model(wh, "forma-%"),
        ),
        Stage(
            "Forma training (small preset, short run)",
            FORMA_TRAIN,
            lambda wh: forma_preset() == "mid" or _has_model(wh, "forma-small%"),
        ),
        Stage(
            "Forma forecasts",
            forma_forecasts_command,
            lambda wh: _has_model(wh, f"forma-{forma_preset()}%"),
            background=True,
        ),
        Stage(
            "reference baselines",
            ["baselines", "reference"],
            lambda wh: _has_model(wh, "Fade%") and _has_model(wh, "Seasonal%"),
        ),
        Stage("oracle", ["oracle"], lambda wh: _has_model(wh, "oracle")),
        Stage(
            "competitors (demo preset)",
            [
                "run",
                "baselines",
                "--preset",
                "demo",
                "--no-score",
                "--jobs",
                "2",
                "--which",
                ",".join(competitors),
            ],
            lambda wh: all(_has_model(wh, f"{m} (demo)") for m in competitors),
        ),
        *(
            Stage(
                f"reconciliation ({w} weights)",
                functools.partial(lambda w: ["reconcile", forma_submission(), "--weights", w], w),
                functools.partial(_reconciled, weights=w),
                after_forecasts=True,
            )
            for w in ("variance", "equal")
        ),
    ]


def report_is_current(runs: dict[str, int]) -> bool:
    """The report folder was written from exactly these score runs."""
    import json

    manifest = get_settings().report_dir / "manifest.json"
    try:
        written = json.loads(manifest.read_text())["provenance"]["score_runs"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return {k: v.get("score_run_id") for k, v in written.items()} == runs


def _run(args: list[str], env: dict[str, str] | None = None) -> None:
    """One `proforma` command in a child process, its output passed straight through
    (`env`: its environment, by default this one's), with BLAS on one thread."""
    cmd = [sys.executable, "-m", "proforma.app.cli", *args]
    console.print(f"[bold cyan]$ proforma {' '.join(args)}[/]", highlight=False)
    rc = subprocess.call(cmd, env={**(os.environ if env is None else env), **CHILD_BLAS})
    if rc != 0:
        raise UserError(
            f"`proforma {' '.join(args)}` failed (exit {rc}); the demo stopped there. "
            f"Fix the cause and run `make demo` again: finished stages are kept."
        )


def current_score_run(wh: Warehouse, footprint: str) -> int | None:
    """The footprint's latest score run when nothing it depends on changed since: made on
    the footprint's latest version, the current build and scoring SQL, and after every
    submission was added or retired. A second `make demo` then serves at once."""
    from proforma.app.scoring.provenance import current_build_id, eval_sql_version

    if not wh.table_exists("eval.score_runs"):
        return None
    row = wh.fetchone(
        """
        SELECT r.score_run_id
        FROM eval.score_runs r
        WHERE r.footprint_id = (SELECT footprint_id FROM eval.footprints WHERE name = ?
                                ORDER BY version DESC LIMIT 1)
          AND r.build_id IS NOT DISTINCT FROM ? AND r.eval_sql_version = ?
          AND r.board IS NOT false
          AND r.finished_at >= (SELECT max(greatest(created_at, coalesce(retired_at, created_at)))
                                FROM eval.submissions)
        ORDER BY r.score_run_id DESC LIMIT 1
        """,
        [footprint, current_build_id(wh), eval_sql_version()],
    )
    return int(row[0]) if row else None


def score_footprints(wh: Warehouse) -> dict[str, int]:
    """Score every submission on the paper's footprints plus the oracle's origins (a
    footprint whose latest run is still current is not scored again)."""
    from proforma.app import scoring

    runs: dict[str, int] = {}

    def score_one(footprint: str) -> None:
        current = current_score_run(wh, footprint)
        if current is not None:
            runs[footprint] = current
            console.print(
                f"[dim]footprint {footprint}: score run {current} is current, kept[/]",
                highlight=False,
            )
            return
        started = time.perf_counter()
        console.print(
            f"[bold cyan]scoring every submission on footprint {footprint}[/]", highlight=False
        )
        runs[footprint] = scoring.score(wh, footprint)
        console.print(
            f"[dim]footprint {footprint}: score run {runs[footprint]}, "
            f"{time.perf_counter() - started:.0f}s[/]",
            highlight=False,
        )

    for footprint in SCORED_FOOTPRINTS:
        score_one(footprint)
    oracle = wh.scalar(
        "SELECT max(submission_id) FROM eval.submissions WHERE name = 'oracle' "
        "AND retired_at IS NULL"
    )
    if oracle is not None:
        existing = {f["name"]: f for f in scoring.list_footprints(wh).to_pylist()}
        if "oracle" not in existing or existing["oracle"].get("build_id") != _latest_build(wh):
            scoring.create_footprint(
                wh,
                "oracle",
                submissions=[int(oracle)],
                description="The cells of the synthetic oracle's origin sample",
            )
        score_one("oracle")
    return runs


@dataclass
class StageTime:
    title: str
    wall: float = 0.0
    cpu: float = 0.0
    #: seconds from the demo's start (stages overlap Forma's forecasting processes)
    start: float = 0.0


class StageClock:
    """Wall and CPU seconds of each stage the demo ran (its child processes' CPU and its
    own), for the closing table (docs/forma.md, "The demo's stages")."""

    def __init__(self, origin: float | None = None) -> None:
        self.rows: list[StageTime] = []
        self.origin = time.perf_counter() if origin is None else origin

    @staticmethod
    def _cpu() -> float:
        return sum(
            u.ru_utime + u.ru_stime
            for u in (
                resource.getrusage(resource.RUSAGE_CHILDREN),
                resource.getrusage(resource.RUSAGE_SELF),
            )
        )

    @contextlib.contextmanager
    def stage(self, title: str) -> Iterator[StageTime]:
        started, cpu = time.perf_counter(), self._cpu()
        row = StageTime(title, start=started - self.origin)
        try:
            yield row
        finally:
            row.wall, row.cpu = time.perf_counter() - started, self._cpu() - cpu
            self.rows.append(row)

    def write_json(self, path: Path, total: float) -> None:
        """The table as JSON (bench/demo_stages.py reads it)."""
        import json

        rows = [
            {
                "stage": r.title,
                "start_s": round(r.start, 1),
                "wall_s": round(r.wall, 1),
                "cpu_s": round(r.cpu, 1),
            }
            for r in self.rows
        ]
        path.write_text(json.dumps({"stages": rows, "total_wall_s": round(total, 1)}, indent=2))

    def print_table(self, total: float) -> None:
        from rich.table import Table

        table = Table("stage", "start s", "wall s", "CPU s", title="demo stages (this run)")
        for row in self.rows:
            table.add_row(row.title, f"{row.start:.0f}", f"{row.wall:.0f}", f"{row.cpu:.0f}")
        table.add_row("total", "", f"{total:.0f}", f"{sum(r.cpu for r in self.rows):.0f}")
        console.print(table)


def _run_stage(clock: StageClock, stage: Stage) -> None:
    with clock.stage(stage.title) as row:
        _run(stage.command())
    # ru_maxrss of children is the largest child so far (KiB on Linux), not this stage's.
    console.print(
        f"[dim]{stage.title}: {row.wall:.0f}s, {row.cpu:.0f} CPU-s, "
        f"peak RSS so far {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20:.1f} GiB[/]",
        highlight=False,
    )


def _beside_forecasts(clock: StageClock, firms: int | None, competitors: tuple[str, ...]) -> None:
    """What needs no Forma forecasts and fills the cores while they are made: the round
    opened, entered and closed with the next vintage built, the cell scores and identity
    checks of every submission so far (scoring.score_ahead), and the oracle experiment
    of the report's Figure 2 (kept in the cache folder, where the report finds it)."""
    from proforma.app import scoring

    with clock.stage("prospective round: opened, entered, closed; next vintage built"):
        rounds.demo_round(_run, firms, forma_preset(), competitors, resolve=False)
    # (the full footprint only: the coverage of the others costs more here than it saves
    # their runs, which are aggregation)
    with clock.stage("scoring ahead (cell scores, identity checks)"), connect() as wh:
        scoring.score_ahead(wh, "full")
    oracle = ["forma", "oracle-experiment", "--preset", forma_preset(), "--seeds", FORMA_SEEDS]
    with clock.stage("Figure 2's oracle experiment, kept for the report"):
        _run([*oracle, "--origins", str(REPORT_ORACLE_ORIGINS), "--device", "cpu"])


def run_stages(
    clock: StageClock, plan: list[Stage], firms: int | None, competitors: tuple[str, ...]
) -> None:
    """The stages in order, a stage already done skipped. A background stage (Forma's
    forecasts) starts its processes and the next stages run beside them; before the first
    stage that reads its forecasts (or at the end) the work that needs none is done too
    (_beside_forecasts), then the forecasts are waited for and stored. With the forecasts
    there already, nothing runs beside."""
    #: the background stage whose processes work, and its PendingForecast
    working: tuple[Stage, Any] | None = None

    def catch_up() -> None:
        # only while the processes work: otherwise the round comes whole at the end and
        # the runs make their own cell scores, so a second `make demo` serves at once
        nonlocal working
        if working is not None:
            _beside_forecasts(clock, firms, competitors)
            finish_forma_forecasts(clock, *working)
            working = None

    try:
        for stage in plan:
            if stage.after_forecasts:
                catch_up()
            with connect() as wh:
                done = stage.done(wh)
            if done:
                console.print(f"[dim]{stage.title}: already done, skipped[/]")
            elif stage.background:
                working = (stage, start_forma_forecasts(clock, stage))
            else:
                _run_stage(clock, stage)
        catch_up()
    finally:
        if working is not None:  # a stage failed: the forecasting processes stop with it
            working[1].close()


def demo_command(
    host: str = typer.Option("127.0.0.1", help="Address to serve on."),
    port: int = typer.Option(8000, help="Port to serve on."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete the warehouse and models first."),
    firms: int = typer.Option(None, help="Synthetic firms (default: the demo scale's 1,000)."),
    serve: bool = typer.Option(
        True, "--serve/--no-serve", help="Serve the leaderboard at the end."
    ),
    competitors: str = typer.Option(
        ",".join(DEMO_COMPETITORS),
        "--competitors",
        help=f"Comma-separated competitors to fit, or 'all' ({','.join(suite.names())}).",
    ),
) -> None:
    """Ingest the synthetic panel, build the benchmark, run the reference baselines, the
    oracle, the competitors and Forma (the shipped `mid` checkpoint on the default panel, a
    short `small` run otherwise), score them, and serve the site."""
    settings = get_settings()
    if fresh:
        for path in (
            settings.warehouse,
            settings.warehouse.with_name(settings.warehouse.name + ".wal"),
        ):
            path.unlink(missing_ok=True)
        shutil.rmtree(settings.models_dir, ignore_errors=True)
        rounds.forget_demo_round()
    chosen = (
        suite.names()
        if competitors == "all"
        else tuple(c.strip() for c in competitors.split(",") if c.strip())
    )
    unknown = sorted(set(chosen) - set(suite.names()))
    if unknown:
        raise UserError(
            f"Unknown competitor(s) {', '.join(unknown)}; choose from "
            f"{', '.join(suite.names())} or 'all'"
        )
    t0 = time.perf_counter()
    clock = StageClock(t0)
    with clock.stage("set-up (migrate)"):
        _run(["migrate"])
    # the learned competitors the demo fit enter its round (those scored on the full
    # footprint: a model of a few items would shrink the round's common sample)
    full = tuple(c for c in chosen if "full" in suite.get(c).footprints)
    # this process's own work (scoring, the bootstrap) shares the cores as its children's
    with one_blas_thread():
        run_stages(clock, stages(firms, chosen), firms, full)
        with clock.stage("scoring the footprints"), connect() as wh:
            from proforma.app import scoring

            runs = score_footprints(wh)
            board = scoring.leaderboard(wh, "full").to_pylist()
    console.print("[bold]full footprint[/] (R² of changes, standardized space)")
    for r in board:
        console.print(
            f"  {r['model']:<28} R² {r['r2']:+.3f}   MAE {r['mae']:.3f}   n {r['n']:,}",
            highlight=False,
        )
    if report_is_current(runs):
        console.print("[dim]report: written from these score runs already, kept[/]")
    else:
        with clock.stage("report"):
            _run(["report", "--oracle-origins", str(REPORT_ORACLE_ORIGINS)])
    # the prospective round, opened and closed beside Forma's forecasts, resolved by the
    # next vintage
    with clock.stage("prospective round: resolved"):
        rounds.demo_round(_run, firms, forma_preset(), full)
    clock.print_table(time.perf_counter() - t0)
    clock.write_json(settings.warehouse.with_name("demo_stages.json"), time.perf_counter() - t0)
    summary(
        f"demo ready in {time.perf_counter() - t0:.0f}s: score runs "
        + ", ".join(f"{k} {v}" for k, v in runs.items())
        + f"; report in {get_settings().report_dir} (/report when served)"
    )
    if serve:
        from proforma.app.cli.serve import run_server

        run_server(host=host, port=port)
