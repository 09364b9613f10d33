"""The prices table: US dollars per million tokens by provider and model, with the date
each price was read (reference/llm_prices.csv; another file via PROFORMA_LLM_PRICES).

Cost of a call = (input - cached input) x input price + cached input x cached price +
output x output price, output tokens including reasoning tokens (both vendors bill
reasoning as output). A model missing from the table has no cost (None), never 0.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from proforma.contracts import ROOT
from proforma.contracts.errors import UserError
from proforma.models.llm.calls import Completion

DEFAULT_PRICES = ROOT / "reference" / "llm_prices.csv"
_COLUMNS = (
    "provider",
    "model",
    "input_usd_per_mtok",
    "cached_input_usd_per_mtok",
    "output_usd_per_mtok",
    "as_of",
)


@dataclass(frozen=True)
class Price:
    input_usd_per_mtok: float
    cached_input_usd_per_mtok: float
    output_usd_per_mtok: float
    as_of: str

    def cost(self, c: Completion) -> float:
        uncached = max(0, c.input_tokens - c.cached_input_tokens)
        return (
            uncached * self.input_usd_per_mtok
            + c.cached_input_tokens * self.cached_input_usd_per_mtok
            + c.output_tokens * self.output_usd_per_mtok
        ) / 1e6


class PriceTable:
    def __init__(self, prices: dict[tuple[str, str], Price], source: Path):
        self.prices, self.source = prices, source

    def lookup(self, provider: str, model: str) -> Price | None:
        """The model's price; a dated model id (claude-opus-4-8-20260528) takes the price
        of the longest listed id it starts with."""
        if (provider, model) in self.prices:
            return self.prices[(provider, model)]
        prefixes = [m for p, m in self.prices if p == provider and model.startswith(m + "-")]
        return self.prices[(provider, max(prefixes, key=len))] if prefixes else None


def load_prices(path: Path | None = None) -> PriceTable:
    """Read and check the prices table (a bad file is a UserError naming the row)."""
    source = Path(path) if path else DEFAULT_PRICES
    try:
        with open(source, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise UserError(f"Cannot read the LLM prices table {source}: {exc.strerror}") from None
    prices = {}
    for n, row in enumerate(rows, start=2):
        missing = [c for c in _COLUMNS if not (row.get(c) or "").strip()]
        if missing:
            raise UserError(
                f"{source} line {n}: missing {', '.join(missing)} (columns: {', '.join(_COLUMNS)})"
            )
        try:
            values = [float(row[c]) for c in _COLUMNS[2:5]]
        except ValueError:
            raise UserError(f"{source} line {n}: prices must be numbers") from None
        if min(values) < 0:
            raise UserError(f"{source} line {n}: prices must not be negative")
        input_usd, cached_usd, output_usd = values
        prices[(row["provider"].strip(), row["model"].strip())] = Price(
            input_usd, cached_usd, output_usd, row["as_of"].strip()
        )
    return PriceTable(prices, source)
