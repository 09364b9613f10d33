"""Submissions: upload a parquet forecast file (token), list submissions, one submission's
scores by footprint, horizon and item."""

from __future__ import annotations

import datetime as dt
import re
import secrets
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticError

from app.api import auth
from app.api.deps import CurrentUser, JobsDep, SettingsDep, WarehouseDep
from app.api.errors import BadUpload, Conflict, NotFound, RateLimited
from app.api.formats import Format, FormatQuery, clean, table_response
from app.api.jobs import NewJob
from app.api.uploads import receive_upload
from app.warehouse import Warehouse

router = APIRouter(prefix="/submissions", tags=["submissions"])

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:+()\-]{0,79}$")
_CUTOFF = re.compile(r"^(\d{4})(?:Q([1-4])|-(\d{2})-(\d{2}))$")
# Key columns of a submission file and their accepted aliases (SPEC_NOTES §4).
REQUIRED_COLUMNS = {
    "firm": ("firm", "firm_id"),
    "target": ("target",),
    "origin": ("origin", "quarter"),
    "horizon": ("horizon", "forecast_horizon"),
    "prediction": ("prediction",),
}

_UPLOAD_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "name", "training_cutoff", "leakage_statement"],
                    "properties": {
                        "file": {"type": "string", "format": "binary",
                                 "description": "Parquet: firm, target, origin, horizon, prediction"
                                                "[, sigma] or [, quantile_level]"},
                        "name": {"type": "string", "description": "Model name (1-80 characters)"},
                        "description": {"type": "string"},
                        "code_url": {"type": "string", "description": "http(s) link to the code"},
                        "family": {"type": "string",
                                   "enum": ["gaussian", "laplace", "student_t", "quantile"]},
                        "df": {"type": "number", "description": "Student-t degrees of freedom (> 1)"},
                        "training_cutoff": {"type": "string", "description": "Last training quarter, e.g. 2009Q4"},
                        "leakage_statement": {"type": "string",
                                              "description": "What the model saw of the test period"},
                    },
                }
            }
        },
    }
}


class SubmissionMeta(BaseModel):
    """The metadata fields of an upload form."""

    name: str
    description: str = Field(default="", max_length=4000)
    code_url: str = Field(default="", max_length=500)
    family: str = "gaussian"
    df: float | None = None
    training_cutoff: str
    leakage_statement: str = Field(min_length=1, max_length=4000)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        v = v.strip()
        if not _NAME.match(v):
            raise ValueError("use 1-80 letters, digits, spaces or _ . : + ( ) -, starting with a letter or digit")
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
        v = v.strip().lower().replace("-", "_") or "gaussian"
        if v not in ("gaussian", "laplace", "student_t", "quantile"):
            raise ValueError("must be gaussian, laplace, student_t or quantile")
        return v

    @field_validator("training_cutoff")
    @classmethod
    def _cutoff(cls, v: str) -> str:
        v = v.strip().upper()
        m = _CUTOFF.match(v)
        if not m:
            raise ValueError("write the last training quarter as 2009Q4 or a date as 2009-12-31")
        if m.group(3):
            try:
                dt.date(int(m.group(1)), int(m.group(3)), int(m.group(4)))
            except ValueError:
                raise ValueError(f"{v} is not a calendar date") from None
        return v

    @field_validator("leakage_statement")
    @classmethod
    def _statement(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("say what the model saw of the test period (for example 'none')")
        return v.strip()

    @model_validator(mode="after")
    def _df(self) -> SubmissionMeta:
        if self.family == "student_t" and (self.df is None or self.df <= 1):
            raise ValueError("family student_t needs df > 1")
        if self.family != "student_t" and self.df is not None:
            raise ValueError("df applies only to family student_t")
        return self


def parse_meta(fields: dict[str, str]) -> SubmissionMeta:
    values: dict[str, Any] = {k: v for k, v in fields.items() if k in SubmissionMeta.model_fields}
    if values.get("df", "").strip() == "":
        values.pop("df", None)
    try:
        return SubmissionMeta(**values)
    except PydanticError as exc:
        problems = [
            {"field": ".".join(str(p) for p in e["loc"]) or "form",
             "problem": e["msg"].removeprefix("Value error, ")}
            for e in exc.errors()
        ]
        first = problems[0]
        missing = first["problem"] == "Field required"
        message = (f"The form field {first['field']!r} is required." if missing
                   else f"Invalid form field {first['field']!r}: {first['problem']}.")
        raise BadUpload(message, problems) from None


def check_name_free(wh: Warehouse, name: str) -> None:
    """409 when a current submission or an unfinished job already uses the model name."""
    taken = wh.fetchone(
        "SELECT submission_id FROM eval.submissions WHERE name = ? AND retired_at IS NULL", [name])
    if taken:
        raise Conflict(f"A submission named {name!r} exists already (id {taken[0]}); choose another name.")
    pending = wh.fetchone(
        "SELECT job_id FROM service.jobs WHERE model_name = ? AND status IN ('queued', 'validating', 'scoring')",
        [name])
    if pending:
        raise Conflict(f"Job {pending[0]} is already processing a submission named {name!r}.")


def check_parquet(path: Path) -> dict[str, Any]:
    """Cheap checks before queueing: parquet magic, readable footer, rows, key columns."""
    with open(path, "rb") as f:
        head = f.read(4)
        f.seek(-4, 2)
        tail = f.read(4)
    if head != b"PAR1" or tail != b"PAR1":
        raise BadUpload("The file is not parquet (no PAR1 magic bytes); export the forecasts with "
                        "pyarrow.parquet.write_table or DataFrame.to_parquet.")
    try:
        meta = pq.ParquetFile(path).metadata
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise BadUpload(f"The parquet file is damaged: {str(exc)[:200]}") from None
    if meta.num_rows == 0:
        raise BadUpload("The parquet file has no rows.")
    names = set(schema.names)
    problems = [
        {"column": key, "problem": f"missing (accepted names: {', '.join(aliases)})"}
        for key, aliases in REQUIRED_COLUMNS.items()
        if not names.intersection(aliases)
    ]
    if problems:
        missing = ", ".join(p["column"] for p in problems)
        raise BadUpload(f"The file lacks required column(s): {missing}.", problems)
    return {"rows": meta.num_rows, "columns": schema.names}


@router.post(
    "",
    status_code=202,
    summary="Upload a forecast parquet file (token); validation and scoring run in the background",
    openapi_extra=_UPLOAD_SCHEMA,
)
async def upload(
    request: Request, user: CurrentUser, wh: WarehouseDep, jobs: JobsDep, settings: SettingsDep
) -> dict[str, Any]:
    """Streams the file to disk (size-capped), checks the form and the parquet footer,
    then queues the job. Follow `status_url` for validating -> scoring -> done/failed."""
    limit = auth.daily_limit(user, settings.uploads_per_day)
    used = await run_in_threadpool(auth.uploads_today, wh, user)
    if used >= limit:
        raise RateLimited(
            f"User {user.name!r} has used today's {limit} upload(s); the limit resets at 00:00 UTC."
        )
    received = await receive_upload(request, Path(settings.upload_dir), settings.upload_max_bytes)
    try:
        meta = parse_meta(received.fields)
        await run_in_threadpool(check_name_free, wh, meta.name)
        info = await run_in_threadpool(check_parquet, received.path)
        final = received.path.with_name(f"upload-{received.sha256[:16]}-{secrets.token_hex(4)}.parquet")
        received.path.rename(final)
        received.path = final
        metadata = {
            **meta.model_dump(exclude={"name", "family", "df"}),
            "uploaded_by": user.name,
            "filename": received.filename,
            "sha256": received.sha256,
        }
        job_id = await run_in_threadpool(
            jobs.submit, wh,
            NewJob(user.user_id, meta.name, meta.family, meta.df, metadata, final, received.size, received.sha256),
        )
    except BaseException:
        received.path.unlink(missing_ok=True)
        raise
    return {
        "job_id": job_id,
        "status": "queued",
        "status_url": f"/api/v1/jobs/{job_id}",
        "name": meta.name,
        "bytes": received.size,
        "rows": info["rows"],
        "sha256": received.sha256,
    }


_LIST_SQL = """
SELECT s.submission_id, s.name, s.source, s.family, s.df, s.has_sigma, s.n_components,
       s.rows, s.cells, s.checksum, s.build_id, s.created_at, s.retired_at,
       json_extract_string(s.metadata, '$.description') AS description,
       json_extract_string(s.metadata, '$.code_url') AS code_url,
       json_extract_string(s.metadata, '$.training_cutoff') AS training_cutoff,
       json_extract_string(s.metadata, '$.leakage_statement') AS leakage_statement,
       json_extract_string(s.metadata, '$.uploaded_by') AS uploaded_by
FROM eval.submissions s
"""


def submission_record(wh: Warehouse, submission_id: int) -> dict[str, Any] | None:
    """The public record, with `stale`: why new score runs leave the submission out when
    it was made against an earlier panel (None when it is current)."""
    from app.scoring.metrics import stale_submissions

    table = wh.arrow(_LIST_SQL + " WHERE s.submission_id = ?", [submission_id])
    if not table.num_rows:
        return None
    record = table.to_pylist()[0]
    record["stale"] = stale_submissions(wh, [submission_id]).get(submission_id)
    return record


def submission_scores(wh: Warehouse, submission_id: int) -> list[dict[str, Any]]:
    """Per footprint, the latest score run that includes the submission: its metrics by
    level (global, horizon, item, statement), its coverage and its PIT histogram."""
    runs = wh.fetchall(
        """
        SELECT footprint_name, max(score_run_id)
        FROM eval.score_runs WHERE list_contains(submission_ids, ?)
        GROUP BY footprint_name ORDER BY footprint_name
        """,
        [submission_id],
    )
    out = []
    for footprint, run in runs:
        metrics = wh.arrow(
            """
            SELECT m.level, m.horizon, i.item, coalesce(m.statement, i.statement) AS statement,
                   m.n, m.r2, m.mse, m.mae, m.nll, m.crps, m.z2, m.cov50, m.cov80, m.cov90, m.cov95
            FROM eval.metrics m LEFT JOIN ref.items i USING (item_id)
            WHERE m.score_run_id = ? AND m.submission_id = ? AND m.level IN ('global', 'horizon', 'item', 'statement')
            ORDER BY m.level, m.horizon, m.item_id, m.statement
            """,
            [run, submission_id],
        ).to_pylist()
        coverage = wh.fetchone(
            "SELECT footprint_cells, predicted_cells, coverage FROM eval.coverage "
            "WHERE score_run_id = ? AND submission_id = ?",
            [run, submission_id],
        )
        pit = [r[0] for r in wh.fetchall(
            "SELECT share FROM eval.pit WHERE score_run_id = ? AND submission_id = ? ORDER BY bin",
            [run, submission_id],
        )]
        by_level: dict[str, list[dict[str, Any]]] = {}
        for m in metrics:
            by_level.setdefault(m.pop("level"), []).append(m)
        out.append({
            "footprint": footprint,
            "score_run_id": run,
            "coverage": dict(zip(("footprint_cells", "predicted_cells", "coverage"), coverage, strict=True))
            if coverage else None,
            "global": (by_level.get("global") or [None])[0],
            "by_horizon": by_level.get("horizon", []),
            "by_item": by_level.get("item", []),
            "by_statement": by_level.get("statement", []),
            "pit": pit,
        })
    return out


@router.get("", summary="All submissions (public records); JSON or CSV")
def list_submissions(
    wh: WarehouseDep, format: FormatQuery = Format.json
) -> Response:
    table = wh.arrow(_LIST_SQL + " ORDER BY s.submission_id")
    return table_response(table, format, "submissions")


@router.get("/{submission_id}", summary="One submission: record and scores per footprint")
def get_submission(submission_id: int, wh: WarehouseDep) -> dict[str, Any]:
    record = submission_record(wh, submission_id)
    if record is None:
        raise NotFound(f"No submission {submission_id}.")
    return clean({"submission": record, "scores": submission_scores(wh, submission_id)})
