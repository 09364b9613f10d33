"""`proforma demo`: argument checks and the skip logic of its stages."""

from __future__ import annotations

from typer.testing import CliRunner

from app.cli import app
from app.cli.demo import ALL_COMPETITORS, DEMO_COMPETITORS, stages
from app.errors import UserError


def test_unknown_competitor_is_one_clear_error(settings) -> None:
    result = CliRunner().invoke(app, ["demo", "--no-serve", "--competitors", "enet,xgboost"])
    assert isinstance(result.exception, UserError)
    assert "xgboost" in str(result.exception) and "all" in str(result.exception)
    assert not settings.warehouse.exists()  # rejected before anything ran


def test_stages_on_an_empty_warehouse_are_all_pending(wh) -> None:
    plan = stages(None)
    assert [s.title for s in plan][:4] == [
        "synthetic panel", "benchmark build", "reference baselines", "oracle"]
    assert not any(stage.done(wh) for stage in plan)
    fit = next(s for s in plan if s.title.startswith("competitors"))
    assert fit.args[fit.args.index("--which") + 1] == ",".join(DEMO_COMPETITORS)


def test_stages_take_the_chosen_competitors(wh) -> None:
    fit = next(s for s in stages(500, ALL_COMPETITORS) if s.title.startswith("competitors"))
    assert fit.args[fit.args.index("--which") + 1] == ",".join(ALL_COMPETITORS)
    ingest = stages(500)[0]
    assert ingest.args[-2:] == ["--firms", "500"]


def test_ingest_stage_done_once_a_synthetic_ingest_is_recorded(wh) -> None:
    wh.execute(
        "INSERT INTO raw.ingests (source, parameters, vintage, rows_fundq, rows_company_industry, "
        "rows_ccm_link, checksum, started_at, finished_at) VALUES ('synthetic', '{}', '', 0, 0, 0, "
        "'x', now()::TIMESTAMP, now()::TIMESTAMP)")
    assert stages(None)[0].done(wh)
    assert not stages(None)[1].done(wh)  # no build yet
