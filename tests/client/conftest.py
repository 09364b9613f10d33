"""A real `proforma serve` for the client's tests, started once for the module that asks
(a synthetic panel through 2010Q4, built, with an open round 2010Q4, users with tokens,
another user's upload and an in-house model, the `full` board scored), stopped after; and a proxy that drops the answer to an
upload (the client never sees it, the server has the file)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from proforma.app import scoring
from proforma.app.api.auth import add_user
from proforma.app.flows.warehouse import prepare
from proforma.app.rounds import open_round
from proforma.app.scoring.submissions.uploads import ingest_parquet
from proforma.app.store.settings import paths_under
from proforma.app.store.warehouse import Warehouse, connect
from tests.conftest import temp_settings
from tests.rounds.rounds_helpers import grow

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    url: str
    folder: Path
    #: the environment the server runs with (a CLI run beside it reads the same settings)
    env: dict[str, str]
    tokens: dict[str, str]
    log: Path


def server_env(folder: Path) -> dict[str, str]:
    """The server's settings: everything under `folder`, small limits."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("PROFORMA_")},
        **paths_under(folder),
        "PROFORMA_MEMORY_LIMIT": "1GB",
        "PROFORMA_THREADS": "2",
        "PROFORMA_UPLOADS_PER_DAY": "6",
        "PROFORMA_PUBLIC_MIN_CELLS": "5",
        # the console's bounds, small enough that a test meets them (the busy server)
        "PROFORMA_QUERY_RATE_PER_MIN": "1",
        "PROFORMA_QUERY_BURST": "3",
    }


def seed_submissions(wh: Warehouse, cells: Path) -> None:
    """The test split's cells as a forecast file (the baseline as prediction, sigma 1)
    the tests vary, an upload of another user's and an in-house model's made of it, and
    the `full` board scored once, so that every test finds a board."""
    scoring.ensure_standard_footprints(wh)
    target = str(cells).replace("'", "''")
    wh.execute(
        "COPY (SELECT f.gvkey AS firm, i.item AS target, qlabel(t.origin_q) AS origin, "
        "CAST(t.horizon AS BIGINT) AS horizon, t.baseline AS prediction, 1.0 AS sigma "
        "FROM panel.truth t JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        f"WHERE t.split = 'test' ORDER BY ALL) TO '{target}' (FORMAT parquet)"
    )
    ingest_parquet(wh, cells, "bob-model", metadata={"uploaded_by": "bob"})
    ingest_parquet(wh, cells, "house-model", source="model")
    scoring.score(wh, footprint="full")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("served")
    settings = temp_settings(folder, "warehouse.duckdb")
    wh = connect(settings)
    try:
        prepare(wh)
        grow(wh, "2010Q4")
        open_round(wh, folder / "rounds", days=1)
        seed_submissions(wh, folder / "cells.parquet")
        tokens = {
            "admin": add_user(wh, "admin", admin=True)[1],
            "alice": add_user(wh, "alice")[1],
            "carol": add_user(wh, "carol", daily_limit=2)[1],
            "dave": add_user(wh, "dave", daily_limit=1)[1],
            "erin": add_user(wh, "erin", daily_limit=1)[1],
        }
    finally:
        wh.close()
    port = free_port()
    env = server_env(folder)
    log = folder / "server.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "proforma.app.cli", "serve", "--port", str(port)]
        + ["--log-level", "warning"],
        cwd=folder,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                health = httpx.get(f"{url}/api/v1/health", timeout=2).json()
                if health["snapshot"]["status"] != "missing":
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.2)
        yield Served(url, folder, env, tokens, log)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


class DroppingProxy:
    """Forwards TCP to the server; the answer to the next `drops` uploads (POST of a file
    to /submissions or a round) is swallowed and the connection closed, after the server
    has received the whole request: the client's connection dropped at the worst moment."""

    def __init__(self, port: int, drops: int = 1):
        import threading

        self.upstream = ("127.0.0.1", port)
        self.drops = drops
        self.dropped = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = False
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        import threading

        self._listener.settimeout(0.2)
        while not self._stop:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            state = {"drop": False}
            for args in ((client, upstream, True), (upstream, client, False)):
                t = threading.Thread(target=self._pump, args=(*args, state), daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, outbound: bool, state: dict) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if outbound and b"POST /api/v1/" in data and b"/submissions" in data:
                    with self._lock:
                        if self.dropped < self.drops:
                            self.dropped += 1
                            state["drop"] = True
                if not outbound and state["drop"]:
                    break  # the server answered; the client never hears it
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self._stop = True
        self._listener.close()
        self._accepting.join(5)
        for t in self._threads:
            t.join(5)
