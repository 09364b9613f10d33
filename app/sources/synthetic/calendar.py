"""Fiscal calendar: which month of a calendar quarter closes a fiscal quarter, and labels."""

from __future__ import annotations

import numpy as np

_EPOCH = np.datetime64("1970-01-01", "D")


def close_month(q: int | np.ndarray, fyr: np.ndarray) -> np.ndarray:
    """Month (1..12) in calendar quarter q in which a fiscal quarter of year-end fyr closes."""
    first = (np.asarray(q) % 4) * 3 + 1
    # the months congruent to fyr modulo 3 are the fiscal quarter ends
    return first + (fyr - first) % 3


def labels(
    q: int | np.ndarray, fyr: np.ndarray, month: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(fyearq, fqtr) of a fiscal quarter closing in `month` of calendar quarter q.

    Compustat's convention: a fiscal year ending in months 1-5 carries the previous
    calendar year's label; 6-12 carry the year in which it ends.
    """
    year = np.asarray(q) // 4
    fqtr = ((month - fyr - 1) % 12) // 3 + 1
    end_year = np.where(month <= fyr, year, year + 1)
    fyearq = np.where(fyr >= 6, end_year, end_year - 1)
    return fyearq, fqtr


def month_end_days(q: int | np.ndarray, month: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of the last day of `month` in the year of quarter q."""
    year = np.asarray(q) // 4
    first_next = (year - 1970) * 12 + month  # months since epoch of the following month
    return (np.datetime64("1970-01", "M") + first_next.astype("timedelta64[M]")).astype(
        "datetime64[D]"
    ).astype(np.int64) - 1


def quarter_start_days(q: np.ndarray) -> np.ndarray:
    """Days since epoch of the first day of quarter q."""
    months = (np.asarray(q) // 4 - 1970) * 12 + (np.asarray(q) % 4) * 3
    return (
        (np.datetime64("1970-01", "M") + months.astype("timedelta64[M]"))
        .astype("datetime64[D]")
        .astype(np.int64)
    )


def quarter_end_days(q: np.ndarray) -> np.ndarray:
    return quarter_start_days(np.asarray(q) + 1) - 1
