"""Shared pieces of the CLI: the two consoles, opening the warehouse for writing, and the
running server's record that lets read commands answer while it holds the warehouse."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from proforma.app.flows.warehouse import prepare
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import Warehouse, connect
from proforma.contracts.errors import UserError, WarehouseLocked

if TYPE_CHECKING:
    from rich.progress import Progress


def _data_width() -> int | None:
    """A terminal's own width; piped or redirected, room for any table (rich would squeeze
    tables into 80 columns and cut model names), unless COLUMNS says otherwise."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return None
    return 400


#: Data a command exists to print (tables, listings, tokens): stdout.
console = Console(stderr=False, width=_data_width())
#: Everything about the run (progress, notes, warnings, the summary line, errors): stderr,
#: so that stdout carries only data and `--format json > file` parses.
status_console = Console(stderr=True)


@contextlib.contextmanager
def writer() -> Iterator[Warehouse]:
    """The warehouse opened for writing, migrated and with current reference data."""
    wh = connect()
    try:
        prepare(wh)
        yield wh
    finally:
        wh.close()


def note(text: str) -> None:
    """A line about the run (a flow's progress, a note, a warning): stderr, as it is."""
    status_console.print(text, highlight=False, soft_wrap=True, markup=False)


def summary(text: str) -> None:
    """The one line every job ends with (on stderr)."""
    status_console.print(f"[bold green]done:[/] {text}", highlight=False, soft_wrap=True)


# -- the running server ---------------------------------------------------------------------
# `proforma serve` holds the warehouse open for writing (DuckDB admits one writing process
# and no reader beside it). It leaves a record beside the warehouse (its pid and URL), so
# that the read commands (leaderboard, footprint list, db status) can ask it instead, and
# say so, and `proforma report` can say precisely why it cannot run.


def server_record_path(settings: Settings) -> Path:
    """`<warehouse>.server.json`, beside the warehouse the server holds."""
    return settings.warehouse.with_name(settings.warehouse.name + ".server.json")


@contextlib.contextmanager
def server_record(host: str, port: int) -> Iterator[Path]:
    """While serving: the record of this process (pid, URL, start time); removed after."""
    path = server_record_path(get_settings())
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    record = {
        "pid": os.getpid(),
        "url": f"http://{shown}:{port}",
        "warehouse": str(get_settings().warehouse),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    try:
        yield path
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class RunningServer:
    """The `proforma serve` process holding the warehouse, as its record describes it."""

    pid: int
    url: str
    warehouse: Path

    def get(self, path: str, **params: Any) -> Any:
        """GET `path` (JSON) from the server; a failure is a UserError with its message."""
        # urllib.request brings ssl and http.client, which only the commands that ask a
        # running server need, into every start (bench/start_imports.py)
        import urllib.error
        import urllib.parse
        import urllib.request

        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        url = f"{self.url}{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=60) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read()).get("detail")
            except ValueError:
                detail = None
            raise UserError(
                f"The server at {self.url} answered {exc.code}: {detail or exc.reason}"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise UserError(
                f"The warehouse {self.warehouse} is held by `proforma serve` (pid {self.pid}), "
                f"but its URL {self.url} does not answer ({exc})."
            ) from None

    def note(self) -> str:
        pid = f" (pid {self.pid})" if self.pid else ""  # 0: named by URL, not by record
        return (
            f"read from the running server {self.url}{pid}, which holds the "
            f"warehouse {self.warehouse} for writing"
        )


def running_server(locked: WarehouseLocked) -> RunningServer:
    """The server holding the warehouse, from its record; else `locked` again, with what
    is known of the holder (a build, a training run, a server without a record)."""
    settings = get_settings()
    path = server_record_path(settings)
    holder = re.search(r"process (\d+)", str(locked))
    try:
        record = json.loads(path.read_text())
        pid, url = int(record["pid"]), str(record["url"])
    except (OSError, ValueError, KeyError, TypeError):
        raise locked from None
    if not _alive(pid) or (holder is not None and int(holder.group(1)) != pid):
        raise locked from None
    return RunningServer(pid, url, settings.warehouse)


def progress_bars() -> Progress:
    """Progress bars of a long command (a description, a bar, done of total, the time),
    on stderr with the other progress. rich.progress is imported by the commands that
    show bars, not by every start (bench/start_imports.py)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=status_console,
        transient=False,
    )
