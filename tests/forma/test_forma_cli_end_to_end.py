"""`proforma train forma` and `proforma predict forma` on a tiny synthetic panel."""

from __future__ import annotations

import subprocess
import sys
import threading

from tiny_synthetic import build_tiny_synthetic
from typer.testing import CliRunner

import proforma.models.forma.predict as forma_predict
from proforma.app.cli import app as cli_app


def test_train_then_predict_spools_forecasts_from_the_main_thread(
    wh, settings, monkeypatch, tmp_path
) -> None:
    # the shared `settings` fixture leaves models_dir at data/models: keep checkpoints in tmp
    from proforma.app.store.settings import get_settings

    monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / "models"))
    get_settings.cache_clear()
    settings = get_settings()
    build_tiny_synthetic(wh, firms=12, start=1996, end=2012, seed=3)
    test_origins = wh.scalar("SELECT count(*) FROM panel.origins WHERE split = 'test'")
    wh.close()
    runner = CliRunner()
    res = runner.invoke(
        cli_app,
        [
            "train",
            "forma",
            "--preset",
            "small",
            "--seeds",
            "60",
            "--epochs",
            "2",
            "--origins-per-epoch",
            "8",
            "--threads",
            "1",
            "--keep-epochs",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    run = settings.models_dir / "forma" / "small-gaussian"
    assert (run / "seed60.pt").exists()
    # --keep-epochs: the copy after epoch 1 stays, and holds that epoch, not the last
    import torch

    assert sorted(p.name for p in run.glob("seed60.epoch*.pt")) == ["seed60.epoch1.pt"]
    assert torch.load(run / "seed60.epoch1.pt", weights_only=False)["epoch"] == 1

    threads: set[str] = set()
    real = forma_predict.run_slots

    def spy(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(forma_predict, "run_slots", spy)
    res = runner.invoke(
        cli_app,
        ["predict", "forma", "--preset", "small", "--seeds", "60", "--no-score", "--threads", "1"],
    )
    assert res.exit_code == 0, res.output
    # PyTorch ran in the main thread, never inside DuckDB's scan threads
    assert threads == {threading.main_thread().name}
    assert not list(settings.temp_directory.glob("forecasts-*.arrows"))  # the spool file is gone
    from proforma.app.store.warehouse import connect

    with connect(read_only=True) as con:
        sub = con.fetchone(
            "SELECT submission_id, n_components FROM eval.submissions "
            "WHERE name = 'forma-small-gaussian'"
        )
        assert sub is not None and sub[1] == 1
        n, origins, hmax = con.one(
            "SELECT count(*), count(DISTINCT (firm_id, origin_q)), max(horizon) FROM eval.forecasts "
            "WHERE submission_id = ?",
            [sub[0]],
        )
    assert origins == test_origins > 0 and 1 <= hmax <= 20 and n > origins


def test_shipped_checkpoint_is_used_only_on_its_own_panel(
    wh, settings, monkeypatch, tmp_path
) -> None:
    import torch

    from proforma.app.flows import forma as flows
    from proforma.app.store.settings import get_settings

    monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setattr(flows, "SHIPPED_DIR", tmp_path / "shipped")
    get_settings.cache_clear()
    build_tiny_synthetic(wh, firms=10, start=1998, end=2012, seed=4)
    wh.close()
    runner = CliRunner()
    train = [
        "train",
        "forma",
        "--preset",
        "small",
        "--seeds",
        "61",
        "--epochs",
        "1",
        "--origins-per-epoch",
        "8",
        "--threads",
        "1",
    ]
    res = runner.invoke(cli_app, [*train, "--ship"])
    assert res.exit_code == 0, res.output
    shipped = tmp_path / "shipped" / "small-gaussian-seed61.pt"
    ck = torch.load(shipped, weights_only=False)
    assert "optimizer" not in ck and ck["complete"] and len(ck["panel_signature"]) == 16
    local = tmp_path / "models" / "forma" / "small-gaussian" / "seed61.pt"
    trained_at = torch.load(local, weights_only=False)["saved_at"]

    local.unlink()  # a fresh clone: the same panel, no local checkpoint
    res = runner.invoke(cli_app, [*train, "--use-shipped"])
    assert res.exit_code == 0, res.output
    assert "matches this panel" in res.output and "from the shipped checkpoint" in res.output
    assert local.read_bytes() == shipped.read_bytes()  # installed, not trained

    local.unlink()  # --shipped-only installs it the same way
    res = runner.invoke(cli_app, [*train, "--shipped-only"])
    assert res.exit_code == 0, res.output
    assert local.read_bytes() == shipped.read_bytes()

    local.unlink()  # another panel: the shipped weights are not used, training runs
    ck["panel_signature"] = "0" * 16
    torch.save(ck, shipped)
    res = runner.invoke(cli_app, [*train, "--shipped-only"])  # ... but not with --shipped-only
    assert res.exit_code == 0, res.output
    assert "not used" in res.output and "not trained (--shipped-only)" in res.output
    assert not local.exists()
    res = runner.invoke(cli_app, [*train, "--use-shipped"])
    assert res.exit_code == 0, res.output
    assert "not used" in res.output and "trained 61" in res.output
    assert torch.load(local, weights_only=False)["saved_at"] >= trained_at
    assert local.read_bytes() != shipped.read_bytes()

    # --resume never continues (or keeps) weights trained on another panel
    other = torch.load(local, weights_only=False)
    other["panel_signature"] = "f" * 16
    torch.save(other, local)
    res = runner.invoke(cli_app, [*train, "--resume"])
    assert res.exit_code == 0, res.output
    assert "training afresh" in res.output
    assert torch.load(local, weights_only=False)["panel_signature"] == printed_signature(res.output)

    # nor weights of another configuration (a models folder from before a preset changed):
    # it trains afresh instead of failing
    changed = torch.load(local, weights_only=False)
    changed["config"] = {**changed["config"], "d_model": changed["config"]["d_model"] * 2}
    torch.save(changed, local)
    res = runner.invoke(cli_app, [*train, "--resume"])
    assert res.exit_code == 0, res.output
    assert "another configuration of preset small" in res.output and "training afresh" in res.output
    assert torch.load(local, weights_only=False)["config"] != changed["config"]
    kept = list(local.parent.glob("seed61.other-config-*.pt"))
    assert len(kept) == 1 and torch.load(kept[0], weights_only=False)["config"] == changed["config"]


def printed_signature(output: str) -> str:
    """The panel signature the train command printed (`panel 0123abcd...`)."""
    import re

    return re.findall(r"origins \(panel ([0-9a-f]{16})\)", output)[-1]


def test_seeds_trained_side_by_side_equal_seeds_trained_in_turn(
    wh, settings, monkeypatch, tmp_path
) -> None:
    import torch

    from proforma.app.store.settings import get_settings

    build_tiny_synthetic(wh, firms=10, start=1998, end=2012, seed=4)
    wh.close()
    runner = CliRunner()
    weights = {}
    for label, extra in (("turns", ["--jobs", "1"]), ("side", ["--jobs", "2"])):
        monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / label))
        get_settings.cache_clear()
        res = runner.invoke(
            cli_app,
            [
                "train",
                "forma",
                "--preset",
                "small",
                "--seeds",
                "62,63",
                "--epochs",
                "2",
                "--origins-per-epoch",
                "8",
                "--threads",
                "1",
                *extra,
            ],
        )
        assert res.exit_code == 0, res.output
        weights[label] = [
            torch.load(
                tmp_path / label / "forma" / "small-gaussian" / f"seed{s}.pt", weights_only=False
            )["state_dict"]
            for s in (62, 63)
        ]
    for a, b in zip(weights["turns"], weights["side"]):
        assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(
        weights["side"][0]["mu_head.2.bias"], weights["side"][1]["mu_head.2.bias"]
    )


def test_the_warehouse_is_free_while_the_forecast_processes_work(
    wh, settings, monkeypatch, tmp_path
) -> None:
    """start_predict reads what it needs and closes the warehouse: another writer (the
    demo's next stage) uses it while the processes forecast, and finish_predict stores
    the same forecasts as one pass in this process."""
    from proforma.app.flows import forma as flows
    from proforma.app.store.settings import get_settings
    from proforma.app.store.warehouse import connect

    monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / "models"))
    get_settings.cache_clear()
    build_tiny_synthetic(wh, firms=8, start=2000, end=2012, seed=5)
    wh.close()
    train = ["train", "forma", "--preset", "small", "--seeds", "62", "--epochs", "1"]
    res = CliRunner().invoke(cli_app, [*train, "--origins-per-epoch", "8", "--threads", "1"])
    assert res.exit_code == 0, res.output

    pending = flows.start_predict(
        "small", [62], name="in processes", jobs=2, threads=1, progress=False
    )
    assert pending.processes is not None and pending.store is None
    # another process writes while the forecasts are made (DuckDB locks the file against
    # other processes, not against this one's connections)
    write = "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('CREATE TABLE meanwhile AS SELECT 1 AS x')"
    subprocess.run([sys.executable, "-c", write, str(settings.warehouse)], check=True)
    beside = flows.finish_predict(pending, score=False)
    alone = flows.predict("small", [62], name="in this process", score=False, progress=False)
    assert pending.spool is None and beside.origins == alone.origins > 0

    with connect(read_only=True) as con:
        assert con.scalar("SELECT x FROM main.meanwhile") == 1
        pair = con.arrow(
            "SELECT a.mu AS a_mu, b.mu AS b_mu, a.sigma AS a_sigma, b.sigma AS b_sigma "
            "FROM eval.forecasts a JOIN eval.forecasts b USING (firm_id, origin_q, item_id, "
            "horizon, component) WHERE a.submission_id = ? AND b.submission_id = ?",
            [beside.submission_id, alone.submission_id],
        )
        rows = con.scalar(
            "SELECT count(*) FROM eval.forecasts WHERE submission_id = ?", [alone.submission_id]
        )
    assert pair.num_rows == rows > 0
    for col in ("mu", "sigma"):
        a, b = pair[f"a_{col}"].to_numpy(), pair[f"b_{col}"].to_numpy()
        assert abs(a - b).max() < 1e-5, col  # float32 rounding: other batches, other padding
