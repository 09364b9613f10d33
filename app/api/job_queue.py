"""The upload job queue: validation and scoring in a background thread, persisted.

Every upload becomes a `service.jobs` row (status `queued`, proforma.app.api.job_store) before
the HTTP response goes out; one worker thread takes jobs in order on its own warehouse cursor
(docs/architecture.md, "One writer") and moves them through `validating` (the scoring
layer's `ingest_parquet`, one transaction) and `scoring` to `done` or `failed`, keeping
the validation report. Validated jobs wait until the queue is empty and are then scored
together (one `score` run per footprint covers them all), so a burst of uploads costs
one scoring pass, after which the public snapshot is republished. The uploaded file
stays on disk until the job ends.

Killing the server at any point loses nothing: on start, unfinished jobs are taken up
again. A job that was `validating` first looks for a submission already ingested for it
(the ingest records `service_job_id` in its metadata, in the same transaction), so a
kill between ingest and status update never ingests twice; a `scoring` job re-scores
(each score run is its own transaction). A job interrupted `MAX_ATTEMPTS` times fails
cleanly with that reason instead of looping.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from proforma.app.api.job_store import (
    FAMILY_FROM_FILE,
    UNFINISHED,
    NewJob,
    Queued,
    finish_job,
    get_job,
    insert_job,
    set_job,
    unfinished_jobs,
)
from proforma.app.api.telemetry import ServiceMetrics, request_id
from proforma.app.read.errors import http_status
from proforma.app.scoring.runs import MIN_COVERAGE
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, out_of_disk
from proforma.contracts.errors import NothingToScore, UserError, ValidationError
from proforma.contracts.provenance import utcnow

log = logging.getLogger("proforma.jobs")

MAX_ATTEMPTS = 3
MAX_BATCH = 25
_STOP = object()


class Scorer:
    """The scoring layer as the queue uses it (proforma.app.scoring; replaceable in tests)."""

    def ingest_parquet(self, wh: Warehouse, path: Path, name: str, **kw: Any) -> int:
        from proforma.app import scoring

        return scoring.ingest_parquet(wh, path, name, **kw)

    def submit_round(
        self, wh: Warehouse, path: Path, round_name: str, name: str, **kw: Any
    ) -> dict:
        """A round file, checked by the static reader and stored in the round
        (proforma.app.rounds.submit_file): its record."""
        from proforma.app.rounds import submit_file

        return submit_file(wh, round_name, path, name, **kw)

    def score(self, wh: Warehouse, footprint: str, exclude: list[int] | None = None) -> int:
        from proforma.app import scoring

        return scoring.score(wh, footprint=footprint, exclude=exclude or ())

    def shares(self, wh: Warehouse, footprint: str, submission_ids: list[int]) -> dict[int, float]:
        """{submission_id: share of the footprint's cells it predicts}."""
        from proforma.app.scoring.runs import footprint_shares

        return footprint_shares(wh, footprint, submission_ids)

    def has_run(self, wh: Warehouse, footprint: str) -> bool:
        return bool(
            wh.scalar("SELECT count(*) FROM eval.score_runs WHERE footprint_name = ?", [footprint])
        )

    def failures(self, wh: Warehouse, submission_ids: list[int]) -> dict[int, str]:
        """{submission_id: error} of these submissions whose scoring failed (this context)."""
        from proforma.app.scoring.cells import failed_submissions, scoring_context

        return failed_submissions(wh, scoring_context(wh), submission_ids)

    def retire(self, wh: Warehouse, submission_id: int) -> None:
        """Take a failed upload's submission out of service (no active submission stays)."""
        from proforma.app.scoring.submissions.current import retire_submission

        retire_submission(wh, submission_id)

    def footprints(self, wh: Warehouse) -> list[str]:
        """Names of the footprints every new submission is scored on (the paper's three
        are created on first use)."""
        from proforma.app import scoring

        scoring.ensure_standard_footprints(wh)
        return [
            r[0] for r in wh.fetchall("SELECT DISTINCT name FROM eval.footprints ORDER BY name")
        ]

    def submission_for_job(self, wh: Warehouse, job_id: int) -> int | None:
        """A submission an earlier, interrupted attempt of this job already ingested."""
        if not wh.table_exists("eval.submissions"):
            return None
        return wh.scalar(
            "SELECT max(submission_id) FROM eval.submissions "
            "WHERE json_extract_string(metadata, '$.service_job_id') = ?",
            [str(job_id)],
        )

    def warnings(self, wh: Warehouse, submission_id: int) -> list[Any]:
        if not wh.table_exists("eval.submissions"):
            return []
        raw = wh.scalar(
            "SELECT warnings FROM eval.submissions WHERE submission_id = ?", [submission_id]
        )
        value = json.loads(raw) if isinstance(raw, str) else raw
        if value is None:
            return []
        return value if isinstance(value, list) else [value]


class JobQueue:
    """One worker thread over a persistent queue of upload jobs."""

    def __init__(
        self,
        wh: Warehouse,
        settings: Settings,
        *,
        scorer: Scorer | None = None,
        after_scoring: Callable[[Warehouse], Any] | None = None,
        metrics: ServiceMetrics | None = None,
    ):
        self.wh = wh
        self.settings = settings
        self.scorer = scorer or Scorer()
        self.after_scoring = after_scoring
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._cursor: Warehouse | None = None
        self._stopping = threading.Event()
        self.current: int | None = None
        self.metrics = metrics
        #: the request that queued each job (for its log lines; not kept across restarts)
        self._origins: dict[int, str | None] = {}

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> list[int]:
        """Take up unfinished jobs (oldest first) and start the worker; returns their ids."""
        resumed = self.recover()
        self._cursor = self.wh.cursor()
        self._thread = threading.Thread(target=self._run, name="proforma-jobs", daemon=True)
        self._thread.start()
        return resumed

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the worker; a job in flight is interrupted and resumes on the next start."""
        self._stopping.set()
        self._queue.put(_STOP)
        if self._cursor is not None and self.current is not None:
            with contextlib.suppress(Exception):
                self._cursor.con.interrupt()
        if self._thread is not None:
            self._thread.join(timeout)
        while True:  # a backup asked for and never started is answered, not left waiting
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, tuple) and item[0] == "backup":
                item[2].cancel()
        if self._cursor is not None:
            with contextlib.suppress(Exception):
                self._cursor.close()

    def recover(self) -> list[int]:
        resumed = []
        for job_id, status, attempts, path in unfinished_jobs(self.wh):
            if attempts >= MAX_ATTEMPTS:
                self._fail(
                    self.wh,
                    job_id,
                    (
                        f"The server stopped {attempts} times while this job was {status}; "
                        f"it is not retried again. Upload the file once more."
                    ),
                )
                continue
            if status != "scoring" and not Path(path).exists():
                self._fail(
                    self.wh,
                    job_id,
                    "The uploaded file was lost before validation; upload it again.",
                )
                continue
            resumed.append(job_id)
            self._queue.put(job_id)
        if resumed:
            log.info("resuming %d unfinished job(s): %s", len(resumed), resumed)
        return resumed

    def pending(self) -> int:
        return self._queue.qsize() + (1 if self.current is not None else 0)

    # -- submitting ------------------------------------------------------------------
    def submit(
        self, wh: Warehouse, job: NewJob, *, daily_limit: int | None = None
    ) -> Queued | None:
        """Record a queued job (committed before this returns) and hand it to the worker;
        None (nothing recorded) when the user has made `daily_limit` jobs today; the
        earlier job, not handed over again, when the job repeats an idempotency key."""
        queued = insert_job(wh, job, daily_limit=daily_limit)
        if queued is not None and not queued.repeated:
            self._origins[queued.job_id] = request_id.get()
            log.info(
                "job %s queued",
                queued.job_id,
                extra={"job_id": queued.job_id, "status": "queued"},
            )
            self._queue.put(queued.job_id)
        return queued

    def alive(self) -> bool:
        """Whether the worker thread runs (False before start and after it stopped)."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def started(self) -> bool:
        """Whether the worker was started (an app made with start_jobs=False has none)."""
        return self._thread is not None

    def _finish(self, wh: Warehouse, job_id: int, status: str, **values: Any) -> None:
        """End a job (job_store.finish_job) and write its log line."""
        finish_job(wh, job_id, status, **values)
        origin = self._origins.pop(job_id, None)
        log.info(
            "job %s %s%s",
            job_id,
            status,
            f": {values['message']}" if values.get("message") else "",
            extra={"job_id": job_id, "status": status, "request_id": origin},
        )

    def request_publish(self) -> None:
        """Republish the public snapshot in the worker (first, when called before start):
        the server answers meanwhile, with the previous snapshot."""
        self._queue.put(("publish",))

    def request_backup(self, folder: Path) -> Future:
        """Back up the warehouse and its files into `folder` in the worker, between jobs
        (proforma.app.flows.backup): no upload is validated or scored meanwhile, so each
        submission is in the backup whole or not at all. The future holds the result."""
        done: Future = Future()
        self._queue.put(("backup", folder, done))
        return done

    def request_score(self, footprint: str) -> None:
        """Score every current submission on `footprint` in the worker (after queued jobs)."""
        self._queue.put(("score", footprint))

    # -- the worker ------------------------------------------------------------------
    def _run(self) -> None:
        """Validate jobs one by one; score the validated ones together once the queue is
        empty (or MAX_BATCH are waiting), so a burst of uploads costs one scoring pass."""
        assert self._cursor is not None
        cur = self._cursor
        ready: list[int] = []
        while not self._stopping.is_set():
            if ready and (self._queue.empty() or len(ready) >= MAX_BATCH):
                self.current = ready[0]
                self._guarded(ready, self._score_jobs, cur, ready)
                ready, self.current = [], None
                continue
            item = self._queue.get()
            if item is _STOP:
                break
            self.current = item
            token = request_id.set(None if isinstance(item, tuple) else self._origins.get(item))
            try:
                self._take(cur, item, ready)
            finally:
                request_id.reset(token)
            self.current = None

    def _take(self, cur: Warehouse, item: Any, ready: list[int]) -> None:
        """One item of the queue: a publication, a backup, a footprint to score or a job
        to validate (added to `ready` when it waits for scoring)."""
        if isinstance(item, tuple) and item[0] == "publish":
            if self.after_scoring is not None:
                self.after_scoring(cur)  # (its failures are recorded for /health)
        elif isinstance(item, tuple) and item[0] == "backup":
            self._backup(cur, item[1], item[2])
        elif isinstance(item, tuple):
            if ready:  # finish validated jobs first: the footprint run includes them
                self._guarded(list(ready), self._score_jobs, cur, list(ready))
                ready.clear()
            self._score_footprint(cur, item[1])
        elif self._guarded([item], self._validate, cur, item):
            ready.append(item)

    def _backup(self, wh: Warehouse, folder: Path, done: Future) -> None:
        from proforma.app.flows.backup import make_backup

        if not done.set_running_or_notify_cancel():
            return
        try:
            result = make_backup(wh, self.settings, folder)
        except Exception as exc:  # noqa: BLE001 - handed to the requester, worker goes on
            if not isinstance(exc, UserError):
                log.error("backup to %s failed:\n%s", folder, traceback.format_exc())
            if self.metrics is not None:
                self.metrics.backups.labels("failed").inc()
            done.set_exception(exc)
        else:
            log.info(result.line())
            if self.metrics is not None:
                self.metrics.backups.labels("ok").inc()
            done.set_result(result)

    def _guarded(self, job_ids: list[int], step: Callable[..., Any], *args: Any) -> Any:
        """Run a step; any error fails its jobs with one clear message (shutdown excepted)."""
        try:
            return step(*args)
        except duckdb.InterruptException:
            if self._stopping.is_set():
                log.info("jobs %s interrupted by shutdown; they resume on the next start", job_ids)
                return None
            message = "The job was interrupted."
        except UserError as exc:
            message = str(exc)
        except duckdb.OutOfMemoryException:
            log.error("jobs %s ran out of memory:\n%s", job_ids, traceback.format_exc())
            message = (
                "The server ran out of memory for this job (DuckDB's limit, "
                "PROFORMA_MEMORY_LIMIT, is too low for this file); nothing was written. "
                "Try again later or ask the operator to raise the limit."
            )
        except Exception as exc:  # noqa: BLE001 - reported on the job, logged in full
            log.error("jobs %s failed:\n%s", job_ids, traceback.format_exc())
            if out_of_disk(exc):
                message = (
                    "The server's disk is full (its warehouse or temporary folder, "
                    "PROFORMA_TEMP_DIRECTORY); nothing was written. Try again later or ask "
                    "the operator to free space."
                )
            else:
                message = (
                    f"Internal error while processing the job ({type(exc).__name__}); "
                    f"the operator's log has the details."
                )
        assert self._cursor is not None
        for job_id in job_ids:
            with contextlib.suppress(Exception):
                self._fail(self._cursor, job_id, message)
        with contextlib.suppress(Exception):
            record_pass(self._cursor, [{"jobs": job_ids, "error": message}])
        if self.metrics is not None:
            self.metrics.scoring_failures.inc()
        return None

    def _fail(self, wh: Warehouse, job_id: int, message: str, **values: Any) -> None:
        """Fail a job; a submission it already ingested is retired (never left active)."""
        job = get_job(wh, job_id)
        if job is not None and job["submission_id"] is not None:
            self.scorer.retire(wh, int(job["submission_id"]))
        self._finish(wh, job_id, "failed", message=message, **values)

    def _passed(self, wh: Warehouse, failures: list[dict[str, Any]], started: float) -> None:
        """Record a scoring pass (for /health) and measure it (for /metrics)."""
        record_pass(wh, failures)
        if self.metrics is not None:
            self.metrics.scoring.observe(time.perf_counter() - started)
            if failures:
                self.metrics.scoring_failures.inc(len(failures))

    def _score_footprint(self, wh: Warehouse, footprint: str) -> None:
        started = time.perf_counter()
        try:
            run = self.scorer.score(wh, footprint)
            if self.after_scoring is not None:
                self.after_scoring(wh)
            log.info("footprint %s scored: run %s", footprint, run)
            self._passed(wh, [], started)
        except UserError as exc:
            log.warning("footprint %s not scored: %s", footprint, exc)
        except Exception as exc:  # noqa: BLE001 - the worker must survive
            log.error("footprint %s not scored:\n%s", footprint, traceback.format_exc())
            with contextlib.suppress(Exception):
                self._passed(wh, [{"footprint": footprint, "error": _describe(exc)}], started)

    def _validate(self, wh: Warehouse, job_id: int) -> bool:
        """Ingest the job's file (once); True when the job waits for scoring."""
        job = get_job(wh, job_id)
        if job is None or job["status"] not in UNFINISHED:
            return False
        set_job(wh, job_id, attempts=job["attempts"] + 1, started_at=job["started_at"] or utcnow())
        if job["status"] == "scoring":
            return True
        set_job(wh, job_id, status="validating")
        if job["round_name"] is not None:
            self._enter_round(wh, job)
            return False
        submission_id = self.scorer.submission_for_job(wh, job_id)
        if submission_id is None:
            metadata = {**job["metadata"], "service_job_id": job_id}
            try:
                submission_id = self.scorer.ingest_parquet(
                    wh,
                    Path(job["upload_path"]),
                    job["model_name"],
                    family=job["family"],
                    df=job["df"],
                    metadata=metadata,
                )
            except ValidationError as exc:
                self._finish(
                    wh,
                    job_id,
                    "failed",
                    message=str(exc),
                    report={"valid": False, "problems": exc.problems, "warnings": []},
                )
                return False
        warnings = self.scorer.warnings(wh, submission_id)
        set_job(
            wh,
            job_id,
            status="scoring",
            submission_id=submission_id,
            report={"valid": True, "problems": [], "warnings": warnings},
        )
        return True

    def _enter_round(self, wh: Warehouse, job: dict[str, Any]) -> None:
        """A round job: the file is checked and stored in its round (no scoring: the round
        resolves as its quarters are filed). Refusals end the job with the HTTP status the
        round's own error carries (403 late, 409 taken, 422 refused)."""
        job_id, round_name = job["job_id"], job["round_name"]
        prior = wh.fetchone(
            "SELECT s.submission_id, s.rows FROM rounds.submissions s JOIN rounds.rounds r "
            "USING (round_id) WHERE r.name = ? AND json_extract_string(s.metadata, "
            "'$.service_job_id') = ?",
            [round_name, str(job_id)],
        )
        if prior is not None:  # stored before a kill: never twice
            record = {"submission_id": prior[0], "rows": prior[1], "warnings": []}
        else:
            try:
                record = self.scorer.submit_round(
                    wh,
                    Path(job["upload_path"]),
                    round_name,
                    job["model_name"],
                    family=None if job["family"] == FAMILY_FROM_FILE else job["family"],
                    df=job["df"],
                    metadata={**job["metadata"], "service_job_id": job_id},
                )
            except UserError as exc:
                self._finish(
                    wh,
                    job_id,
                    "failed",
                    message=str(exc),
                    report={
                        "valid": False,
                        "status_code": http_status(exc),
                        "problems": getattr(exc, "problems", None) or [],
                        "warnings": [],
                    },
                )
                return
        self._finish(
            wh,
            job_id,
            "done",
            report={
                "valid": True,
                "round": round_name,
                "record": json.loads(json.dumps(record, default=str)),
                "warnings": record.get("warnings", []),
            },
        )

    def _score_jobs(self, wh: Warehouse, job_ids: list[int]) -> None:
        """One scoring pass per footprint for all waiting jobs, then publish and finish.

        A submission enters a footprint's run only when it covers enough of it
        (proforma.app.scoring.runs.MIN_COVERAGE); otherwise it is noted on its job, like a dash
        in the paper's tables: the submission is simply not on that leaderboard.
        """
        started = time.perf_counter()
        jobs = [j for j in (get_job(wh, i) for i in job_ids) if j and j["status"] == "scoring"]
        if not jobs:
            return
        done = _ScoringPass(new=[int(j["submission_id"]) for j in jobs])
        for footprint in self.scorer.footprints(wh):
            # Only footprints a new submission enters are rescored: the others' boards
            # would not change (a footprint never scored yet is scored for its board).
            if self.scorer.has_run(wh, footprint):
                too_few = self._too_few_cells(wh, footprint, done.new)
                if too_few is not None:
                    done.skipped[footprint] = too_few
                    continue
            self._score_with_new(wh, footprint, jobs, done)
            for job in jobs:
                set_job(wh, job["job_id"], score_runs=done.runs)
        failed = {**done.blamed, **self.scorer.failures(wh, done.new)}
        done.failures += [{"submission_id": sid, "error": why} for sid, why in failed.items()]
        self._fail_unscorable(wh, jobs, failed, done.runs)
        jobs = [j for j in jobs if int(j["submission_id"]) not in failed]
        self._passed(wh, done.failures, started)
        if self.after_scoring is not None:
            self.after_scoring(wh)
        for job in jobs:
            self._finish_scored(wh, job, done)

    def _too_few_cells(self, wh: Warehouse, footprint: str, new: list[int]) -> dict | None:
        """{submission: why} when no new submission covers enough of the footprint to
        enter its board, else None."""
        shares = self.scorer.shares(wh, footprint, new)
        if any(v >= MIN_COVERAGE for v in shares.values()):
            return None
        return {
            sid: f"predicts {share:.1%} of its cells; a submission enters "
            f"a footprint's leaderboard from {MIN_COVERAGE:.0%}"
            for sid, share in shares.items()
        }

    def _score_with_new(
        self, wh: Warehouse, footprint: str, jobs: list[dict[str, Any]], done: _ScoringPass
    ) -> None:
        """Score one footprint with the new submissions; when that fails for a reason of
        theirs, score it without them (its board keeps the others) and blame them."""
        new = done.new
        try:
            done.runs[footprint] = int(self.scorer.score(wh, footprint))
        except NothingToScore as exc:
            done.skipped[footprint] = str(exc)
            with contextlib.suppress(UserError):
                self.scorer.score(wh, footprint, exclude=new)
        except UserError:
            raise
        except duckdb.InterruptException:
            raise
        except Exception as exc:
            if out_of_disk(exc) or isinstance(exc, duckdb.OutOfMemoryException):
                raise
            log.error("footprint %s failed:\n%s", footprint, traceback.format_exc())
            done.failures.append({"footprint": footprint, "error": _describe(exc)})
            # The board keeps its other submissions: score it without the new ones;
            # when that works, the new ones caused the failure.
            try:
                done.runs[footprint] = int(self.scorer.score(wh, footprint, exclude=new))
            except Exception:  # noqa: BLE001 - logged; the footprint stays as it was
                log.error("footprint %s failed again:\n%s", footprint, traceback.format_exc())
                done.skipped[footprint] = "this footprint could not be scored (operator's log)"
            else:
                for sid in new:
                    done.blamed.setdefault(sid, f"scoring on {footprint} failed ({_describe(exc)})")
        else:
            done.skipped.update(_left_out(wh, done.runs[footprint], footprint, jobs))

    def _fail_unscorable(
        self,
        wh: Warehouse,
        jobs: list[dict[str, Any]],
        failed: dict[int, str],
        runs: dict[str, int],
    ) -> None:
        for job in jobs:
            sid = int(job["submission_id"])
            if sid in failed:
                self._fail(
                    wh,
                    job["job_id"],
                    f"The submission could not be scored: {failed[sid]}. Nothing of it is "
                    f"kept; check its values (docs/scoring.md, 'Submission format') and "
                    f"upload it again.",
                    score_runs=runs,
                )

    def _finish_scored(self, wh: Warehouse, job: dict[str, Any], done: _ScoringPass) -> None:
        """A scored job done: the footprints it is on, and why not on the others."""
        report = {**(job["report"] or {})}
        mine = {
            fp: why
            for fp, why in done.skipped.items()
            if not isinstance(why, dict) or job["submission_id"] in why
        }
        report["footprints_skipped"] = {
            fp: (why[job["submission_id"]] if isinstance(why, dict) else why)
            for fp, why in mine.items()
        }
        scored = ", ".join(fp for fp in done.runs if fp not in mine) or "none"
        note = f" Not on {', '.join(mine)}: too few of its cells predicted." if mine else ""
        self._finish(
            wh,
            job["job_id"],
            "done",
            score_runs=done.runs,
            report=report,
            message=f"Scored on {scored}.{note}",
        )


@dataclass
class _ScoringPass:
    """What one scoring pass over the footprints found for the waiting jobs."""

    new: list[int]  # the jobs' submissions
    runs: dict[str, int] = field(default_factory=dict)  # footprint -> its run
    #: footprint -> why it was left out (text), or {submission: why} for each new one
    skipped: dict[str, Any] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    blamed: dict[int, str] = field(default_factory=dict)  # submission -> why its run failed


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"


def record_pass(wh: Warehouse, failures: list[dict[str, Any]]) -> None:
    """Record the outcome of a scoring pass for /api/v1/health (failures: what failed)."""
    wh.execute(
        "INSERT INTO service.scoring_passes (finished_at, ok, failures) VALUES (?, ?, ?)",
        [utcnow(), not failures, json.dumps(failures, default=str)],
    )


def scoring_health(wh: Warehouse) -> dict[str, Any]:
    """The scoring part of /api/v1/health: `ok`, `failing` (the worker's last scoring pass
    had a failure: a submission it had to leave out, or a footprint it could not score)
    or `idle` (no pass yet)."""
    row = wh.fetchone(
        "SELECT finished_at, ok, failures, (SELECT count(*) FROM service.scoring_passes "
        "WHERE NOT ok) FROM service.scoring_passes ORDER BY pass_id DESC LIMIT 1"
    )
    if row is None:
        return {"status": "idle"}
    out: dict[str, Any] = {"status": "ok" if row[1] else "failing", "last_pass_at": row[0]}
    if not row[1]:
        failures = json.loads(row[2]) if isinstance(row[2], str) else row[2]
        out["last_failure"] = {"failed_at": row[0], "failures": failures}
    return out


def _left_out(wh: Warehouse, run_id: int, footprint: str, jobs: list[dict[str, Any]]) -> dict:
    """{footprint: {submission_id: reason}} for job submissions the run did not admit."""
    ids = [j["submission_id"] for j in jobs]
    rows = wh.fetchall(
        "SELECT c.submission_id, c.coverage FROM eval.coverage c "
        "JOIN eval.score_runs r USING (score_run_id) WHERE c.score_run_id = ? "
        "AND list_contains(?, c.submission_id) AND NOT list_contains(r.submission_ids, c.submission_id)",
        [run_id, ids],
    )
    if not rows:
        return {}
    return {
        footprint: {
            sid: f"predicts {float(cov or 0):.1%} of its cells; a submission enters "
            f"a footprint's leaderboard from 95%"
            for sid, cov in rows
        }
    }
