"""Parameters of the synthetic panel (sizes, window, seed, oracle sample)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from proforma.contracts.errors import UserError
from proforma.contracts.quarters import quarter_label

#: Firms generated per scale. The demo keeps the whole demo pipeline fast on 2 cores
#: (about 45k raw firm-quarters); full is near the real panel (about 33k firms and
#: 1.2M firm-quarters after the build's trims and filters).
SCALE_FIRMS = {"demo": 1_000, "full": 34_000}
#: Oracle origins sampled from the test split per scale.
SCALE_ORACLE_ORIGINS = {"demo": 200, "full": 2_000}

TEST_START_YEAR = 2010
VAL_START_YEAR = 2002


@dataclass(frozen=True)
class SyntheticConfig:
    """What identifies one synthetic panel; equal configs give identical data."""

    firms: int = SCALE_FIRMS["demo"]
    start: int = 1971
    end: int = 2024
    seed: int = 20
    scale: str = "demo"
    oracle_origins: int = SCALE_ORACLE_ORIGINS["demo"]
    oracle_paths: int = 64
    oracle_horizon: int = 20
    # Variations for edge-rule checks (bench/parity.py); at their defaults the panel and
    # its recorded parameters are those of the generator without them.
    #: items no firm reports before VAL_START_YEAR (modern items without training data)
    no_train_items: tuple[str, ...] = ()
    #: items no firm reports before TEST_START_YEAR (items that appear only in test)
    test_only_items: tuple[str, ...] = ()
    #: share of firms that file a single quarter
    single_quarter_share: float = 0.0
    #: per firm-quarter probability of a fiscal-year change (two rows in one quarter);
    #: None: the generator's own (reporting.P_FYR_CHANGE)
    fyr_change_rate: float | None = None
    #: the panel grown forward (docs/rounds.md): the last simulated quarter (ordinal), past
    #: the design window's end. Firms, links, industry records and the oracle sample keep
    #: the design window's draws, so history through `end` is bit-identical and the new
    #: quarters come from the same process; None: the panel ends with `end`.
    through: int | None = None

    @classmethod
    def for_scale(cls, scale: str = "demo", **overrides: Any) -> SyntheticConfig:
        """Defaults of a scale, with explicit values (None = keep default) on top."""
        if scale not in SCALE_FIRMS:
            raise UserError(f"Unknown scale {scale!r}; choose one of {', '.join(SCALE_FIRMS)}")
        values: dict[str, Any] = {
            "scale": scale,
            "firms": SCALE_FIRMS[scale],
            "oracle_origins": SCALE_ORACLE_ORIGINS[scale],
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        cfg = cls(**values)
        cfg.check()
        return cfg

    def check(self) -> None:
        """Raise UserError for values that cannot make a panel."""
        if self.firms < 1:
            raise UserError(f"--firms must be at least 1 (got {self.firms})")
        if not 1950 <= self.start <= self.end <= 2100:
            raise UserError(f"Need 1950 <= --start <= --end <= 2100 (got {self.start}..{self.end})")
        if self.oracle_origins < 0 or self.oracle_paths < 1:
            raise UserError("Oracle origins must be >= 0 and paths >= 1")
        if not 1 <= self.oracle_horizon <= 20:
            raise UserError("Oracle horizon must be within 1..20")
        if not 0.0 <= self.single_quarter_share <= 1.0:
            raise UserError(
                f"--single-quarter-share must be within 0..1 (got {self.single_quarter_share})"
            )
        if self.fyr_change_rate is not None and not 0.0 <= self.fyr_change_rate <= 0.5:
            raise UserError(f"--fyr-change-rate must be within 0..0.5 (got {self.fyr_change_rate})")
        if self.through is not None and not self.q_end <= self.through <= 2100 * 4 + 3:
            raise UserError(
                f"--through must be a quarter at or after the end of {self.end} "
                f"(got {quarter_label(self.through)}); it grows the panel forward"
            )
        from proforma.app.sources.synthetic.items import raw_items

        known = {it.item for it in raw_items()}
        for flag, names in (
            ("--no-train-item", self.no_train_items),
            ("--test-only-item", self.test_only_items),
        ):
            unknown = [i for i in names if i not in known]
            if unknown:
                raise UserError(
                    f"{flag}: not a reported item: {', '.join(unknown)} "
                    "(computed items follow their inputs)"
                )

    @property
    def q_start(self) -> int:
        """First quarter ordinal (year*4 + quarter - 1)."""
        return self.start * 4

    @property
    def q_end(self) -> int:
        return self.end * 4 + 3

    @property
    def q_last(self) -> int:
        """The last simulated quarter: `through` when the panel is grown, else q_end."""
        return self.q_end if self.through is None else self.through

    @property
    def n_quarters(self) -> int:
        return self.q_last - self.q_start + 1

    def as_dict(self) -> dict[str, Any]:
        """The config; the edge-rule variations only where they differ from their defaults
        (so the default panel records the parameters it always did)."""
        out = asdict(self)
        for name, default in VARIATION_DEFAULTS.items():
            if out[name] == default:
                del out[name]
            elif isinstance(out[name], tuple):
                out[name] = list(out[name])
        return out


VARIATION_DEFAULTS: dict[str, Any] = {
    "no_train_items": (),
    "test_only_items": (),
    "single_quarter_share": 0.0,
    "fyr_change_rate": None,
    "through": None,
}
