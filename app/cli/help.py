"""How `proforma --help` reads: commands grouped and ordered the way a user runs them,
each with its whole first paragraph, in plain text that fits 80 columns.

The order is the declared list WORKFLOW. A command registered but not listed there still
shows, under "Other commands" at the end (tests/foundation/test_found_cli_help.py fails
until it is placed); a listed name that is not registered is skipped.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from typer.core import TyperGroup

if TYPE_CHECKING:  # typer carries its own copy of click; these are its classes
    from typer._click import Command, Context, HelpFormatter

#: (section title, command names in the order a user runs them).
WORKFLOW: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Start here", ("demo",)),
    (
        "Data: from filings to the benchmark panel",
        ("migrate", "ingest", "synthetic", "build", "audit"),
    ),
    (
        "Forecasters",
        ("baselines", "run", "train", "predict", "oracle", "forma", "scenario", "llm", "reconcile"),
    ),
    ("Scores", ("submit", "score", "leaderboard", "footprint", "report", "export", "round")),
    ("Service", ("serve", "users")),
    ("Researchers: a server from the terminal", ("remote",)),
    ("Warehouse", ("db", "backup", "restore")),
)
OTHER = "Other commands"


def first_paragraph(text: str | None) -> str:
    """A docstring's first paragraph on one line (click cuts it at 45 characters and
    rich keeps the source's line breaks; both broke sentences in the command list)."""
    paragraph = inspect.cleandoc(text or "").split("\n\n")[0]
    return " ".join(paragraph.replace("\b", "").split())


def _whole_short_help(command: Command) -> None:
    """Give a command (and, for a group, every subcommand) its whole first paragraph as
    the one-line help that command lists show."""
    if command.short_help is None and command.help:
        command.short_help = first_paragraph(command.help)
    for sub in getattr(command, "commands", {}).values():  # a group's subcommands
        _whole_short_help(sub)


class WorkflowGroup(TyperGroup):
    """The root `proforma` group: commands in WORKFLOW order, in sections."""

    def list_commands(self, ctx: Context) -> list[str]:
        registered = list(self.commands)
        ordered = [name for _, names in WORKFLOW for name in names if name in self.commands]
        return ordered + sorted(n for n in registered if n not in ordered)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _whole_short_help(command)  # so that `proforma run --help` lists whole lines too
        return command

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        listed: set[str] = set()
        sections: list[tuple[str, list[tuple[str, str]]]] = []
        for title, names in (*WORKFLOW, (OTHER, tuple(self.list_commands(ctx)))):
            rows = []
            for name in names:
                command = self.commands.get(name)
                if command is None or command.hidden or name in listed:
                    continue
                listed.add(name)
                rows.append((name, first_paragraph(command.short_help or command.help)))
            if rows:
                sections.append((title, rows))
        # One name column for all sections (click sizes it per list).
        width = max((len(name) for _, rows in sections for name, _ in rows), default=0)
        for title, rows in sections:
            with formatter.section(title):
                formatter.write_dl(
                    [(name.ljust(width), text) for name, text in rows], col_max=width + 2
                )
