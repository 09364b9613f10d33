"""No code outside the family registry (contracts/families.py, and the SQL terms it fills
into sql/eval/054 and 057) names a density family to decide something: a comparison
with a family's name (`family == "student_t"`, `family in ("gaussian", "laplace")`), a
hard-coded list of families, a family's name as a literal in the SQL or in a page. Such a
line is a second definition of what a family is, which a new family would have to find
and edit; it reads the registry instead (docs/models.md, "Density families").

Names are the registry's own, so a family added to it is guarded too. Python is parsed
(ast: only comparisons and literal lists count, so a default argument such as
`family="gaussian"` or a model's choice of loss is no finding); SQL and templates are
read as text. Migrations shipped before the registry (V0190) are frozen: their CHECKs are
history (V0190 dropped the last one)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from proforma.contracts.families import FAMILIES

ROOT = Path(__file__).resolve().parents[2]
#: The product's code (the benches name the cases they measure: bench/vs_published's file
#: kinds are the published package's three families).
PYTHON = ("app", "models", "contracts", "client")
REGISTRY = {Path("contracts/families.py")}
#: Migrations up to this version were shipped with the family CHECK (checksummed: never edited).
FROZEN_MIGRATIONS = 190


def _names(node: ast.expr) -> list[str]:
    """The family names a literal (a string, or a tuple, list or set of strings) holds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in FAMILIES else []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [n for e in node.elts for n in _names(e)]
    return []


def python_findings(source: str, where: str) -> list[str]:
    """Comparisons with a family's name and literal lists of two or more families."""
    found = []
    compared: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = (node.left, *node.comparators)
            compared.update(id(side) for side in sides)
            names = [n for side in sides for n in _names(side)]
            if names:
                found.append(f"{where}:{node.lineno}: compares with {', '.join(names)}")
        elif (
            isinstance(node, ast.Tuple | ast.List | ast.Set)
            and id(node) not in compared
            and len(_names(node)) >= 2
        ):
            found.append(f"{where}:{node.lineno}: lists the families {', '.join(_names(node))}")
    return found


def text_findings(text: str, where: str) -> list[str]:
    """A family's name as a quoted literal ('laplace', "laplace") in SQL or a template."""
    found = []
    for name in FAMILIES:
        for m in re.finditer(rf"""['"]{re.escape(name)}['"]""", text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{where}:{line}: names the family {name}")
    return found


def _sql_without_comments(text: str) -> str:
    return re.sub(r"--[^\n]*", "", text)


def all_findings() -> list[str]:
    found = []
    for folder in PYTHON:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel not in REGISTRY:
                found += python_findings(path.read_text(encoding="utf-8"), str(rel))
    for path in sorted((ROOT / "sql").rglob("*.sql")):
        text = _sql_without_comments(path.read_text(encoding="utf-8"))
        found += text_findings(text, str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "migrations").glob("V*.sql")):
        if int(path.name[1:5]) > FROZEN_MIGRATIONS:
            text = _sql_without_comments(path.read_text(encoding="utf-8"))
            found += text_findings(text, str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "app" / "web" / "templates").rglob("*.html")):
        found += text_findings(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return found


def test_no_code_outside_the_registry_names_a_family() -> None:
    assert all_findings() == []


def test_the_guard_sees_what_it_guards() -> None:
    """The scanner flags each kind of second definition (so the test above can fail)."""
    python = (
        'if family == "student_t": pass\n'
        'ok = family in ("gaussian", "quantile")\n'
        'KNOWN = ("gaussian", "laplace")\n'
        'def f(family="gaussian"): return LOSSES[family]\n'
    )
    assert [f.split(": ", 1)[1] for f in python_findings(python, "x.py")] == [
        "compares with student_t",
        "compares with gaussian",
        "lists the families gaussian, laplace",
    ]
    assert text_findings("WHEN getvariable('family') = 'laplace' THEN", "x.sql") == [
        "x.sql:1: names the family laplace"
    ]
    assert text_findings('<option value="student_t">', "x.html") == [
        "x.html:1: names the family student_t"
    ]
