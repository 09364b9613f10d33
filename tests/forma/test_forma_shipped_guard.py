"""The shipped Forma checkpoints match the default panel a fresh clone builds (issue 48: a
change to the panel retired the shipped `mid` silently, and the demo fell back to a weaker
model without any test noticing). When this fails, the message says which command remakes
them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.flows import forma as flows


@pytest.fixture(scope="module")
def default_panel(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config):
    """The training windows of the default panel, made by the fresh clone's commands."""
    folder = tmp_path_factory.mktemp("default-panel")
    patch = pytest.MonkeyPatch()
    for key, value in {
        "PROFORMA_WAREHOUSE": folder / "warehouse.duckdb",
        "PROFORMA_TEMP_DIRECTORY": folder / "tmp",
        "PROFORMA_CACHE_DIR": folder / "cache",
        "PROFORMA_MODELS_DIR": folder / "models",
        "PROFORMA_THREADS": 2,
    }.items():
        patch.setenv(key, str(value))
    flows.get_settings.cache_clear()
    try:
        runner = CliRunner()
        for args in (["ingest", "synthetic", "--scale", "demo"], ["build"]):
            res = runner.invoke(app, args)
            assert res.exit_code == 0, res.output
        with flows.read_only() as wh:
            store = flows.load_store(wh, ["train", "val"], future=True)
            # the validation windows each shipped checkpoint held out (its calibration's)
            held = {
                p.name: flows.held_out_windows(
                    wh, flows._load_checkpoint_meta(p)["calibration_holdout"]
                )
                for p in sorted(flows.SHIPPED_DIR.glob("*.pt"))
            }
        yield store, held
    finally:
        patch.undo()
        flows.get_settings.cache_clear()


def test_the_shipped_checkpoints_match_the_default_panel(default_panel):
    default_panel, _ = default_panel
    problems = flows.shipped_checkpoint_problems(flows.panel_signature(default_panel))
    assert not problems, (
        "The shipped Forma checkpoints no longer fit a fresh clone's demo: "
        + "; ".join(problems)
        + f". Remake them on the default panel ({flows.DEFAULT_PANEL_COMMANDS}), then "
        f"`{flows.RETRAIN_SHIPPED}`, and commit models/forma/checkpoints/."
    )


def test_the_training_record_describes_the_shipped_files(default_panel):
    import hashlib
    import json

    default_panel, _ = default_panel
    record = json.loads((flows.SHIPPED_DIR / flows.TRAINING_RECORD).read_text())
    shipped = {p.name for p in flows.SHIPPED_DIR.glob("*.pt")}
    assert {s["file"] for s in record["seeds"].values()} == shipped
    signature = flows.panel_signature(default_panel)
    for seed in record["seeds"].values():
        path = flows.SHIPPED_DIR / seed["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == seed["sha256"], seed["file"]
        assert seed["panel_signature"] == signature
        assert seed["numerics"]["float32_matmul_in"] == "float32"  # the CPU presets' choice
    assert record["command"].startswith("proforma train forma") and record["wall_seconds"] > 0


def test_the_guard_fails_on_a_changed_panel(default_panel):
    default_panel, _ = default_panel
    changed = default_panel.take(list(range(1, len(default_panel))))  # one origin fewer
    problems = flows.shipped_checkpoint_problems(flows.panel_signature(changed))
    assert problems and all("was trained on panel" in p for p in problems)
    x = default_panel.x.copy()
    x[len(x) // 2] += 1e-3  # one value moved
    moved = type(default_panel)(**{**vars(default_panel), "x": x})
    assert flows.shipped_checkpoint_problems(flows.panel_signature(moved))


def test_the_shipped_calibration_is_of_the_shipped_checkpoints_on_the_default_panel(
    default_panel,
):
    """The calibration the demo takes as shipped (it skips its single-threaded pass) is of
    these very files and of the validation windows they held out on the default panel;
    otherwise the demo calibrates afresh, and this says how to ship it again."""
    import json

    _, held = default_panel
    path = flows.SHIPPED_DIR / flows.SHIPPED_CALIBRATION
    assert path.exists(), f"no shipped calibration: {flows.SHIP_CALIBRATION}"
    shas = {
        str(flows._load_checkpoint_meta(p).get("seed")): flows.file_sha(p)
        for p in flows.SHIPPED_DIR.glob("*.pt")
    }
    entries = json.loads(path.read_text())["entries"]
    assert entries
    for entry in entries:
        key = entry["key"]
        stale = {s for s, sha in key["checkpoints"].items() if shas.get(s) != sha}
        assert not stale, f"calibration of other weights (seeds {stale}): {flows.SHIP_CALIBRATION}"
        for seed in key["checkpoints"]:
            file = next(n for n in held if n.endswith(f"-seed{seed}.pt"))
            assert held[file].data_signature() == key["held_out"], flows.SHIP_CALIBRATION
        assert len(entry["result"]["scale_by_horizon"]) == 20
