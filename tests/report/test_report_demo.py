"""`make demo` reconciles Forma both ways and ends with the report."""

from __future__ import annotations

import json

from proforma.app.cli.demo import forma_submission, report_is_current, stages


def test_demo_reconciles_forma_both_ways_after_its_forecasts(wh) -> None:
    plan = stages(None)
    titles = [s.title for s in plan]
    assert titles.index("Forma forecasts") < titles.index("reconciliation (variance weights)")
    assert titles[-2:] == ["reconciliation (variance weights)", "reconciliation (equal weights)"]
    assert plan[-1].after_forecasts and plan[-2].after_forecasts
    assert plan[-2].command() == ["reconcile", forma_submission(), "--weights", "variance"]
    assert plan[-1].command() == ["reconcile", forma_submission(), "--weights", "equal"]
    assert not plan[-1].done(wh)  # nothing reconciled on an empty warehouse


def test_the_report_is_rewritten_only_when_the_score_runs_changed(
    settings, tmp_path, monkeypatch
) -> None:
    from proforma.app.store.settings import get_settings

    monkeypatch.setenv("PROFORMA_REPORT_DIR", str(tmp_path / "report"))
    get_settings.cache_clear()
    settings = get_settings()
    runs = {"full": 5, "geert": 6}
    assert not report_is_current(runs)  # no report yet
    settings.report_dir.mkdir(parents=True)
    manifest = {
        "provenance": {"score_runs": {"full": {"score_run_id": 5}, "geert": {"score_run_id": 6}}}
    }
    (settings.report_dir / "manifest.json").write_text(json.dumps(manifest))
    assert report_is_current(runs)
    assert not report_is_current({"full": 7, "geert": 6})
