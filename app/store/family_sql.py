"""The family slots of the per-cell terms (sql/eval/057, 054), filled from the family registry.

`proforma.contracts.families` defines every density family once, with its SQL terms over
one cell (or one mixture component): w = (actual - mu) / s, aw = |w|, s. The steps keep
their shape (the rule set's sigma, the mixture's sums, the interval flags) in SQL and
write what differs by family as slots, `{{ family_... }}`, which `expand` fills when a
step is read (`proforma.app.store.sqlfiles`): the filled text is what runs and what is
checksummed, so the scoring-SQL version moves with a family's definition. One
submission has one family (`getvariable('family')`): each term is a CASE over the
registry's families, and a family's helper columns are NULL for the others.

Slots of 057 (single forecasts):

- `family_setup`: `SET VARIABLE` statements of the families' per-submission constants;
- `family_single_helpers`: CTEs from `single_w` (w, aw, s) to `single_helped`, one stage
  each, adding the families' helper columns;
- `family_single_scratch`: the columns the view drops (s, w, aw and the helpers);
- `family_single_nll`, `family_single_crps`, `family_single_cdf`: the terms.

Slots of 054 (mixtures):

- `family_mixture_helpers`: the CTE `comp_t` (comp_w with the families' helper columns);
- `family_mixture_log_density`, `family_mixture_cdf`, `family_mixture_crps_first`,
  `family_mixture_crps_diagonal`, `family_mixture_crps_pair`: the per-component terms;
- `family_mixture_has_crps`: whether the submission's family has a mixture CRPS.
"""

from __future__ import annotations

from proforma.app.store import slot_fill
from proforma.contracts import families as registry
from proforma.contracts.families import Helper

_FAMILY = "getvariable('family')"
#: The columns the single view computes itself: a helper may not take their names.
_SINGLE_OWN = ("s", "w", "aw", "r", "nll", "crps", "z", "u")
_MIXTURE_OWN = ("cell", "actual", "component", "mu", "s", "ok", "sigma_ok", "w", "aw")


def _quoted(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def _case(terms: dict[str, str | None]) -> str:
    """CASE over the submission's family: each family's term (NULL for one without)."""
    branches = [f"WHEN {_quoted(name)} THEN {sql}" for name, sql in terms.items() if sql]
    if not branches:
        return "NULL::DOUBLE"
    return f"CASE {_FAMILY} " + " ".join(branches) + " END"


def _helper(family: str, h: Helper) -> str:
    return f"CASE WHEN {_FAMILY} = {_quoted(family)} THEN {h.sql} END AS {h.name}"


def _unique(helpers: list[str], own: tuple[str, ...], where: str) -> list[str]:
    seen: set[str] = set()
    for name in helpers:
        if name in seen or name in own:
            raise ValueError(f"family helper {name!r} of {where} is taken: name it apart")
        seen.add(name)
    return helpers


def _single_stages() -> list[list[str]]:
    """Per stage, the helper columns of every family with a helper at that stage."""
    depth = max((len(f.single.stages) for f in registry.FAMILIES.values()), default=0)
    return [
        [
            _helper(f.name, h)
            for f in registry.FAMILIES.values()
            if i < len(f.single.stages)
            for h in f.single.stages[i]
        ]
        for i in range(depth)
    ]


def _single_helper_names() -> list[str]:
    names = [h.name for f in registry.FAMILIES.values() for stage in f.single.stages for h in stage]
    return _unique(names, _SINGLE_OWN, "sql/eval/057")


def _setup() -> str:
    statements = [
        f"SET VARIABLE {h.name} = CASE WHEN {_FAMILY} = {_quoted(f.name)} THEN {h.sql} END;"
        for f in registry.FAMILIES.values()
        for h in f.single.setup
    ]
    return "\n".join(statements)


def _single_helpers() -> str:
    _single_helper_names()
    ctes, source = [], "single_w"
    for i, columns in enumerate(_single_stages(), start=1):
        name = f"single_stage{i}"
        ctes.append(f"{name} AS (SELECT *, {', '.join(columns)} FROM {source})")
        source = name
    ctes.append(f"single_helped AS (SELECT * FROM {source})")
    return ",\n".join(ctes)


def _single_scratch() -> str:
    return ", ".join(("s", "w", "aw", *_single_helper_names()))


def _single(term: str) -> str:
    return _case({f.name: getattr(f.single, term) for f in registry.FAMILIES.values()})


def _mixture_helpers() -> str:
    names = [h.name for f in registry.FAMILIES.values() for h in f.mixture.helpers]
    _unique(names, _MIXTURE_OWN, "sql/eval/054")
    columns = [_helper(f.name, h) for f in registry.FAMILIES.values() for h in f.mixture.helpers]
    return f"comp_t AS NOT MATERIALIZED (SELECT {', '.join(['*', *columns])} FROM comp_w)"


def _mixture(term: str) -> str:
    """A mixture term; the CRPS terms only of the families that have all three."""
    crps = term.startswith("crps_")
    return _case(
        {
            f.name: getattr(f.mixture, term)
            for f in registry.FAMILIES.values()
            if f.mixture.has_crps or not crps
        }
    )


def _mixture_has_crps() -> str:
    names = [_quoted(f.name) for f in registry.FAMILIES.values() if f.mixture.has_crps]
    return f"{_FAMILY} IN ({', '.join(names)})" if names else "FALSE"


SLOTS = {
    "family_setup": _setup,
    "family_single_helpers": _single_helpers,
    "family_single_scratch": _single_scratch,
    "family_single_nll": lambda: _single("nll"),
    "family_single_crps": lambda: _single("crps"),
    "family_single_cdf": lambda: _single("cdf"),
    "family_mixture_helpers": _mixture_helpers,
    "family_mixture_log_density": lambda: _mixture("log_density"),
    "family_mixture_cdf": lambda: _mixture("cdf"),
    "family_mixture_crps_first": lambda: _mixture("crps_first"),
    "family_mixture_crps_diagonal": lambda: _mixture("crps_diagonal"),
    "family_mixture_crps_pair": lambda: _mixture("crps_pair"),
    "family_mixture_has_crps": _mixture_has_crps,
}


def expand(text: str) -> str:
    """`text` with its family slots filled from the registry (other text unchanged)."""
    return slot_fill.expand(text, "family", SLOTS)


def fingerprint() -> str:
    """A digest of every slot's text: changes whenever a family's definition does."""
    return slot_fill.fingerprint(SLOTS)
