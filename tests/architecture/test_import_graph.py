"""The import graph of the packages (parsed with ast, nothing imported) against the layer
table of docs/architecture.md ("Layers"): every module lives in a room of a layer, every
import points down the table (or stays inside its room), no module takes part in an
import circle, the API, the pages and the client never import each other, `contracts`
imports nothing of the project and `models` nothing from `app`."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contracts", "app", "models", "client")
#: The one top-level package they are installed under (proforma/ links to the folders).
DISTRIBUTION = "proforma"

#: docs/architecture.md's layer table, top first: (layer, its rooms). A room is a package
#: (or, for `app`, the package's own __init__: the version).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("entry points", ("app.cli", "app.server")),
    ("interfaces", ("app.api", "app.web", "client")),
    ("read", ("app.read",)),
    ("flows", ("app.flows", "app.report", "app.rounds")),
    ("scoring", ("app.scoring",)),
    ("sources and model inputs", ("app.sources", "app.model_inputs")),
    ("warehouse", ("app.store", "app")),
    ("models", ("models",)),
    ("contracts", ("contracts",)),
)
#: Imports between two rooms of one layer that the table allows (a flow that runs
#: another flow's step, the command line starting the server); any other sideways import
#: fails, the API and the pages importing each other above all.
SIDEWAYS: set[tuple[str, str]] = {
    ("app.cli", "app.server"),
    ("app.report", "app.flows"),
    ("app.rounds", "app.flows"),
}


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the packages."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def local(name: str) -> str:
    """The repository's name of an installed module: proforma.app.x -> app.x."""
    return "" if name == DISTRIBUTION else name.removeprefix(f"{DISTRIBUTION}.")


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The project modules `name` imports anywhere in its file (functions and
    TYPE_CHECKING blocks included: a lazy import is still a dependency). `from pkg import
    sub` counts as importing pkg.sub, not pkg."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [local(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = local(node.module or "")
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            prefix = f"{base}." if base else ""
            targets = [
                f"{prefix}{a.name}" if f"{prefix}{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            while parts and ".".join(parts) not in known:
                parts.pop()
            if parts and ".".join(parts) != name:
                yield ".".join(parts)


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imported(name, path, known)) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    assert circles(graph()) == []


def test_contracts_import_nothing_of_the_project() -> None:
    bad = sorted(
        (a, b)
        for a, targets in graph().items()
        for b in targets
        if a.startswith("contracts") and not b.startswith("contracts")
    )
    assert bad == []


def test_models_import_nothing_from_app() -> None:
    edges = sorted(
        (a, b)
        for a, targets in graph().items()
        for b in targets
        if a.startswith("models") and b.split(".")[0] == "app"
    )
    assert edges == []


def room_of(module: str) -> str | None:
    """The room a module lives in (the longest room name that is the module or a package
    above it); None for a module of no room (`app`'s own __init__ is the room `app`)."""
    rooms = [r for _, rs in LAYERS for r in rs]
    if module == "app":
        return "app"
    found = [r for r in rooms if r != "app" and (module == r or module.startswith(f"{r}."))]
    return max(found, key=len) if found else None


def layer_of(room: str) -> int:
    return next(i for i, (_, rooms) in enumerate(LAYERS) if room in rooms)


def wrong_arrows(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports that point up the table, or sideways between rooms without leave."""
    bad = []
    for a, targets in edges.items():
        ra = room_of(a)
        for b in targets:
            rb = room_of(b)
            if ra is None or rb is None or ra == rb:
                continue
            la, lb = layer_of(ra), layer_of(rb)
            if la > lb or (la == lb and (ra, rb) not in SIDEWAYS):
                bad.append((a, b))
    return sorted(bad)


def test_every_module_lives_in_a_room_of_a_layer() -> None:
    assert sorted(m for m in modules() if room_of(m) is None) == []


def test_every_arrow_points_down_the_layer_table() -> None:
    assert wrong_arrows(graph()) == []


def test_api_and_pages_share_the_read_layer_and_not_each_other() -> None:
    edges = graph()
    crossing = sorted(
        (a, b)
        for a, targets in edges.items()
        for b in targets
        if {room_of(a), room_of(b)} == {"app.api", "app.web"}
    )
    assert crossing == []
    assert any(room_of(b) == "app.read" for a in edges if room_of(a) == "app.web" for b in edges[a])


def test_the_table_is_the_documented_one() -> None:
    """docs/architecture.md's table lists the same layers and rooms, in the same order."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    documented = [
        (cells[0], tuple(re.findall(r"`app/([a-z_]+)/`|`(models|contracts|client)/`", cells[1])))
        for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows[1:])
    ]
    names = [layer for layer, _ in documented]
    assert names == [layer for layer, _ in LAYERS]
    for (layer, found), (_, rooms) in zip(documented, LAYERS, strict=True):
        listed = {f"app.{a}" if a else b for a, b in found}
        assert listed == {r for r in rooms if r != "app"}, layer


def test_wrong_arrows_finds_upward_and_sideways_imports() -> None:
    edges = {
        "app.scoring.cells": {"app.store.warehouse", "app.flows.build"},
        "app.web.pages": {"app.read.queries", "app.api.deps"},
        "app.cli.serve": {"app.server.main"},
        "app.store.warehouse": {"contracts.errors"},
    }
    assert wrong_arrows(edges) == [
        ("app.scoring.cells", "app.flows.build"),
        ("app.web.pages", "app.api.deps"),
    ]


@pytest.mark.parametrize(
    "source, expected",
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set(), "c": {"a", "b"}}, []),
    ],
)
def test_circles_finds_exactly_the_cycles(
    source: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert circles(source) == expected


def test_imported_resolves_submodules_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from pkg import b\nfrom . import c\ndef f():\n    from pkg.c import thing\n"
    )
    known = {
        "pkg": pkg / "__init__.py",
        "pkg.a": pkg / "a.py",
        "pkg.b": pkg / "b.py",
        "pkg.c": pkg / "c.py",
    }
    assert set(imported("pkg.a", pkg / "a.py", known)) == {"pkg.b", "pkg.c"}
