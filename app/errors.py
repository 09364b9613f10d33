"""Errors a user can cause. The CLI prints them as one line; the API as a 4xx."""


class UserError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = 2


class WarehouseLocked(UserError):
    """Another process holds the warehouse file open for writing."""


class MigrationError(UserError):
    """A migration file is invalid, was edited after being applied, or failed."""


class ValidationError(UserError):
    """Input data (a parquet file, a submission) failed validation; nothing was written."""

    def __init__(self, message: str, problems: list[dict] | None = None):
        super().__init__(message)
        self.problems = problems or []
