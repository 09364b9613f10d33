"""`proforma demo`: argument checks and the skip logic of its stages."""

from __future__ import annotations

import os

from typer.testing import CliRunner

from proforma.app.cli import app, demo
from proforma.app.cli.demo import DEMO_COMPETITORS, stages
from proforma.contracts.errors import UserError
from proforma.models.baselines.suite import names


def test_unknown_competitor_is_one_clear_error(settings) -> None:
    result = CliRunner().invoke(app, ["demo", "--no-serve", "--competitors", "enet,xgboost"])
    assert isinstance(result.exception, UserError)
    assert "xgboost" in str(result.exception) and "all" in str(result.exception)
    assert not settings.warehouse.exists()  # rejected before anything ran


def test_stages_on_an_empty_warehouse_are_all_pending(wh) -> None:
    plan = stages(None)
    assert [s.title for s in plan][:8] == [
        "synthetic panel",
        "benchmark build",
        "Forma: the shipped mid checkpoint, if trained on this panel",
        "Forma training (small preset, short run)",
        "Forma forecasts",
        "reference baselines",
        "oracle",
        "competitors (demo preset)",
    ]
    assert [s.title for s in plan if s.background] == ["Forma forecasts"]
    assert all(s.after_forecasts for s in plan[8:]) and not any(s.after_forecasts for s in plan[:8])
    assert not any(stage.done(wh) for stage in plan)
    fit = next(s for s in plan if s.title.startswith("competitors"))
    args = fit.command()
    assert args[args.index("--which") + 1] == ",".join(DEMO_COMPETITORS)


def test_stages_take_the_chosen_competitors(wh) -> None:
    fit = next(s for s in stages(500, names()) if s.title.startswith("competitors"))
    args = fit.command()
    assert args[args.index("--which") + 1] == ",".join(names())
    assert stages(500)[0].command()[-2:] == ["--firms", "500"]


def test_ingest_stage_done_once_a_synthetic_ingest_is_recorded(wh) -> None:
    wh.execute(
        "INSERT INTO raw.ingests (source, parameters, vintage, rows_fundq, rows_company_industry, "
        "rows_ccm_link, checksum, started_at, finished_at) VALUES ('synthetic', '{}', '', 0, 0, 0, "
        "'x', now()::TIMESTAMP, now()::TIMESTAMP)"
    )
    assert stages(None)[0].done(wh)
    assert not stages(None)[1].done(wh)  # no build yet


def test_a_score_run_stays_current_until_a_submission_or_the_footprint_changes(wh) -> None:
    from proforma.app.cli.demo import current_score_run
    from proforma.app.scoring.provenance import eval_sql_version

    def submission(sid: int, at: str) -> None:
        wh.execute(
            "INSERT INTO eval.submissions (submission_id, name, source, family, has_sigma, "
            "n_components, rows, cells, checksum, created_at) VALUES "
            "(?, ?, 'model', 'gaussian', false, 1, 1, 1, 'x', ?::TIMESTAMP)",
            [sid, f"m{sid}", at],
        )

    def footprint(fid: int, version: int) -> None:
        wh.execute(
            "INSERT INTO eval.footprints (footprint_id, name, version, kind, created_at) "
            "VALUES (?, 'full', ?, 'predicate', now()::TIMESTAMP)",
            [fid, version],
        )

    def run(rid: int, fid: int, at: str, version: str | None = None) -> None:
        wh.execute(
            "INSERT INTO eval.score_runs (score_run_id, footprint_id, footprint_name, "
            "footprint_version, submission_ids, footprint_cells, n_cells, build_id, build, "
            "eval_sql_version, submission_checksums, started_at, finished_at, elapsed_s) "
            "VALUES (?, ?, 'full', 1, [1], 1, 1, NULL, '{}', ?, "
            "'{}', ?::TIMESTAMP, ?::TIMESTAMP, 1.0)",
            [rid, fid, version or eval_sql_version(), at, at],
        )

    assert current_score_run(wh, "full") is None  # nothing scored yet
    footprint(1, 1)
    submission(1, "2026-01-01 10:00")
    run(1, 1, "2026-01-01 11:00")
    assert current_score_run(wh, "full") == 1
    submission(2, "2026-01-01 12:00")  # a new submission: the run is out of date
    assert current_score_run(wh, "full") is None
    run(2, 1, "2026-01-01 13:00", version="older scoring SQL")
    assert current_score_run(wh, "full") is None  # scored with other SQL
    run(3, 1, "2026-01-01 13:00")
    assert current_score_run(wh, "full") == 3
    wh.execute(
        "UPDATE eval.submissions SET retired_at = '2026-01-01 14:00' WHERE submission_id = 1"
    )
    assert current_score_run(wh, "full") is None  # a retirement changes the set too
    run(4, 1, "2026-01-01 15:00")
    footprint(2, 2)  # a new version of the footprint
    assert current_score_run(wh, "full") is None


def test_forma_stages_take_the_shipped_mid_checkpoint_only_when_installed(
    wh, monkeypatch, tmp_path
) -> None:
    """The demo forecasts with `mid` when the shipped checkpoint (or a complete one trained
    on the same panel) is in the models folder, and with the short `small` run otherwise."""
    import shutil

    import torch

    from proforma.app.cli.demo import forma_preset
    from proforma.app.flows import forma as flows
    from proforma.app.store.settings import get_settings

    monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setattr(flows, "SHIPPED_DIR", tmp_path / "shipped")
    get_settings.cache_clear()
    plan = {s.title: s for s in stages(None)}
    forecasts, short_run = plan["Forma forecasts"], plan["Forma training (small preset, short run)"]
    reconcile = plan["reconciliation (variance weights)"]
    assert forma_preset() == "small"
    assert forecasts.command()[forecasts.command().index("--preset") + 1] == "small"

    shipped = flows.shipped_path("mid", "gaussian", 60)
    shipped.parent.mkdir(parents=True)
    torch.save({"panel_signature": "a" * 16, "complete": True}, shipped)
    assert forma_preset() == "small"  # shipped but not installed: another panel
    assert not short_run.done(wh)

    installed = flows.checkpoint_path("mid", "gaussian", 60)
    installed.parent.mkdir(parents=True)
    shutil.copyfile(shipped, installed)
    assert forma_preset() == "mid"
    assert forecasts.command()[forecasts.command().index("--preset") + 1] == "mid"
    assert short_run.done(wh)  # no short run of small
    assert reconcile.command()[1] == "forma-mid-gaussian"

    torch.save({"panel_signature": "b" * 16, "complete": True}, installed)
    assert forma_preset() == "small"  # a mid trained here on another panel is not it
    torch.save({"panel_signature": "a" * 16, "complete": True}, installed)
    assert forma_preset() == "mid"  # ... one trained on the shipped one's panel is


def test_the_stage_clock_counts_children_and_failed_stages(capsys) -> None:
    import subprocess
    import sys

    import pytest

    from proforma.app.cli.demo import StageClock

    clock = StageClock()
    with clock.stage("a child that computes"):
        subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    with pytest.raises(RuntimeError), clock.stage("a stage that fails"):
        raise RuntimeError("stopped")
    busy, failed = clock.rows
    assert busy.title == "a child that computes" and busy.cpu > 0.05 and busy.wall >= busy.cpu * 0.5
    assert failed.title == "a stage that fails" and failed.wall >= 0
    clock.print_table(busy.wall + failed.wall)
    out = capsys.readouterr().out
    assert "a child that computes" in out and "total" in out


def test_the_stages_run_beside_formas_forecasts_and_wait_for_them(wh, monkeypatch) -> None:
    """Forma's forecasts start, the stages after run while they work, the round and the
    scores ahead come before the wait, and the reconciliations after it; a stage that fails
    stops the forecasting processes."""
    import pytest

    from proforma.app.cli import demo

    wh.close()
    events: list[str] = []

    class Pending:
        def close(self) -> None:
            events.append("processes stopped")

    monkeypatch.setattr(demo, "_run_stage", lambda clock, stage: events.append(stage.title))

    def start(clock, stage) -> Pending:
        events.append("start")
        return Pending()

    monkeypatch.setattr(demo, "start_forma_forecasts", start)
    monkeypatch.setattr(
        demo, "finish_forma_forecasts", lambda clock, stage, pending: events.append("wait")
    )
    monkeypatch.setattr(
        demo, "_beside_forecasts", lambda clock, firms, competitors: events.append("beside")
    )
    plan = stages(None)
    demo.run_stages(demo.StageClock(), plan, None, ())
    titles = [s.title for s in plan]
    assert events == [
        *titles[:4],
        "start",
        *titles[5:8],
        "beside",
        "wait",
        *titles[8:],
    ]

    events.clear()  # Forma's forecasts there already: nothing runs beside, nothing waits
    no_forma = [s for s in plan if not s.background]
    demo.run_stages(demo.StageClock(), no_forma, None, ())
    assert events == [s.title for s in no_forma]

    events.clear()

    def fail(clock, stage):
        raise RuntimeError(f"{stage.title} failed")

    monkeypatch.setattr(demo, "_run_stage", fail)
    later = [s for s in plan if s.title in ("Forma forecasts", "oracle")]
    with pytest.raises(RuntimeError, match="oracle failed"):
        demo.run_stages(demo.StageClock(), later, None, ())
    assert events == ["start", "processes stopped"]


def test_the_demos_commands_run_blas_on_one_thread(monkeypatch) -> None:
    """Two jobs share the cores throughout the demo: each child's BLAS gets one thread,
    whatever environment it is given (the next vintage's build gets its own)."""
    seen: list[dict[str, str]] = []

    def call(cmd: list[str], env: dict[str, str]) -> int:
        seen.append(env)
        return 0

    monkeypatch.setattr(demo.subprocess, "call", call)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    demo._run(["migrate"])
    demo._run(["build"], env={"PROFORMA_WAREHOUSE": "/elsewhere.duckdb"})
    assert [e["OPENBLAS_NUM_THREADS"] for e in seen] == ["1", "1"]
    assert seen[0]["PATH"] == os.environ["PATH"]
    assert seen[1]["PROFORMA_WAREHOUSE"] == "/elsewhere.duckdb"
