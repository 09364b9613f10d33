"""The rule set a panel was built under, read back in one place (docs/architecture.md,
"Rule sets"): from the built panel (`panel.rule_set`) or from a build's record
(`meta.builds.parameters` "rules"). Both return a `RuleSet`; a build that records none
was made under `paper`, a name this code does not know is a UserError."""

from __future__ import annotations

import json
from typing import Any

from proforma.app.store.warehouse import Warehouse
from proforma.contracts.rules import UNRECORDED_RULES, RuleSet


def current_rules(wh: Warehouse) -> RuleSet:
    """The rule set of the built panel; a panel built before rule sets existed followed
    the paper's text."""
    if not wh.table_exists("panel.rule_set"):
        return UNRECORDED_RULES
    return RuleSet.parse(wh.scalar("SELECT rules FROM panel.rule_set"), "The panel records")


def build_rules(build: dict[str, Any] | None) -> RuleSet:
    """The rule set a build record (a meta.builds row) was made with."""
    params = (build or {}).get("parameters")
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            params = None
    rules = params.get("rules") if isinstance(params, dict) else None
    if rules is None:
        return UNRECORDED_RULES
    return RuleSet.parse(rules, "The build records")
