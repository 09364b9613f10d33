"""Errors a user can cause. The CLI prints them as one line (exit 2); the API as a 4xx
with a JSON body. Anything else is a bug and keeps its traceback."""

from __future__ import annotations

from typing import Any


class UserError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = 2


class WarehouseLocked(UserError):
    """Another process holds the warehouse file open for writing."""


class MigrationError(UserError):
    """A migration file is invalid, was edited after being applied, or failed."""


class ValidationError(UserError):
    """Input data (a parquet file, a submission) failed validation; nothing was written."""

    def __init__(self, message: str, problems: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.problems = problems or []


class NothingToScore(UserError):
    """A score run has no sample: no submission covers enough of the footprint, or the
    submissions' common sample is empty. Nothing was written."""
