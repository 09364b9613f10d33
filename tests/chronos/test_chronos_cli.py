"""`proforma run chronos`: every error a user can cause is one line, exit 2, nothing
written; and the whole arm through the common forecast path to the leaderboards."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from proforma.app import scoring
from proforma.app.cli import app
from proforma.app.flows.chronos import ChronosOptions, run_chronos
from proforma.app.store.warehouse import connect
from proforma.contracts.errors import UserError


def _nothing_written(settings) -> None:
    with connect(settings, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM eval.submissions") == 0
    assert list((settings.cache_dir / "chronos").glob("*/chunk-*.arrow")) == []


def _user_error(args: list[str]) -> str:
    result = CliRunner().invoke(app, ["run", "chronos", *args])
    assert isinstance(result.exception, UserError), result.output
    assert result.exception.exit_code == 2
    return str(result.exception)


def test_unreachable_weights_stop_with_one_line_saying_how_to_get_them(
    settings, panel_file, tmp_path
) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from proforma.app.cli import main; main()",
            "run",
            "chronos",
            "--model",
            "amazon/chronos-2",
            "--no-score",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    text = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 2 and "Traceback" not in text, text
    assert len(text.splitlines()) == 1, text
    assert "hub cannot be reached" in text and "hf download amazon/chronos-2" in text
    assert "--model chronos-2" in text
    _nothing_written(settings)


def test_a_folder_that_is_no_checkpoint_or_a_missing_path_is_refused(
    settings, panel_file, tmp_path
) -> None:
    (tmp_path / "empty").mkdir()
    assert "not a Chronos-2 checkpoint folder (no config.json)" in _user_error(
        ["--model", str(tmp_path / "empty")]
    )
    assert "No Chronos-2 checkpoint folder" in _user_error(
        ["--model", str(tmp_path / "a" / "b" / "c")]
    )
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text('{"model_type": "bert"}')
    assert "not a Chronos-2 checkpoint" in _user_error(["--model", str(tmp_path / "other")])
    _nothing_written(settings)


def test_cuda_without_a_gpu_and_bad_choices_are_refused(settings, panel_file, tiny_model) -> None:
    import torch

    if not torch.cuda.is_available():
        assert "PyTorch sees no CUDA device" in _user_error(
            ["--model", str(tiny_model), "--device", "cuda"]
        )
    assert "Unknown device 'tpu'" in _user_error(["--model", str(tiny_model), "--device", "tpu"])
    assert "Unknown dtype 'int8'" in _user_error(["--model", str(tiny_model), "--dtype", "int8"])
    _nothing_written(settings)


def test_an_unbuilt_warehouse_is_refused(settings, tiny_model) -> None:
    assert "proforma build" in _user_error(["--model", str(tiny_model)])
    with connect(settings, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM eval.submissions") == 0


def test_run_chronos_is_listed_with_its_options() -> None:
    result = CliRunner().invoke(app, ["run", "chronos", "--help"])
    assert result.exit_code == 0
    for option in (
        "--model",
        "--device",
        "--dtype",
        "--batch-size",
        "--chunk-origins",
        "--footprint",
    ):
        assert option in result.output


def test_quantile_submission_is_ingested_and_scored_on_all_three_tracks(
    panel_wh, tiny_model
) -> None:
    """End to end through proforma.app.scoring: needs quantile submissions (family 'quantile') in
    the scoring code; fails until that work is merged."""
    result = run_chronos(panel_wh, ChronosOptions(model=str(tiny_model)), show_progress=False)
    sid = result["submission_id"]
    family, source, rows = panel_wh.fetchone(
        "SELECT family, source, rows FROM eval.submissions WHERE submission_id = ?", [sid]
    )
    assert (family, source) == ("quantile", "model") and rows == result["rows"]
    assert set(result["score_runs"]) >= {"full", "geert"}
    squared = scoring.leaderboard(panel_wh, "full", "squared").to_pylist()
    absolute = scoring.leaderboard(panel_wh, "full", "absolute").to_pylist()
    density = scoring.leaderboard(panel_wh, "full", "density").to_pylist()
    mine = [r for r in squared if r["model"] == "chronos-2"]
    assert mine and math.isfinite(mine[0]["r2"])
    assert any(r["model"] == "chronos-2" and math.isfinite(r["mae"]) for r in absolute)
    [dens] = [r for r in density if r["model"] == "chronos-2"]
    assert dens["nll"] is None or math.isnan(dens["nll"])
    assert math.isfinite(dens["crps"]) and 0 <= dens["cov50"] <= 1


@pytest.mark.parametrize(
    ("option", "value"), [("--batch-size", "0"), ("--batch-size", "-3"), ("--chunk-origins", "0")]
)
def test_sizes_must_be_positive(settings, option, value) -> None:
    result = CliRunner().invoke(app, ["run", "chronos", option, value])
    assert result.exit_code == 2 and option in result.output
    assert not settings.warehouse.exists()


def test_without_the_chronos_package_the_install_line_is_given(
    settings, panel_file, tiny_model, monkeypatch
) -> None:
    monkeypatch.setitem(sys.modules, "chronos", None)  # import chronos -> ImportError
    assert "pip install '.[chronos]'" in _user_error(["--model", str(tiny_model)])
    _nothing_written(settings)
