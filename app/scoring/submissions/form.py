"""The upload form's metadata fields and the cheap checks of a forecast file that run
before a job is queued (the full validation runs in the job: open_forecast_file and the
row checks). Shared by the service's door (proforma.app.api.upload_form) and the client's
local check (proforma.client.checks), so a file that passes here is not refused there for
a reason the client could have seen; nothing here needs the web server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticError

from proforma.app.scoring.submissions.uploads import column_report
from proforma.contracts import families
from proforma.contracts.errors import UserError
from proforma.contracts.forecasts import SUBMISSION_COLUMNS, accepted_names
from proforma.contracts.quarters import check_quarter_or_date

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:+()\-]{0,79}$")
# Key columns of a submission file and their accepted aliases (docs/scoring.md).
REQUIRED_COLUMNS = {column: accepted_names(column) for column in SUBMISSION_COLUMNS}


class FormRefused(UserError):
    """A malformed form field or a file refused by the cheap checks (the door answers 422)."""

    status_code = 422

    def __init__(self, message: str, problems: list[dict] | None = None):
        super().__init__(message)
        self.problems = problems or []


class SubmissionMeta(BaseModel):
    """The metadata fields of an upload form."""

    name: str
    description: str = Field(default="", max_length=4000)
    code_url: str = Field(default="", max_length=500)
    family: str = families.DEFAULT_FAMILY
    df: float | None = None
    training_cutoff: str
    leakage_statement: str = Field(min_length=1, max_length=4000)
    # the model card (issue 49; sql/service/submission_records.sql makes them columns)
    model_family: str = Field(default="", max_length=80)
    parameters: int | None = Field(default=None, ge=0)
    compute_hours: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    hardware: str = Field(default="", max_length=200)
    seeds: str = Field(default="", max_length=200)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        v = v.strip()
        if not _NAME.match(v):
            raise ValueError(
                "use 1-80 letters, digits, spaces or _ . : + ( ) -, starting with a letter or digit"
            )
        return v

    @field_validator("code_url")
    @classmethod
    def _url(cls, v: str) -> str:
        v = v.strip()
        if v and not re.match(r"^https?://[^\s<>\"']+$", v):
            raise ValueError("must be an http:// or https:// link")
        return v

    @field_validator("family")
    @classmethod
    def _family(cls, v: str) -> str:
        v = families.normalize(v)
        known = families.submission_families()
        if v not in known:
            raise ValueError(f"must be {', '.join(known[:-1])} or {known[-1]}")
        return v

    @field_validator("training_cutoff")
    @classmethod
    def _cutoff(cls, v: str) -> str:
        return check_quarter_or_date(v)

    @field_validator("model_family", "hardware", "seeds")
    @classmethod
    def _card_text(cls, v: str) -> str:
        return v.strip()

    @field_validator("leakage_statement")
    @classmethod
    def _statement(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("say what the model saw of the test period (for example 'none')")
        return v.strip()

    @model_validator(mode="after")
    def _df(self) -> SubmissionMeta:
        problems = families.param_problems(self.family, {"df": self.df})
        if problems:
            raise ValueError("; ".join(problems))
        return self


def parse_meta(fields: dict[str, str]) -> SubmissionMeta:
    values: dict[str, Any] = {k: v for k, v in fields.items() if k in SubmissionMeta.model_fields}
    for optional in ("df", "parameters", "compute_hours"):  # an empty field is no value
        if values.get(optional, "").strip() == "":
            values.pop(optional, None)
    try:
        return SubmissionMeta(**values)
    except PydanticError as exc:
        problems = [
            {
                "field": ".".join(str(p) for p in e["loc"]) or "form",
                "problem": e["msg"].removeprefix("Value error, "),
            }
            for e in exc.errors()
        ]
        first = problems[0]
        missing = first["problem"] == "Field required"
        message = (
            f"The form field {first['field']!r} is required."
            if missing
            else f"Invalid form field {first['field']!r}: {first['problem']}."
        )
        raise FormRefused(message, problems) from None


def check_parquet(path: Path) -> dict[str, Any]:
    """Cheap checks before queueing: parquet magic, readable footer, rows, key columns,
    column names (duplicate or ambiguous ones refused; unknown ones are `warnings`)."""
    with open(path, "rb") as f:
        head = f.read(4)
        f.seek(-4, 2)
        tail = f.read(4)
    if head != b"PAR1" or tail != b"PAR1":
        raise FormRefused(
            "The file is not parquet (no PAR1 magic bytes); export the forecasts with "
            "pyarrow.parquet.write_table or DataFrame.to_parquet."
        )
    try:
        meta = pq.ParquetFile(path).metadata
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        # the reader's message names the server's path: keep only what it says of the file
        detail = str(exc).splitlines()[0].replace(str(path), "the file")
        raise FormRefused(f"The parquet file is damaged: {detail[:200]}") from None
    if meta.num_rows == 0:
        raise FormRefused("The parquet file has no rows.")
    found, warnings = column_report(schema.names)
    if found:
        raise FormRefused(
            f"The file's columns are ambiguous: {found[0]}.",
            [{"column": "", "problem": text} for text in found],
        )
    names = {n.lower() for n in schema.names}
    problems = [
        {"column": key, "problem": f"missing (accepted names: {', '.join(aliases)})"}
        for key, aliases in REQUIRED_COLUMNS.items()
        if not names.intersection(aliases)
    ]
    if problems:
        missing = ", ".join(p["column"] for p in problems)
        raise FormRefused(f"The file lacks required column(s): {missing}.", problems)
    return {"rows": meta.num_rows, "columns": schema.names, "warnings": warnings}
