"""The rule sets (proforma.contracts.rules): named rules, validated wherever a name comes
in, read back in one place (app/store/rules.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from proforma.app.cli import app as cli_app
from proforma.app.flows.build import BuildParams
from proforma.app.store.rules import build_rules, current_rules
from proforma.contracts.errors import UserError
from proforma.contracts.rules import (
    DEFAULT_RULES,
    PAPER,
    PUBLISHED,
    RULE_SETS,
    RULES,
    RuleSet,
    declared,
)


def test_rule_set_parses_names_and_rejects_others() -> None:
    assert RULE_SETS == ("published", "paper") and DEFAULT_RULES is PUBLISHED
    assert RuleSet.parse("paper") is PAPER
    assert RuleSet.parse(PUBLISHED) is PUBLISHED
    assert f"rules {PAPER}" == "rules paper"
    with pytest.raises(UserError, match="Unknown rule set 'strict': use one of published, paper"):
        RuleSet.parse("strict")


def test_build_params_hold_a_rule_set() -> None:
    params = BuildParams(rules="paper")  # type: ignore[arg-type]
    assert params.rules is PAPER
    variables = params.variables(pinned=False)
    assert variables["rules"] == "paper" and type(variables["rules"]) is str
    # every rule is a variable of its own name, none collides with a build parameter
    assert {name: variables[name] for name in RULES} == PAPER.variables()
    assert not set(RULES) & {f.name for f in dataclasses.fields(BuildParams)}
    assert variables["ytd_without_fqtr"] is False and "published" not in variables
    assert json.loads(json.dumps(variables))["rules"] == "paper"
    assert BuildParams().variables(pinned=True)["ytd_without_fqtr"] is True
    with pytest.raises(UserError, match="Unknown rule set"):
        BuildParams(rules="other")  # type: ignore[arg-type]


def test_build_records_are_read_in_one_place() -> None:
    assert build_rules(None) is PAPER
    assert build_rules({"parameters": '{"rules": "published"}'}) is PUBLISHED
    assert build_rules({"parameters": {"rules": "paper"}}) is PAPER
    with pytest.raises(UserError, match="The build records an unknown rule set 'x'"):
        build_rules({"parameters": {"rules": "x"}})


def test_the_panel_rule_set(wh) -> None:
    assert current_rules(wh) is PAPER  # no panel.rule_set: built before rule sets
    wh.execute("CREATE SCHEMA IF NOT EXISTS panel")
    wh.execute("CREATE TABLE panel.rule_set AS SELECT 'published' AS rules")
    assert current_rules(wh) is PUBLISHED
    wh.execute("UPDATE panel.rule_set SET rules = 'other'")
    with pytest.raises(UserError, match="The panel records an unknown rule set 'other'"):
        current_rules(wh)


def test_cli_rejects_an_unknown_rule_set_in_one_line(settings) -> None:
    res = CliRunner().invoke(cli_app, ["build", "--rules", "strict"])
    assert res.exit_code != 0
    assert "Unknown rule set 'strict'" in str(res.exception or res.output)


def test_every_rule_is_documented_and_both_sets_take_its_choices() -> None:
    assert len(RULES) >= 18
    for rule in RULES.values():
        assert rule.doc and rule.reason and rule.where.startswith(("sql/", "app/"))
        for rules in (PUBLISHED, PAPER):
            value = getattr(rules, rule.name)
            assert not rule.choices or value in rule.choices, (rules, rule.name)
    # the package's 6 x 1.4142 as SQL's decimal product gives it
    assert PUBLISHED.yoy_clip == 8.4852 and PAPER.yoy_clip == pytest.approx(6 * 2**0.5)


def test_a_rule_set_is_one_declaration() -> None:
    toy = dataclasses.replace(PUBLISHED, name="toy", fade_fallback="mean_change")
    assert toy.builds_like(PUBLISHED) and not PAPER.builds_like(PUBLISHED)
    with pytest.raises(UserError, match="Unknown rule set 'toy'"):
        RuleSet.parse("toy")
    with pytest.raises(UserError, match="'toy' is not declared"):
        BuildParams(rules=toy)
    with pytest.raises(UserError, match="'paper' is not declared"):
        RuleSet.parse(dataclasses.replace(PAPER, sigma_floor=None))  # not the shipped one
    with declared(toy):
        assert RuleSet.parse("toy") is toy
        assert build_rules({"parameters": {"rules": "toy"}}) is toy
    with pytest.raises(UserError, match="Unknown rule set 'toy'"):
        RuleSet.parse("toy")  # nothing left behind
    with pytest.raises(UserError, match="fade_fallback = 'mean' is none of"):
        dataclasses.replace(PUBLISHED, name="bad", fade_fallback="mean")
    with pytest.raises(UserError, match="shipped"), declared(dataclasses.replace(PAPER)):
        pass
