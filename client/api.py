"""`proforma.client.Client`: the service from Python (a notebook, a script), and what
`proforma remote` runs. Reads come back as Arrow tables (`.to_pandas()` where pandas is
installed) or plain dicts; uploads are checked locally with the server's own checks,
sent once whatever the network does, and followed to their scores."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import pyarrow as pa

from proforma.client import checks
from proforma.client.config import Config, load_config
from proforma.client.errors import ClientError
from proforma.client.http import Http
from proforma.client.jobs import follow
from proforma.client.tables import from_lists, from_records
from proforma.client.upload import RETRY_WAITS, new_key, post_file
from proforma.contracts import families


@dataclass
class Submitted:
    """An upload's outcome: its job, and once scored its submission, scores and ranks."""

    job_id: int
    #: True when a retry found the file had arrived already (one job, one upload)
    repeated: bool
    job: dict[str, Any]
    submission_id: int | None = None
    #: per footprint: the global metrics of the latest run that includes the submission
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per footprint and track: the submission's rank and the board's size
    ranks: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    #: a round submission's record (rows, cells, warnings)
    record: dict[str, Any] | None = None


Events = Callable[[str], None]
Progress = Callable[[int, int], None]


class Client:
    """A client of one ProForma-20Q server. Server and token come from the arguments,
    else PROFORMA_SERVER / PROFORMA_TOKEN, else ~/.config/proforma/client.json."""

    def __init__(
        self,
        server: str | None = None,
        token: str | None = None,
        *,
        timeout_s: float = 60.0,
        retry_waits: tuple[float, ...] = RETRY_WAITS,
        http: Http | None = None,
    ):
        self.config: Config = http.config if http else load_config(server, token)
        self.http = http or Http(self.config, timeout=timeout_s)
        self.retry_waits = retry_waits

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- who and what ------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self.http.get_json("/health")

    def me(self) -> dict[str, Any]:
        """The token's user, role and uploads left today."""
        return self.http.get_json("/users/me", token=True)

    def keys(self) -> dict[str, list[str]]:
        """The panel's keys: `firms` (the gvkeys a file may name), `items` (the targets)
        and `test_origins` (the static benchmark's origin quarters)."""
        return self.http.get_json("/reference/keys")

    def firms(self) -> list[str]:
        """The panel's firm keys (gvkeys) a file may name."""
        return list(self.keys()["firms"])

    # -- checks -------------------------------------------------------------------------
    def check(
        self,
        path: str | Path,
        *,
        family: str | None = None,
        df: float | None = None,
        form: dict[str, str] | None = None,
    ) -> checks.CheckReport:
        """Check a file (and a static upload's form fields) with the server's checks,
        here; raises FileRefused with every problem."""
        if form is not None:
            checks.check_form(form)
        return checks.check_file(path, self.firms(), family=family, df=df)

    # -- uploads ------------------------------------------------------------------------
    def submit(
        self,
        path: str | Path,
        name: str,
        *,
        training_cutoff: str,
        leakage_statement: str,
        family: str | None = None,
        df: float | None = None,
        description: str = "",
        code_url: str = "",
        check: bool = True,
        wait: bool = True,
        on_event: Events = lambda text: None,
        on_progress: Progress | None = None,
        idempotency_key: str | None = None,
        timeout_s: float | None = None,
    ) -> Submitted:
        """Check, upload once, follow the job and read the scores and ranks. A failed
        job raises its error (FileRefused with the server's problems, Conflict...)."""
        path = Path(path)
        fields = checks.form_fields(
            name,
            training_cutoff=training_cutoff,
            leakage_statement=leakage_statement,
            family=family,
            df=df,
            description=description,
            code_url=code_url,
        )
        if check:
            report = self.check(path, family=family, df=df, form=fields)
            on_event(f"checked {path.name}: {report.rows:,} rows, family {report.family}")
            for w in report.warnings:
                on_event(f"warning: {w['problem']} ({w['count']:,} rows)")
        _, body = self._send("/submissions", path, fields, idempotency_key, on_event, on_progress)
        out = Submitted(int(body["job_id"]), bool(body.get("repeated")), body)
        on_event(f"job {out.job_id} " + ("(found after the retry)" if out.repeated else "queued"))
        if not wait:
            return out
        out.job = follow(self.http, out.job_id, on_event, timeout_s=timeout_s)
        out.submission_id = out.job.get("submission_id")
        if out.submission_id is not None:
            out.scores = self.global_scores(out.submission_id)
            out.ranks = self.ranks(out.submission_id, list(out.scores))
        return out

    def submit_round(
        self,
        round_name: str,
        path: str | Path,
        name: str,
        *,
        family: str | None = None,
        df: float | None = None,
        check: bool = True,
        on_event: Events = lambda text: None,
        on_progress: Progress | None = None,
        idempotency_key: str | None = None,
        timeout_s: float | None = None,
    ) -> Submitted:
        """A file for an open round: checked here, sent once, stored by the server (the
        round resolves as its quarters are filed)."""
        path = Path(path)
        if check:
            report = self.check(path, family=family, df=df)
            on_event(f"checked {path.name}: {report.rows:,} rows, family {report.family}")
        fields = {"name": name, "family": family or "", "df": "" if df is None else repr(df)}
        fields = {k: v for k, v in fields.items() if v}
        status, body = self._send(
            f"/rounds/{round_name}/submissions",
            path,
            fields,
            idempotency_key,
            on_event,
            on_progress,
        )
        out = Submitted(int(body["job_id"]), bool(body.get("repeated")), body)
        if status == 201:
            out.record = body
            return out
        out.job = follow(self.http, out.job_id, on_event, timeout_s=timeout_s)
        out.record = (out.job.get("report") or {}).get("record")
        return out

    def _send(
        self,
        path: str,
        file: Path,
        fields: dict[str, str],
        key: str | None,
        on_event: Events,
        on_progress: Progress | None,
    ) -> tuple[int, dict[str, Any]]:
        total = file.stat().st_size
        sent = 0

        def on_bytes(n: int) -> None:
            nonlocal sent
            sent = 0 if n < 0 else sent + n
            if on_progress is not None:
                on_progress(sent, total)

        return post_file(
            self.http,
            path,
            file,
            fields,
            key=key or new_key(),
            on_bytes=on_bytes,
            on_retry=lambda text: on_event(f"network: {text}"),
            waits=self.retry_waits,
        )

    def job(self, job_id: int) -> dict[str, Any]:
        return self.http.get_json(f"/jobs/{job_id}", token=True)

    def jobs(self, limit: int = 50) -> pa.Table:
        rows = self.http.get_json("/jobs", token=True, params={"limit": limit})
        return from_records([], rows)

    def follow(self, job_id: int, on_event: Events = lambda text: None) -> dict[str, Any]:
        """Wait for a job's end; a failed job raises its error."""
        return follow(self.http, job_id, on_event)

    # -- reads --------------------------------------------------------------------------
    def leaderboards(self) -> dict[str, Any]:
        """The footprints with their latest runs, the tracks and the breakdowns."""
        return self.http.get_json("/leaderboards")

    def leaderboard(
        self,
        footprint: str = "full",
        track: str = "squared",
        by: str = "global",
        *,
        against: str | None = None,
        run: int | None = None,
    ) -> pa.Table:
        """One board (footprint x track x breakdown) as a table, rank first."""
        params = {"track": track, "by": by, "against": against, "run": run}
        body = self.http.get_json(
            f"/leaderboards/{footprint}", params={k: v for k, v in params.items() if v is not None}
        )
        return from_records(body["columns"], body["rows"])

    def submissions(self) -> pa.Table:
        body = self.http.get_json("/submissions")
        return from_records(body["columns"], body["rows"])

    def submission(self, submission_id: int) -> dict[str, Any]:
        """A submission's public record and its scores per footprint (every level)."""
        return self.http.get_json(f"/submissions/{submission_id}")

    def scores(self, submission_id: int, level: str = "global") -> pa.Table:
        """A submission's metrics on every footprint it is scored on, at one level: global,
        horizon, item or statement (one row per footprint and group)."""
        keys = {
            "global": "global",
            "horizon": "by_horizon",
            "item": "by_item",
            "statement": "by_statement",
        }
        if level not in keys:
            raise ClientError(f"level must be global, horizon, item or statement (got {level!r})")
        rows = []
        for scored in self.submission(submission_id)["scores"]:
            found = scored.get(keys[level])
            for metrics in [found] if level == "global" else found or []:
                if metrics:
                    where = {
                        "footprint": scored["footprint"],
                        "score_run_id": scored["score_run_id"],
                    }
                    rows.append(where | metrics)
        return from_records([], rows)

    def global_scores(self, submission_id: int) -> dict[str, dict[str, Any]]:
        """{footprint: the global metrics and coverage} of a submission."""
        return {
            s["footprint"]: {**(s.get("global") or {}), **(s.get("coverage") or {})}
            for s in self.submission(submission_id)["scores"]
        }

    def ranks(
        self, submission_id: int, footprints: list[str]
    ) -> dict[str, dict[str, tuple[int, int]]]:
        """The submission's rank on each footprint's boards (the tracks it is on)."""
        tracks = [t["name"] for t in self.leaderboards()["tracks"]]
        out: dict[str, dict[str, tuple[int, int]]] = {}
        for footprint in footprints:
            for track in tracks:
                board = self.leaderboard(footprint, track).to_pylist()
                mine = [r for r in board if r.get("submission_id") == submission_id]
                if mine and mine[0].get("rank") is not None:
                    out.setdefault(footprint, {})[track] = (int(mine[0]["rank"]), len(board))
        return out

    def footprints(self) -> pa.Table:
        body = self.http.get_json("/footprints")
        return from_records(body["columns"], body["rows"])

    def rounds(self) -> pa.Table:
        """Every round: its origin, deadline, state and resolution."""
        return from_records([], self.http.get_json("/rounds")["rounds"])

    def round(self, name: str) -> dict[str, Any]:
        """One round: its frozen inputs, resolution per horizon and leaderboard."""
        return self.http.get_json(f"/rounds/{name}")

    def live(self) -> pa.Table:
        """The live leaderboard: models ranked across the resolved rounds."""
        return from_records([], self.http.get_json("/rounds/live")["models"])

    def tables(self) -> dict[str, list[dict[str, str]]]:
        """The public snapshot's tables and their columns (the SQL console's schema)."""
        return self.http.get_json("/query/tables")["tables"]

    def query(self, sql: str) -> pa.Table:
        """One SELECT on the public snapshot, run by the server's SQL console."""
        answer = self._post_json("/query", {"sql": sql})
        return from_lists(answer["columns"], answer["rows"])

    def _post_json(self, path: str, payload: dict[str, Any]) -> Any:
        return self.http.send("POST", path, json=payload).json()

    def snapshot(self, out: str | Path) -> Path:
        """Download the public snapshot to `out` (a DuckDB file: duckdb.connect(out,
        read_only=True) for local SQL); written whole or not at all."""
        out = Path(out)
        tmp = out.with_name(f".{out.name}.part")
        try:
            with open(tmp, "wb") as f:
                self.http.download("/public/snapshot", f)
            tmp.replace(out)
        finally:
            tmp.unlink(missing_ok=True)
        return out

    def forecasts(self, submission_id: int, out: str | Path) -> Path:
        """A submission's forecasts (your uploads; the in-house models' where the server
        shares them) as the published submission file `out`, and its family sidecar
        `{stem}.nll.json` beside it for a density forecast."""
        out = Path(out)
        if out.suffix != ".parquet":
            raise ClientError(f"The forecast file must end in .parquet (got {out.name}).")
        tmp = out.with_name(f".{out.name}.part")
        try:
            with open(tmp, "wb") as f:
                headers = self.http.download(
                    f"/submissions/{submission_id}/forecasts", f, token=True
                )
            tmp.replace(out)
        finally:
            tmp.unlink(missing_ok=True)
        sidecar = out.with_name(f"{out.stem}.nll.json")
        sidecar.unlink(missing_ok=True)
        family = headers.get("x-forecast-family")
        if "sigma" in _columns(out) and family is not None and families.is_density(family):
            body: dict[str, Any] = {"family": family}
            if headers.get("x-forecast-df"):
                body["df"] = float(headers["x-forecast-df"])
            sidecar.write_text(json.dumps(body) + "\n", encoding="utf-8")
        return out


def _columns(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)
