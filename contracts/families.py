"""One definition per density family (docs/models.md, "Density families" and "Adding a
density family").

A density forecast is a location mu (the file's `prediction`), a scale sigma (`sigma`)
and the family that turns them into a distribution, with any shape parameter the family
has (Student-t's `df`). Everything that depends on the family reads it here:

- the scoring SQL: the per-cell terms of single forecasts (sql/eval/057) and of
  equal-weight mixtures (054) hold `{{ family_... }}` slots that
  `proforma.app.store.family_sql` fills from this registry when a step is read, so what
  runs, and the scoring-SQL version, follow the definitions;
- the checks of every door (the family a submission names, its shape parameters and
  their bounds: `check_params`), the upload form's options and the help of the command
  line and the API (`describe`);
- the dollars of a density (models/dollars.py: `sinh_factor`) and the in-house Forma
  model's calibration (`standard_cdf`).

The SQL terms are expressions over one cell (single forecasts) or one component
(mixtures): `w = (actual - mu) / s` and `aw = |w|` with `s` the sigma as scored (floored
and rounded as the rule set says); a family's shape parameter is the session variable
`getvariable('<name>')` (the submission's value). A family can stage helper columns that
its terms share (computed once per row). A new family is one `Family` added to
`FAMILIES` (tests/api/test_api_family_toy.py adds a logistic one).

Pure data: this module imports nothing of the project.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The family of a quantile forecast (a grid of levels, no density; sql/eval/056).
QUANTILE_FAMILY = "quantile"
#: A round's word for a file without sigma (its point forecast is scored, no density).
POINT_FAMILY = "point"


@dataclass(frozen=True)
class Param:
    """A shape parameter beyond mu and sigma. It travels as the submission's column of its
    name (eval.submissions, rounds.submissions), the `--<name>` option, the form's and
    the API's field and the session variable `getvariable('<name>')`; today `df` is the
    one such column (a new name needs its column: a migration)."""

    name: str
    description: str
    #: Accepted values: low < value <= high.
    low: float
    high: float
    #: Why the bounds (shown with a refusal).
    why: str = ""

    def accepts(self, value: float) -> bool:
        return self.low < value <= self.high


@dataclass(frozen=True)
class Helper:
    """A column a family's terms share, computed once per row: `sql` reads w, aw, s, the
    family's parameters and the helpers of earlier stages."""

    name: str
    sql: str


@dataclass(frozen=True)
class SingleTerms:
    """The per-cell terms of one forecast (sql/eval/057) over w, aw and s."""

    #: -log f(actual): the density of the actual (its log includes -ln s).
    nll: str
    #: F(actual), the PIT u.
    cdf: str
    #: The closed-form CRPS; None where there is none (the cell gets no CRPS).
    crps: str | None
    #: Helper columns in stages: a stage reads the columns of those before it.
    stages: tuple[tuple[Helper, ...], ...] = ()
    #: Session variables set before the view is made (`SET VARIABLE name = sql` when the
    #: submission is of this family, NULL otherwise): constants of one submission.
    setup: tuple[Helper, ...] = ()


@dataclass(frozen=True)
class MixtureTerms:
    """The per-component terms of an equal-weight mixture (sql/eval/054) over w, aw and s
    of one component. The mixture's CRPS, E|X - y| - E|X - X'| / 2, needs the three CRPS
    terms; without them its cells get no CRPS."""

    #: log f_k(actual).
    log_density: str
    #: F_k(actual).
    cdf: str
    helpers: tuple[Helper, ...] = ()
    #: E|X_k - y|.
    crps_first: str | None = None
    #: E|X_k - X_k'| of two independent copies of one component.
    crps_diagonal: str | None = None
    #: E|X_a - X_b| of two components, over dm = mu_a - mu_b, their sigmas sa and sb,
    #: sp = sqrt(sa^2 + sb^2) and ap = |dm| / sp.
    crps_pair: str | None = None

    @property
    def has_crps(self) -> bool:
        return None not in (self.crps_first, self.crps_diagonal, self.crps_pair)


@dataclass(frozen=True)
class Family:
    name: str
    #: The name on the upload form.
    label: str
    #: What sigma is for this family (help texts, the docs).
    description: str
    single: SingleTerms
    mixture: MixtureTerms
    params: tuple[Param, ...] = ()
    #: E[exp(a (X - mu))] for X of this family with sigma s, as a function of
    #: spread = (a s)^2 / 2 (numpy arrays in and out; inf where it diverges): the dollars'
    #: mean is this factor times the plug-in value (models/dollars.py). None: no finite
    #: mean in dollars (NaN).
    sinh_factor: Callable[[Any], Any] | None = None
    #: The CDF of the standardized residual (y - mu) / sigma (numpy); None for a family
    #: with shape parameters. The in-house Forma model's calibration reads it.
    standard_cdf: Callable[[Any], Any] | None = None

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def _gaussian_sinh(spread: Any) -> Any:
    import numpy as np

    return np.exp(spread)


def _laplace_sinh(spread: Any) -> Any:
    import numpy as np

    bounded = np.where(spread < 1.0, spread, 0.0)
    return np.where(spread < 1.0, 1.0 / (1.0 - bounded), np.inf)


def _gaussian_cdf(z: Any) -> Any:
    from scipy.special import ndtr  # here: scipy costs every CLI start 0.1 s

    return ndtr(z)


def _laplace_cdf(z: Any) -> Any:
    import numpy as np

    t = np.sqrt(2.0) * z
    return np.where(t < 0, 0.5 * np.exp(np.minimum(t, 0)), 1 - 0.5 * np.exp(-np.maximum(t, 0)))


_DF = "getvariable('df')"

# The Student-t CDF: for a whole df from 2 to 100, its closed form (Abramowitz and
# Stegun 26.7.3-4; theta = atan(|w| / sqrt df), c = cos^2 theta = df / (df + w^2)):
# A = 2 P(T <= |w|) - 1 is (2 / pi) (theta + sin theta cos theta p(c)) for an odd df and
# sin theta p(c) for an even one, p the polynomial of floor(df / 2) terms whose
# coefficients, in getvariable('t_series'), are the products of 2j / (2j + 1) (odd df) or
# (2j - 1) / 2j (even df) for j <= k. It agrees with scipy's stdtr, the published
# evaluator's, to 2e-15 and costs a tenth of a Python call. Any other df goes to the
# Python UDF eval_t_cdf (stdtr itself: SQL has no incomplete beta function); df 1 too,
# where stdtr strays from the exact 1/2 + atan(w) / pi by 1e-9 near 0 and parity keeps
# stdtr's values.
_T_SERIES = f"""CASE WHEN {_DF} = round({_DF}) AND {_DF} BETWEEN 2 AND 100
    THEN list_transform(
        range(0, CAST(floor({_DF} / 2) AS BIGINT)),
        lambda k: coalesce(list_aggregate(list_transform(
            range(1, k + 1),
            lambda j: CASE WHEN {_DF} % 2 = 1 THEN 2 * j / (2 * j + 1)
                           ELSE (2 * j - 1) / (2 * j) END), 'product'), 1.0))
    END"""
#: p(c) by Horner's rule (the series' last coefficient first), c = df / (df + w^2).
_T_POLY = f"""CASE WHEN getvariable('t_series') IS NOT NULL
         THEN list_reduce(list_reverse(getvariable('t_series')),
                          lambda acc, a: acc * {_DF} / ({_DF} + aw * aw) + a)
    END"""
_T_CDF_ABS = f"""CASE
         WHEN getvariable('t_series') IS NULL THEN eval_t_cdf(aw, {_DF})
         WHEN {_DF} % 2 = 1
         THEN 0.5 + (atan(aw / sqrt({_DF}))
                     + aw * sqrt({_DF}) / ({_DF} + aw * aw) * t_poly) / pi()
         ELSE 0.5 + 0.5 * aw / sqrt({_DF} + aw * aw) * t_poly
    END"""
_T_CRPS = f"""CASE WHEN {_DF} > 1 THEN s * (
        aw * (2 * t_cdf_abs - 1)
        + 2 * exp(eval.t_logpdf(aw, {_DF})) * ({_DF} + aw * aw) / ({_DF} - 1)
        - 2 * sqrt({_DF}) * eval.beta_fn(0.5, {_DF} - 0.5)
          / (({_DF} - 1) * eval.beta_fn(0.5, {_DF} / 2) * eval.beta_fn(0.5, {_DF} / 2))) END"""


def _registry(*families: Family) -> dict[str, Family]:
    return {f.name: f for f in families}


#: Every density family, in the order of the form's options and the help texts. The first
#: is the default of a file with a sigma and no family named.
FAMILIES: dict[str, Family] = _registry(
    Family(
        name="gaussian",
        label="Gaussian",
        description="sigma the standard deviation",
        single=SingleTerms(
            # Phi(w) = 1 - tail when w > 0, else tail; w (2 Phi(w) - 1) = |w| (1 - 2 tail).
            nll="0.5 * ln(2 * pi()) + ln(s) + w * w / 2",
            cdf="CASE WHEN w < 0 THEN tail ELSE 1 - tail END",
            crps="s * (aw * (1 - 2 * tail) + 2 * gauss_exp / sqrt(2 * pi()) - 1 / sqrt(pi()))",
            # the exponent exp(-w^2 / 2), shared by the tail, the density and the CRPS
            stages=(
                (Helper("gauss_exp", "exp(-aw * aw / 2)"),),
                (Helper("tail", "eval.norm_tail_given(aw, gauss_exp)"),),
            ),
        ),
        mixture=MixtureTerms(
            log_density="-0.5 * ln(2 * pi()) - ln(s) - w * w / 2",
            cdf="CASE WHEN w > 0 THEN 1 - tail ELSE tail END",
            helpers=(Helper("tail", "eval.norm_tail(aw)"),),
            # Gneiting's A = s (|w| (1 - 2 tail) + 2 phi(w)); Grimit's pair terms
            crps_first="s * (aw * (1 - 2 * tail) + 2 * eval.norm_pdf(aw))",
            crps_diagonal="2 * s / sqrt(pi())",
            crps_pair="sp * (ap * (1 - 2 * eval.norm_tail(ap)) + 2 * eval.norm_pdf(ap))",
        ),
        sinh_factor=_gaussian_sinh,
        standard_cdf=_gaussian_cdf,
    ),
    Family(
        name="laplace",
        label="Laplace",
        description="sigma the standard deviation; scale b = sigma / sqrt 2",
        single=SingleTerms(
            nll="ln(2 * s / sqrt(2)) + aw * sqrt(2)",
            cdf=(
                "CASE WHEN w < 0 THEN 0.5 * exp(-aw * sqrt(2)) "
                "ELSE 1 - 0.5 * exp(-aw * sqrt(2)) END"
            ),
            crps="(s / sqrt(2)) * (aw * sqrt(2) + exp(-aw * sqrt(2)) - 0.75)",
        ),
        mixture=MixtureTerms(
            log_density="-ln(2 * s / sqrt(2)) - aw * sqrt(2)",
            cdf=(
                "CASE WHEN w < 0 THEN 0.5 * exp(w * sqrt(2)) ELSE 1 - 0.5 * exp(-w * sqrt(2)) END"
            ),
            # |d| + b exp(-|d| / b) and 3 b / 2, b = s / sqrt 2
            crps_first="s * aw + s / sqrt(2) * exp(-aw * sqrt(2))",
            crps_diagonal="1.5 * s / sqrt(2)",
            crps_pair="eval.laplace_pair(dm, sa / sqrt(2), sb / sqrt(2))",
        ),
        sinh_factor=_laplace_sinh,
        standard_cdf=_laplace_cdf,
    ),
    Family(
        name="student_t",
        label="Student-t",
        description="sigma the scale; df its degrees of freedom",
        params=(
            Param(
                "df",
                "Degrees of freedom",
                low=1.0,
                high=1e6,
                # df > 1: the t's mean, and so its CRPS, exists only there; beyond 1e6 the
                # t is the Gaussian to 1e-6, and log-gamma loses every digit of the density
                why="the mean (and the CRPS) needs df > 1; beyond 1e6 use family gaussian",
            ),
        ),
        single=SingleTerms(
            nll=f"ln(s) - eval.t_logpdf(w, {_DF})",
            cdf="CASE WHEN w < 0 THEN 1 - t_cdf_abs ELSE t_cdf_abs END",
            crps=_T_CRPS,
            stages=((Helper("t_poly", _T_POLY),), (Helper("t_cdf_abs", _T_CDF_ABS),)),
            setup=(Helper("t_series", _T_SERIES),),
        ),
        # Student-t mixtures: no closed-form CRPS
        mixture=MixtureTerms(
            log_density=f"eval.t_logpdf(w, {_DF}) - ln(s)",
            cdf="t_cdf",
            helpers=(Helper("t_cdf", f"eval_t_cdf(w, {_DF})"),),
        ),
    ),
)

#: The family of a file with a sigma that names none.
DEFAULT_FAMILY: str = next(iter(FAMILIES))


def density_families() -> tuple[str, ...]:
    """The density families, in registry order."""
    return tuple(FAMILIES)


def submission_families() -> tuple[str, ...]:
    """Every family a submission may declare: the densities and the quantile forecast."""
    return (*FAMILIES, QUANTILE_FAMILY)


def is_density(family: str | None) -> bool:
    return family in FAMILIES


def param_names() -> tuple[str, ...]:
    """Every shape parameter some family has (each a submission column)."""
    return tuple(dict.fromkeys(p.name for f in FAMILIES.values() for p in f.params))


def families_with(param: str) -> tuple[str, ...]:
    return tuple(f.name for f in FAMILIES.values() if f.param(param) is not None)


def form_params() -> list[tuple[Param, str]]:
    """Each shape parameter once with the labels of the families that have it ("Student-t"):
    the upload forms' fields."""
    return [
        (
            next(p for f in FAMILIES.values() for p in f.params if p.name == name),
            " or ".join(f.label for f in FAMILIES.values() if f.param(name) is not None),
        )
        for name in param_names()
    ]


def normalize(name: str | None) -> str:
    """A family name as written on a form: case and '-' folded ("Student-t" is student_t);
    "" is the default. Unknown names come back folded (the checks refuse them)."""
    return (name or "").strip().lower().replace("-", "_") or DEFAULT_FAMILY


def param_problems(family: str, values: dict[str, float | None], option: str = "") -> list[str]:
    """What is wrong with a submission's shape parameters for `family` (each message names
    the parameter as `{option}{name}`, e.g. "--df"): a parameter the family has missing or
    out of its bounds, or one it does not have given."""
    spec = FAMILIES.get(family)
    own = spec.params if spec is not None else ()
    problems = []
    for name in dict.fromkeys([*values, *(p.name for p in own)]):
        value = values.get(name)
        param = spec.param(name) if spec is not None else None
        if param is None:
            if value is not None:
                owners = " or ".join(families_with(name))
                problems.append(f"{option}{name} applies only to family {owners}, not {family}")
            continue
        need = f"family {family} needs {option}{name} > {param.low:g} and <= {param.high:g}"
        if value is None:
            problems.append(need)
        elif not (math.isfinite(value) and param.accepts(float(value))):
            problems.append(f"{need} ({param.why}; got {value:g})")
    return problems


def describe(*, quantile: bool = False, point: bool = False) -> str:
    """The families for a help text: "gaussian (sigma the standard deviation), ...";
    the quantile forecast and a round's point family where they apply."""
    parts = [f"{f.name} ({f.description})" for f in FAMILIES.values()]
    if quantile:
        parts.append(f"{QUANTILE_FAMILY} (a {QUANTILE_FAMILY}_level column)")
    if point:
        parts.append(f"{POINT_FAMILY} (no sigma column)")
    return ", ".join(parts)
