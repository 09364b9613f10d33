"""Calendar quarters as the warehouse numbers them: the ordinal year*4 + quarter - 1
(2001Q4 = 8007; docs/contracts.md, "Keys"). SQL has the same as macros (qord, qlabel)."""

from __future__ import annotations

import datetime as dt
import re

from proforma.contracts.errors import UserError

_QUARTER = re.compile(r"(\d{4})\s*[Qq]([1-4])")
_QUARTER_OR_DATE = re.compile(r"^(\d{4})(?:Q([1-4])|-(\d{2})-(\d{2}))$")


def quarter_ordinal(year: int, quarter: int) -> int:
    return year * 4 + quarter - 1


def parse_quarter(text: str) -> int:
    """'2015Q4' (or '2015 q4') -> its ordinal; a UserError otherwise."""
    m = _QUARTER.fullmatch(text.strip())
    if not m:
        raise UserError(f"Not a quarter: {text!r} (use e.g. 2015Q4)")
    return quarter_ordinal(int(m.group(1)), int(m.group(2)))


def quarter_label(q: int) -> str:
    """An ordinal as '2015Q4'."""
    return f"{q // 4}Q{q % 4 + 1}"


def check_quarter_or_date(text: str) -> str:
    """A quarter ('2009Q4') or a calendar date ('2009-12-31'), upper-cased; ValueError
    with what to write otherwise (for form fields such as a training cutoff)."""
    value = text.strip().upper()
    m = _QUARTER_OR_DATE.match(value)
    if not m:
        raise ValueError("write the last training quarter as 2009Q4 or a date as 2009-12-31")
    if m.group(3):
        try:
            dt.date(int(m.group(1)), int(m.group(3)), int(m.group(4)))
        except ValueError:
            raise ValueError(f"{value} is not a calendar date") from None
    return value
