"""`proforma --help` and every command's --help: readable at 80 columns, nothing cut
short, commands listed in the order a user runs them (proforma.app.cli.help.WORKFLOW)."""

from __future__ import annotations

import typer.main
from typer.core import TyperGroup
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.cli.help import WORKFLOW, first_paragraph


def _squeeze(text: str) -> str:
    """Text without any whitespace: wrapping (even inside a long word) cannot hide a cut."""
    return "".join(text.split())


def _help(*path: str) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


def _root() -> TyperGroup:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    return root


def _commands(group, path=()):
    for name, command in group.commands.items():
        if not command.hidden:
            yield (*path, name), command
            yield from _commands(command, (*path, name)) if hasattr(command, "commands") else ()


def test_every_command_has_a_place_in_the_workflow() -> None:
    declared = {name for _, names in WORKFLOW for name in names}
    registered = set(_root().commands)
    assert registered - declared == set(), "add new commands to proforma.app.cli.help.WORKFLOW"


def test_the_command_list_follows_the_workflow_with_whole_first_paragraphs() -> None:
    text = _help()
    assert max(len(line) for line in text.splitlines()) <= 80
    root = _root()
    order = [n for _, names in WORKFLOW for n in names if n in root.commands]
    positions = [text.index(f"\n  {name} ") for name in order]
    assert positions == sorted(positions)
    for name in order:
        assert _squeeze(first_paragraph(root.commands[name].help)) in _squeeze(text), name
    assert text.index("Start here") < text.index("Data") < text.index("Scores")


def test_every_help_fits_80_columns_and_cuts_nothing() -> None:
    root = typer.main.get_command(app)
    checked = 0
    for path, command in _commands(root):
        text = _help(*path)
        too_long = [line for line in text.splitlines() if len(line) > 80]
        assert too_long == [], (path, too_long)
        squeezed = _squeeze(text)
        assert _squeeze(first_paragraph(command.help)) in squeezed, path
        for param in getattr(command, "params", []):
            if getattr(param, "help", None):
                assert _squeeze(param.help) in squeezed, (path, param.name)
            default = getattr(param, "default", None)
            if isinstance(default, str) and default and getattr(param, "show_default", True):
                assert _squeeze(default) in squeezed, (path, param.name, default)
        for sub_name, sub in getattr(command, "commands", {}).items():
            assert _squeeze(first_paragraph(sub.help)) in squeezed, (path, sub_name)
        checked += 1
    assert checked >= 30  # the whole tree was walked
