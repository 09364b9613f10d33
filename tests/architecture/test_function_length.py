"""A ratchet on long functions in app/ (issue 51: 62 functions over 60 lines, 41 after the
split into named steps). A function of the service may not pass 90 lines, and the count
of those over 60 may only fall: lower LONG_FUNCTIONS when a split brings it down."""

from __future__ import annotations

import ast

from tests.architecture.test_import_graph import ROOT

#: Lines (def to last line, decorators excluded) above which a function counts as long.
LONG = 60
#: The most lines any function of app/ may have (the longest today: a CLI command of
#: Typer options, 88 lines).
LONGEST = 90
#: Functions of app/ over LONG lines today; the number may fall, never rise.
LONG_FUNCTIONS = 41


def function_lengths() -> list[tuple[int, str]]:
    found = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((lines, f"{path.relative_to(ROOT)}::{node.name}"))
    return found


def test_no_function_of_the_service_passes_the_longest_allowed() -> None:
    too_long = [f"{name} ({n} lines)" for n, name in function_lengths() if n > LONGEST]
    assert too_long == [], "split these into named steps: " + ", ".join(too_long)


def test_long_functions_only_become_fewer() -> None:
    long = sorted((n, name) for n, name in function_lengths() if n > LONG)
    assert len(long) <= LONG_FUNCTIONS, (
        f"{len(long)} functions over {LONG} lines, at most {LONG_FUNCTIONS}; the newest "
        "long ones are among: " + ", ".join(name for _, name in long[-5:])
    )
