"""The rule sets: every way the build and the scoring may read the benchmark, one named rule
each (docs/contracts.md, "Rule sets"; docs/architecture.md, "Rule sets").

A rule is a field of `RuleSet`: its name is the SQL variable the steps read
(`getvariable('fade_fallback')`, set by `RuleSet.variables`) and the attribute Python
reads (`rules.fade_fallback`); its metadata says what it decides, where, why the rule
sets differ (or why the project reads the paper so), and the values it may take. A rule
set is a name and a value for every rule. `published` (the default) follows the
published benchmark package where it and the paper's text differ, so its scores equal the
package's; `paper` follows the paper's text, and where the text leaves a case open, the
project's documented reading. A third rule set, or one rule switched, is one declaration:

    strict = declare(dataclasses.replace(PUBLISHED, name="strict", fade_fallback="mean_change"))

Code outside this module asks for the rule it needs, never for a rule set's name
(tests/architecture/test_rule_names.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from proforma.contracts.errors import UserError

BUILD, SCORING = "build", "scoring"


def _rule(stage: str, where: str, doc: str, reason: str, choices: tuple[Any, ...] = ()) -> Any:
    """A rule's declaration: a field whose metadata documents it."""
    meta = {"stage": stage, "where": where, "doc": doc, "reason": reason, "choices": choices}
    return field(metadata=meta)


@dataclass(frozen=True)
class Rule:
    """One rule as the docs and the checks read it (the metadata of a RuleSet field)."""

    name: str
    stage: str
    where: str
    doc: str
    reason: str
    choices: tuple[Any, ...]


@dataclass(frozen=True)
class RuleSet:
    """A named set of values, one for every rule (see the module's doc)."""

    name: str
    doc: str = field(compare=False)

    # -- build (sql/build) -----------------------------------------------------------
    link_window_copies: bool = _rule(
        BUILD,
        "sql/build/010",
        "A firm-quarter inside several link windows of its firm (overlapping CCM links) is "
        "kept once per window (True) or once (False); the copies share one raw row, so only "
        "the modal SIC (060) counts them.",
        "The package left-joins the link table on gvkey; the paper keeps 'firm-quarters "
        "whose statement date falls within a link window' (appendix, 'Download and "
        "universe'): once.",
        (False, True),
    )
    dedup_missing_fiscal_first: bool = _rule(
        BUILD,
        "sql/build/030",
        "Of several rows of one calendar quarter, a row with a missing fyearq or fqtr ranks "
        "above (True) or below (False) a row that has it.",
        "The paper sorts 'by fiscal year and quarter' and keeps the last record without "
        "saying where a missing value sorts; the package sorts missing values last, so it "
        "keeps them; the paper's reading ranks them lowest. Exact ties keep the last raw row "
        "under every rule set, as the text's 'the last record is kept' does.",
        (False, True),
    )
    ytd_without_fqtr: bool = _rule(
        BUILD,
        "sql/build/040",
        "A row without fqtr passes its year-to-date flows through, and a row's previous "
        "quarter of its fiscal year is found in calendar order over rows with a fyearq "
        "(True); or its flows are missing and the previous quarter is found by (fqtr, "
        "quarter) over rows with both fiscal fields (False).",
        "The package converts only rows with fqtr > 1; the paper passes through fiscal Q1 "
        "and differences Q2-Q4 ('Year-to-date conversion'), which a row without fqtr is "
        "neither.",
        (False, True),
    )
    industry_over_raw_rows: bool = _rule(
        BUILD,
        "sql/build/060",
        "A firm's modal SIC is counted over every non-financial raw row, with 010's copies "
        "(True), or over the de-duplicated quarters (False).",
        "The package counts raw rows; the paper's panel is one row per firm-quarter.",
        (False, True),
    )
    keep_undeflatable_quarters: bool = _rule(
        BUILD,
        "sql/build/070",
        "A firm-quarter without a valid deflator keeps its values as leads and lags, "
        "deflated by the origin's z, but is never an origin nor in the statistics (True); "
        "or it is dropped from the panel (False).",
        "The package deflates every lead and lag by the origin's z; the paper's panel is the "
        "'deflator-valid firm-quarter panel'.",
        (False, True),
    )
    k_window_includes_cutoff: bool = _rule(
        BUILD,
        "sql/build/080",
        "k's training window holds the quarters through train_end_q, 2001Q4 (True), or "
        "those before it (False).",
        "The paper freezes k 'at the 2001Q4 estimation cutoff'; the package compares "
        "quarter-end instants with midnight of 2001-12-31, which leaves 2001Q4 out.",
        (False, True),
    )
    k_undefined_kurtosis: str = _rule(
        BUILD,
        "sql/build/080",
        "k of a pool whose excess kurtosis is never defined (under 4 values, or no spread): "
        "1 ('one') or the grid's smallest k ('smallest_grid_k': every grid point ties and "
        "ties go to the smallest).",
        "The paper leaves the case open. The package's default is k = 1; the project's "
        "reading of the paper applies the search's own tie rule.",
        ("one", "smallest_grid_k"),
    )
    k_untrained: str = _rule(
        BUILD,
        "sql/build/080",
        "k of an item (or the scale) without any training-period observation: the search "
        "over its whole pool, every quarter of the panel ('whole_panel', which looks "
        "ahead), or the median k of the items of its statement that have one "
        "('statement_median'; 1 if none).",
        "The paper leaves the case open (k is frozen at 2001Q4, and such an item has no "
        "data then). The package falls back to the whole pool; the project's reading of "
        "the paper does not look ahead.",
        ("whole_panel", "statement_median"),
    )
    k_without_pool: str = _rule(
        BUILD,
        "sql/build/080",
        "k of an item reported but without any lagged-ratio pool (no firm reports it at "
        "positions n and n-4): 1, recorded as no_pool ('one'), or its statement's median "
        "('statement_median').",
        "The paper leaves the case open; the package skips the item (k = 1, and with "
        "stats_quarters 'both_pools' no statistics, so no value).",
        ("one", "statement_median"),
    )
    stats_quarters: str = _rule(
        BUILD,
        "sql/build/090, 100",
        "Which quarters have raw statistics and how an origin's four-quarter means read "
        "them: only the quarters where both pools hold values, the origin's parameters the "
        "mean of the last four such quarters up to it ('both_pools'); or each statistic "
        "where its own observations exist, the parameters the mean of those available over "
        "the calendar quarters t-3..t ('calendar'). Either way a quarter's single-value or "
        "zero std counts as 1, and an item without statistics at an origin has no value "
        "there.",
        "The paper averages 'the four most recent raw statistics' and 'all means and "
        "standard deviations use available reported observations only' ('Cross-sectional "
        "standardization'); the package's rolling window runs over its statistics rows.",
        ("both_pools", "calendar"),
    )
    sigma_raw_floor: float = _rule(
        BUILD,
        "sql/build/090",
        "A constant added to every quarter's raw sigma (the divisor's own 1e-8 floor is "
        "added in 100 under every rule set).",
        "The package stores sigma_raw + 1e-8 and adds 1e-8 again at the divisor; the paper "
        "writes one 1e-8 floor.",
    )
    origin_history: str = _rule(
        BUILD,
        "sql/build/120",
        "Which scale-valid firm-quarters are origins: from the panel's min_history-th "
        "calendar quarter on, with statistics for the scale and for some item reported at "
        "t-3..t, train starting there ('panel_calendar'); or those with at least "
        "min_history quarters of the firm's own history, train from train_first_year "
        "('firm_history').",
        "The paper enforces the history per firm for the tuple view while its tabular "
        "build drops the panel's first three calendar quarters ('Origin eligibility and "
        "splits'), and says the two differ only at firm entry. The package's build is the "
        "tabular one. One origin set serves both views here (one truth grid, one common "
        "sample), so the paper's reading takes the per-firm rule for both.",
        ("panel_calendar", "firm_history"),
    )
    yoy_clip: float = _rule(
        BUILD,
        "sql/build/110, 160",
        "The bound of a year-over-year change in the tabular view (panel.rule_set.yoy_clip).",
        "The paper's bound is 6 sqrt 2; the package writes 6 x 1.4142.",
    )

    # -- scoring (sql/eval, sql/rounds) ------------------------------------------------
    sigma_floor: float | None = _rule(
        SCORING,
        "sql/eval/053, 054, 057",
        "Every sigma of a density forecast is floored at this value before the density "
        "terms (None: sigma as given).",
        "The paper scores Chronos-2's NLL 'under a 1e-4 scale floor'; an upload does not "
        "say which model made it, so the paper's reading floors every density file. The "
        "package's evaluator takes sigma as given.",
    )
    sigma_in_sample: bool = _rule(
        SCORING,
        "sql/eval/053, 054, 057",
        "A cell with an unusable sigma (not finite, or not > 0) leaves the sample (True), "
        "or keeps its point scores without density terms (False).",
        "The package scores the point of such a cell; the paper's tracks score a model on "
        "the cells it forecasts, a density model's cell being its (mu, sigma).",
        (False, True),
    )
    float32_residuals: bool = _rule(
        SCORING,
        "sql/eval/053, 054, 057",
        "A residual is rounded to float32 like sigma (True) or kept in double (False).",
        "The package's evaluator stores both in float32; its scores then agree to 1e-11 "
        "even where an R2 is near 0.",
        (False, True),
    )
    seasonal_rw_fill: str = _rule(
        SCORING,
        "app/scoring/baselines.py (sql/eval/090, 092)",
        "The seasonal random walk where the lagged quarter was not reported: the factor-"
        "imputed tabular view's fill, none where the imputation left a gap ('imputed'), or "
        "x_t ('baseline').",
        "The package predicts from its imputed tabular file; the paper leaves the case "
        "open, and the project's reading falls back to the no-change forecast.",
        ("imputed", "baseline"),
    )
    fade_fallback: str = _rule(
        SCORING,
        "sql/eval/087 (091, sql/rounds/081)",
        "The fade / AR(1) forecast of an (item, horizon) where OLS is impossible: the mean "
        "of x_(t+h) with under 100 cells or sxx <= 1e-12 ('mean_actual'), or x_t plus the "
        "mean change with under 100 cells or a non-finite fit ('mean_change'); x_t without "
        "any cell either way.",
        "The package's fall-back is the mean; the paper leaves the case open, and the "
        "project's reading keeps the fade's own form (x_t plus a drift).",
        ("mean_actual", "mean_change"),
    )

    def __post_init__(self) -> None:
        for rule in RULES.values():
            value = getattr(self, rule.name)
            if rule.choices and value not in rule.choices:
                raise UserError(
                    f"Rule set {self.name!r}: {rule.name} = {value!r} is none of "
                    f"{', '.join(map(repr, rule.choices))}"
                )
            if not rule.choices and value is not None and not _non_negative_number(value):
                raise UserError(
                    f"Rule set {self.name!r}: {rule.name} = {value!r} is no number >= 0"
                )

    def __str__(self) -> str:
        return self.name

    def variables(self) -> dict[str, Any]:
        """Every rule as the SQL variable of its name (None: the variable is unset)."""
        return {rule.name: getattr(self, rule.name) for rule in RULES.values()}

    def builds_like(self, other: RuleSet) -> bool:
        """Whether the two sets agree on every build rule (so build the same panel)."""
        return all(
            getattr(self, r.name) == getattr(other, r.name)
            for r in RULES.values()
            if r.stage == BUILD
        )

    @classmethod
    def parse(cls, value: object, where: str = "") -> RuleSet:
        """The declared rule set named `value` (a RuleSet or its name); a UserError naming
        the choices otherwise. `where` says whose value it is ("The build records ...").
        A RuleSet must be the one declared by its name: what a build records by name must
        read back as the same rules."""
        if isinstance(value, RuleSet):
            if _DECLARED.get(value.name) != value:
                raise UserError(
                    f"Rule set {value.name!r} is not declared: declare it (contracts/rules.py) "
                    "before a build or a score uses it"
                )
            return value
        found = _DECLARED.get(value) if isinstance(value, str) else None
        if found is None:
            lead = f"{where} an unknown rule set" if where else "Unknown rule set"
            raise UserError(f"{lead} {value!r}: use one of {', '.join(_DECLARED)}")
        return found


def _non_negative_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


#: Every rule by name, in declaration order.
RULES = {
    f.name: Rule(
        f.name, **{k: f.metadata[k] for k in ("stage", "where", "doc", "reason", "choices")}
    )
    for f in dataclasses.fields(RuleSet)
    if f.metadata
}

PUBLISHED = RuleSet(
    name="published",
    doc="The published benchmark package's reading, wherever it and the paper's text "
    "differ: its scores equal the package's on the same inputs.",
    link_window_copies=True,
    dedup_missing_fiscal_first=True,
    ytd_without_fqtr=True,
    industry_over_raw_rows=True,
    keep_undeflatable_quarters=True,
    k_window_includes_cutoff=False,
    k_undefined_kurtosis="one",
    k_untrained="whole_panel",
    k_without_pool="one",
    stats_quarters="both_pools",
    sigma_raw_floor=1e-8,
    origin_history="panel_calendar",
    yoy_clip=8.4852,  # 6 x 1.4142, the package's literal (exact in SQL's decimals)
    sigma_floor=None,
    sigma_in_sample=False,
    float32_residuals=True,
    seasonal_rw_fill="imputed",
    fade_fallback="mean_actual",
)

PAPER = RuleSet(
    name="paper",
    doc="The paper's text; where it leaves a case open, the project's documented reading "
    "(each rule's reason).",
    link_window_copies=False,
    dedup_missing_fiscal_first=False,
    ytd_without_fqtr=False,
    industry_over_raw_rows=False,
    keep_undeflatable_quarters=False,
    k_window_includes_cutoff=True,
    k_undefined_kurtosis="smallest_grid_k",
    k_untrained="statement_median",
    k_without_pool="statement_median",
    stats_quarters="calendar",
    sigma_raw_floor=0.0,
    origin_history="firm_history",
    yoy_clip=6.0 * math.sqrt(2.0),
    sigma_floor=1e-4,
    sigma_in_sample=True,
    float32_residuals=False,
    seasonal_rw_fill="baseline",
    fade_fallback="mean_change",
)

_DECLARED: dict[str, RuleSet] = {PUBLISHED.name: PUBLISHED, PAPER.name: PAPER}

#: The shipped rule sets' names, the default first.
RULE_SETS = (PUBLISHED.name, PAPER.name)
DEFAULT_RULES = PUBLISHED
#: A build that records no rule set was made before rule sets existed: under `paper`.
UNRECORDED_RULES = PAPER
#: The rules of the published package's own build: a panel built under rules that build
#: like it has the package's test grid (a positional sample mask matches it).
PACKAGE_BUILD = PUBLISHED


def declare(rules: RuleSet) -> RuleSet:
    """Make `rules` known by its name (to RuleSet.parse, so to a build or round that
    records it); a UserError if the name is another set's."""
    known = _DECLARED.get(rules.name)
    if known is not None and known != rules:
        raise UserError(f"Rule set {rules.name!r} is already declared with other values")
    _DECLARED[rules.name] = rules
    return rules


@contextmanager
def declared(rules: RuleSet) -> Iterator[RuleSet]:
    """`rules` declared inside the block only (a test's own rule set)."""
    if rules.name in RULE_SETS:
        raise UserError(f"Rule set {rules.name!r} is a shipped one")
    declare(rules)
    try:
        yield rules
    finally:
        _DECLARED.pop(rules.name, None)
