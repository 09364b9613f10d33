"""The upload form of POST /api/v1/submissions: its OpenAPI description, and its metadata
fields and the parquet file's cheap checks as the door answers them (BadUpload, a 422
with its problems). The checks themselves live in proforma.app.scoring.submissions.form,
where the client's local check runs the same code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proforma.app.read.errors import BadUpload
from proforma.app.scoring.submissions import form
from proforma.app.scoring.submissions.form import REQUIRED_COLUMNS, SubmissionMeta
from proforma.contracts import families

__all__ = ["REQUIRED_COLUMNS", "UPLOAD_SCHEMA", "SubmissionMeta", "check_parquet", "parse_meta"]

UPLOAD_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "name", "training_cutoff", "leakage_statement"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "Parquet: firm, target, origin, horizon, prediction"
                            "[, sigma] or [, quantile_level]",
                        },
                        "name": {"type": "string", "description": "Model name (1-80 characters)"},
                        "description": {"type": "string"},
                        "code_url": {"type": "string", "description": "http(s) link to the code"},
                        # the registry's families (contracts/families.py) as the app starts
                        "family": {
                            "type": "string",
                            "enum": list(families.submission_families()),
                            "description": families.describe(quantile=True),
                        },
                        "df": {
                            "type": "number",
                            "description": "Degrees of freedom of "
                            + " or ".join(families.families_with("df")),
                        },
                        "training_cutoff": {
                            "type": "string",
                            "description": "Last training quarter, e.g. 2009Q4",
                        },
                        "leakage_statement": {
                            "type": "string",
                            "description": "What the model saw of the test period",
                        },
                        # the model card (issue 49): columns of the submission's record
                        "model_family": {
                            "type": "string",
                            "description": "Model family (default: the name); a board shows "
                            "one entry per uploader and family by default, the latest",
                        },
                        "parameters": {"type": "integer", "description": "Parameter count"},
                        "compute_hours": {
                            "type": "number",
                            "description": "Training compute in hours",
                        },
                        "hardware": {
                            "type": "string",
                            "description": "Training hardware (e.g. 1x H100)",
                        },
                        "seeds": {
                            "type": "string",
                            "description": "Random seeds of the run (e.g. 1, 2, 3)",
                        },
                    },
                }
            }
        },
    }
}


def parse_meta(fields: dict[str, str]) -> SubmissionMeta:
    try:
        return form.parse_meta(fields)
    except form.FormRefused as exc:
        raise BadUpload(str(exc), exc.problems) from None


def check_parquet(path: Path) -> dict[str, Any]:
    try:
        return form.check_parquet(path)
    except form.FormRefused as exc:
        raise BadUpload(str(exc), exc.problems) from None
