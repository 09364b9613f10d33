"""The error types, re-exported from contracts.errors (their one definition) so that code
importing them from here keeps working; new code imports contracts.errors."""

from contracts.errors import (
    MigrationError,
    NothingToScore,
    UserError,
    ValidationError,
    WarehouseLocked,
)

__all__ = ["MigrationError", "NothingToScore", "UserError", "ValidationError", "WarehouseLocked"]
