"""The typed rule set (proforma.contracts.panel.RuleSet): validated wherever a name comes
in, read back in one place (app/store/rules.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from proforma.app.cli import app as cli_app
from proforma.app.flows.build import BuildParams
from proforma.app.store.rules import build_rules, current_rules
from proforma.contracts.errors import UserError
from proforma.contracts.panel import DEFAULT_RULES, RULE_SETS, RuleSet


def test_rule_set_parses_names_and_rejects_others() -> None:
    assert RULE_SETS == ("published", "paper") and DEFAULT_RULES is RuleSet.published
    assert RuleSet.parse("paper") is RuleSet.paper
    assert RuleSet.parse(RuleSet.published) is RuleSet.published
    assert f"rules {RuleSet.paper}" == "rules paper"
    with pytest.raises(UserError, match="Unknown rule set 'strict': use one of published, paper"):
        RuleSet.parse("strict")


def test_build_params_hold_a_rule_set() -> None:
    params = BuildParams(rules="paper")  # type: ignore[arg-type]
    assert params.rules is RuleSet.paper
    variables = params.variables(pinned=False)
    assert variables["rules"] == "paper" and type(variables["rules"]) is str
    assert variables["published"] is False
    assert json.loads(json.dumps(variables))["rules"] == "paper"
    assert BuildParams().variables(pinned=True)["published"] is True
    with pytest.raises(UserError, match="Unknown rule set"):
        BuildParams(rules="other")  # type: ignore[arg-type]


def test_build_records_are_read_in_one_place() -> None:
    assert build_rules(None) is RuleSet.paper
    assert build_rules({"parameters": '{"rules": "published"}'}) is RuleSet.published
    assert build_rules({"parameters": {"rules": "paper"}}) is RuleSet.paper
    with pytest.raises(UserError, match="The build records an unknown rule set 'x'"):
        build_rules({"parameters": {"rules": "x"}})


def test_the_panel_rule_set(wh) -> None:
    assert current_rules(wh) is RuleSet.paper  # no panel.rule_set: built before rule sets
    wh.execute("CREATE SCHEMA IF NOT EXISTS panel")
    wh.execute("CREATE TABLE panel.rule_set AS SELECT 'published' AS rules")
    assert current_rules(wh) is RuleSet.published
    wh.execute("UPDATE panel.rule_set SET rules = 'other'")
    with pytest.raises(UserError, match="The panel records an unknown rule set 'other'"):
        current_rules(wh)


def test_cli_rejects_an_unknown_rule_set_in_one_line(settings) -> None:
    res = CliRunner().invoke(cli_app, ["build", "--rules", "strict"])
    assert res.exit_code != 0
    assert "Unknown rule set 'strict'" in str(res.exception or res.output)
