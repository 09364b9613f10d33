"""The error types, re-exported from proforma.contracts.errors (their one definition) so that code
importing them from here keeps working; new code imports proforma.contracts.errors."""

from proforma.contracts.errors import (
    MigrationError,
    NothingToScore,
    UserError,
    ValidationError,
    WarehouseLocked,
)

__all__ = ["MigrationError", "NothingToScore", "UserError", "ValidationError", "WarehouseLocked"]
