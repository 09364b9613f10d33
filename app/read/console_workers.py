"""Public SQL console queries in worker processes that are stopped at their time limit.

DuckDB looks for an interrupt between the vectors it produces, so one scalar call that
builds a huge value (`repeat('x', 2000000000)`) runs on for tens of seconds after
`interrupt()`, holding its console place all the while (issue 47: 12-47 s against a 5 s
limit). A process can always be stopped: each console query runs in one of a few
spawned workers, and a worker that has not answered when the query's time is up is
killed and replaced, so the answer (408) comes within a moment of the limit, whatever
the query computes. Each worker's address space is capped too (a multiple of the
query memory limit), so a value too large fails at once instead of swapping.

The SQL is checked in the server (the allow-list of app/read/sqlguard.py) before it is
sent; a worker only opens the snapshot version it is given, read-only and with the same
locked configuration as the in-process path, and runs the checked text.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import queue
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

log = logging.getLogger("proforma.console")

#: The largest wait for an idle worker (one is being replaced after a kill).
IDLE_WAIT_S = 30.0


def _bytes(limit: str) -> int:
    units = {"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
    text = limit.strip().upper().replace(" ", "")
    for unit, factor in sorted(units.items(), key=lambda u: -len(u[0])):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(float(text))


def address_space_cap(memory_limit: str) -> int:
    """A worker's address-space cap: the interpreter, DuckDB and its buffers (1.5 GiB)
    and twice the query memory limit."""
    return int(1.5 * 2**30) + 2 * _bytes(memory_limit)


def _serve(conn: Connection, memory_limit: str) -> None:
    """A worker's loop: (snapshot path, checked SQL, max rows) in, (kind, payload) out."""
    import resource

    cap = address_space_cap(memory_limit)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import duckdb

    from proforma.app.read.snapshot_connection import open_snapshot

    cons: dict[str, Any] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        path, sql, max_rows = message
        try:
            con = cons.get(path)
            if con is None:
                cons.clear()  # one snapshot version at a time
                con = cons[path] = open_snapshot(Path(path), memory_limit)
            cur = con.cursor()
            try:
                rel = cur.sql(f"SELECT * FROM ({sql}) AS public_query LIMIT {int(max_rows) + 1}")
                columns, types = list(rel.columns), [str(t) for t in rel.types]
                rows = [list(r) for r in rel.fetchall()]
            finally:
                cur.close()
            conn.send(("ok", (columns, types, rows)))
        except (duckdb.OutOfMemoryException, MemoryError):
            conn.send(("memory", ""))
        except duckdb.Error as exc:
            text = str(exc).splitlines()[0][:300]
            kind = "memory" if "memory" in text.lower() and "alloc" in text.lower() else "rejected"
            conn.send((kind, text))


@dataclass
class _Worker:
    process: Any
    conn: Connection


class ConsoleWorkers:
    """`size` worker processes; execute() runs one checked query on an idle one."""

    def __init__(self, size: int, memory_limit: str):
        self.size = size
        self.memory_limit = memory_limit
        self._ctx = multiprocessing.get_context("spawn")  # safe beside the server's threads
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._closed = False
        for _ in range(size):
            self._idle.put(self._start())

    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=_serve, args=(child, self.memory_limit), daemon=True, name="proforma-console"
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def _replace(self, worker: _Worker) -> None:
        """Kill a worker and put a fresh one in its place (in the background: the
        request that timed out answers at once)."""
        with contextlib.suppress(Exception):
            worker.process.kill()
        with contextlib.suppress(Exception):
            worker.conn.close()

        def start() -> None:
            worker.process.join(timeout=5)
            if not self._closed:
                self._idle.put(self._start())

        threading.Thread(target=start, daemon=True, name="proforma-console-restart").start()

    def execute(self, real: Path, sql: str, max_rows: int, timeout_s: float) -> tuple[str, Any]:
        """("ok", (columns, types, rows)), ("timeout", seconds), ("memory", text) or
        ("rejected", DuckDB's message)."""
        started = time.monotonic()
        try:
            worker = self._idle.get(timeout=IDLE_WAIT_S)
        except queue.Empty:
            return ("timeout", time.monotonic() - started)
        left = max(0.05, timeout_s - (time.monotonic() - started))
        try:
            worker.conn.send((str(real), sql, max_rows))
            if not worker.conn.poll(left):
                log.info("console query stopped at its time limit (%.1f s): worker killed", left)
                self._replace(worker)
                return ("timeout", time.monotonic() - started)
            result = worker.conn.recv()
        except (EOFError, OSError):  # the worker died: past its address-space cap
            self._replace(worker)
            return ("memory", "")
        self._idle.put(worker)
        return result

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                break
            with contextlib.suppress(Exception):
                worker.conn.send(None)
            worker.process.join(timeout=2)
            if worker.process.is_alive():
                worker.process.kill()
