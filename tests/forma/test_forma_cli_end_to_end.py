"""`proforma train forma` and `proforma predict forma` on a tiny synthetic panel."""

from __future__ import annotations

import threading

from typer.testing import CliRunner

import models.forma.predict as forma_predict
from app.build import run_build
from app.cli import app as cli_app
from app.sources import ingest
from app.sources.synthetic import SyntheticConfig, SyntheticSource


def test_train_then_predict_spools_forecasts_from_the_main_thread(wh, settings, monkeypatch,
                                                                 tmp_path) -> None:
    # the shared `settings` fixture leaves models_dir at data/models: keep checkpoints in tmp
    from app.settings import get_settings

    monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / "models"))
    get_settings.cache_clear()
    settings = get_settings()
    cfg = SyntheticConfig.for_scale("demo", firms=12, start=1996, end=2012, seed=3, oracle_origins=2,
                                    oracle_paths=2, oracle_horizon=4)
    ingest(wh, SyntheticSource(cfg))
    run_build(wh)
    test_origins = wh.scalar("SELECT count(*) FROM panel.origins WHERE split = 'test'")
    wh.close()
    runner = CliRunner()
    res = runner.invoke(cli_app, ["train", "forma", "--preset", "small", "--seeds", "60",
                                  "--epochs", "1", "--origins-per-epoch", "8", "--threads", "1"])
    assert res.exit_code == 0, res.output
    assert (settings.models_dir / "forma" / "small-gaussian" / "seed60.pt").exists()

    threads: set[str] = set()
    real = forma_predict.run_slots

    def spy(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(forma_predict, "run_slots", spy)
    res = runner.invoke(cli_app, ["predict", "forma", "--preset", "small", "--seeds", "60",
                                  "--no-score", "--threads", "1"])
    assert res.exit_code == 0, res.output
    # PyTorch ran in the main thread, never inside DuckDB's scan threads
    assert threads == {threading.main_thread().name}
    assert not list(settings.temp_directory.glob("forecasts-*.arrows"))  # the spool file is gone
    from app.warehouse import connect

    with connect(read_only=True) as con:
        sub = con.fetchone("SELECT submission_id, n_components FROM eval.submissions "
                           "WHERE name = 'forma-small-gaussian'")
        assert sub is not None and sub[1] == 1
        n, origins, hmax = con.fetchone(
            "SELECT count(*), count(DISTINCT (firm_id, origin_q)), max(horizon) FROM eval.forecasts "
            "WHERE submission_id = ?", [sub[0]])
    assert origins == test_origins > 0 and 1 <= hmax <= 20 and n > origins
