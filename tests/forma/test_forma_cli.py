"""The Forma CLI layer: argument parsing and clear errors before any work."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.cli.forma import parse_epochs, parse_pins, parse_seeds
from proforma.app.flows import forma as forma_flow
from proforma.contracts.errors import UserError
from proforma.contracts.quarters import parse_quarter


def test_parse_seeds_quarters_and_pins():
    assert parse_seeds("60-64") == [60, 61, 62, 63, 64]
    assert parse_seeds("60, 62") == [60, 62]
    for bad in ("64-60", "a", "60,60", ""):
        with pytest.raises(UserError):
            parse_seeds(bad)
    assert parse_epochs("1, 2,8") == (1, 2, 8) and parse_epochs("") == ()
    for bad in ("0", "1,x", "-2"):
        with pytest.raises(UserError, match="--keep-epochs"):
            parse_epochs(bad)
    assert parse_quarter("2015Q4") == 2015 * 4 + 3 and parse_quarter("2001q1") == 8004
    with pytest.raises(UserError):
        parse_quarter("2015-12")
    pins = parse_pins(["revtq=1200.5", "revtq@1=3,revtq@2-4=std:0.5"])
    assert pins == [
        ("revtq", None, "usd", 1200.5),
        ("revtq", [1], "usd", 3.0),
        ("revtq", [2, 3, 4], "std", 0.5),
    ]
    for bad in ("revtq", "revtq@0=1", "revtq@21=1", "revtq=abc", "revtq=nan"):
        with pytest.raises(UserError):
            parse_pins([bad])


def test_forma_commands_in_the_command_tree(settings, monkeypatch):
    runner = CliRunner()
    for args in (
        ["train", "forma", "--help"],
        ["predict", "forma", "--help"],
        ["scenario", "--help"],
        ["forma", "oracle-experiment", "--help"],
    ):
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["forma", "info", "--preset", "paper"])
    assert res.exit_code == 0 and "942,210" in res.output
    # no checkpoint yet: one clear error, nothing written
    import torch

    before = torch.get_num_threads()
    seen: list[int] = []
    real_load = forma_flow.load_models

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real_load(*args, **kwargs)

    monkeypatch.setattr(forma_flow, "load_models", spy)
    res = runner.invoke(app, ["predict", "forma", "--seeds", "60", "--threads", "1"])
    assert seen == [1]  # --threads reaches PyTorch before any work
    assert torch.get_num_threads() == before  # and the process has its own count back
    assert isinstance(res.exception, UserError) and "Train first" in str(res.exception)
