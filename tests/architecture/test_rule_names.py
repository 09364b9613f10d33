"""No code outside the rule registry (contracts/rules.py) asks which rule set it runs under:
it asks for the rule it needs (docs/architecture.md, "Rule sets"). And every rule the SQL
reads is declared, every declared rule is read somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from proforma.contracts.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "contracts" / "rules.py"
CODE = ("app", "models", "contracts", "client", "bench", "tools", "proforma")
SET_NAMES = r"(?:published|paper)"
#: Ways of asking for a rule set by name: its Enum-style member, a comparison with a
#: shipped set, a name compared where a rule set is meant, the old SQL boolean.
PYTHON_ASKS = [
    re.compile(rf"RuleSet\.{SET_NAMES}\b"),
    re.compile(r"(?:\bis\b|[=!]=)\s*(?:PUBLISHED|PAPER|DEFAULT_RULES|UNRECORDED_RULES)\b"),
    re.compile(r"\b(?:PUBLISHED|PAPER|DEFAULT_RULES|UNRECORDED_RULES)\s*(?:\bis\b|[=!]=)"),
    re.compile(rf"rule\w*\W*\s*(?:\bis\b|[=!]=|\bin\b)\s*\(?[\"']{SET_NAMES}[\"']"),
    re.compile(rf"[\"']{SET_NAMES}[\"']\s*(?:\bis\b|[=!]=)\s*\w*rule"),
]
SQL_ASKS = [
    re.compile(rf"getvariable\('{SET_NAMES}'\)"),
    re.compile(rf"(?:=|<>|!=|\bIN\s*\()\s*'{SET_NAMES}'", re.IGNORECASE),
    re.compile(rf"'{SET_NAMES}'\s*(?:=|<>|!=)", re.IGNORECASE),
]
VARIABLE = re.compile(r"getvariable\('([a-z0-9_]+)'\)")


def _files(suffix: str) -> list[Path]:
    out: list[Path] = []
    for top in CODE:
        out += [p for p in (ROOT / top).rglob(f"*{suffix}") if p != REGISTRY]
    return out


def _sql_files() -> list[Path]:
    return sorted((ROOT / "sql").rglob("*.sql")) + sorted((ROOT / "migrations").rglob("*.sql"))


def _hits(paths: list[Path], patterns: list[re.Pattern[str]]) -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in paths
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if not line.lstrip().startswith(("#", "--")) and any(r.search(line) for r in patterns)
    ]


def test_python_asks_for_rules_not_for_rule_set_names() -> None:
    assert _hits(_files(".py"), PYTHON_ASKS) == []


def test_sql_asks_for_rules_not_for_rule_set_names() -> None:
    assert _hits(_sql_files(), SQL_ASKS) == []


@pytest.mark.parametrize(
    "line",
    [
        "if rules is RuleSet.published:",
        "x = current_rules(wh) == PUBLISHED",
        'if sub["rules"] == "paper":',
        "if PAPER is rules:",
    ],
)
def test_the_guard_sees_a_question_by_name(line: str) -> None:
    assert any(r.search(line) for r in PYTHON_ASKS)


def test_the_guard_sees_sql_asking_by_name() -> None:
    assert any(r.search("WHERE getvariable('published')") for r in SQL_ASKS)
    assert any(r.search("CASE WHEN getvariable('rules') = 'paper'") for r in SQL_ASKS)
    # a preset of the same name is no rule set
    assert not any(r.search('return model if preset_name == "paper"') for r in PYTHON_ASKS)


def _compared_values(text: str) -> list[tuple[str, str]]:
    """(variable, literal) of every `getvariable('x') = 'y'` and `CASE getvariable('x')
    WHEN 'y' ...` in SQL text."""
    out = re.findall(r"getvariable\('(\w+)'\)\s*(?:=|<>|!=)\s*'(\w+)'", text)
    for m in re.finditer(r"CASE\s+getvariable\('(\w+)'\)(.*?)\bEND\b", text, re.DOTALL):
        out += [(m.group(1), v) for v in re.findall(r"WHEN\s+'(\w+)'", m.group(2))]
    return out


def test_every_rule_read_in_sql_is_declared_and_every_rule_is_read() -> None:
    texts = {p: p.read_text() for p in _sql_files()}
    read = {m for text in texts.values() for m in VARIABLE.findall(text)}
    python = "\n".join(p.read_text() for p in _files(".py"))
    for name in RULES:
        assert name in read or re.search(rf"\.{name}\b", python), f"rule {name} is never read"
    # a value SQL compares a rule with is one of the rule's choices (no typo runs silently)
    compared = [(p, v, lit) for p, text in texts.items() for v, lit in _compared_values(text)]
    assert compared, "the check found nothing to check"
    for path, name, literal in compared:
        if name in RULES:
            assert literal in RULES[name].choices, f"{path.name}: {name} = {literal!r}"


def test_the_rule_table_names_every_rule() -> None:
    text = (ROOT / "docs" / "contracts.md").read_text()
    table = text[text.index("## Rule sets") :]
    assert [name for name in RULES if f"| `{name}` |" not in table] == []
