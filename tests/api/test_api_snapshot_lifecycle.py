"""The public snapshot's lifecycle: bounded unique names, old versions removed once no
query reads them, and a failed publication visible in /api/v1/health."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import Api

from proforma.app.flows.warehouse import prepare
from proforma.app.read import snapshot
from proforma.app.read.snapshot import GRACE_VERSIONS, publish, reading, versions
from proforma.app.read.sqlguard import run_query
from proforma.app.server.main import _publish_safely
from proforma.app.store.settings import Settings
from proforma.app.store.sqlfiles import SqlFile
from proforma.app.store.warehouse import Warehouse, connect
from tests.conftest import temp_settings

# A one-row snapshot: the lifecycle does not depend on what the public steps select.
TINY = [SqlFile(Path("tiny_public.sql"), "CREATE TABLE pub.scores AS SELECT 1 AS n;")]


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs where there is one: a publication's cost is mostly fsync, and
    the thousand-publication test is about names and files, not disks."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="proforma-snapshot-", dir=shm))
        yield folder
        shutil.rmtree(folder, ignore_errors=True)
    else:
        yield tmp_path


@pytest.fixture
def pub(fast_dir: Path) -> Iterator[tuple[Warehouse, Settings]]:
    settings = temp_settings(
        fast_dir, "warehouse.duckdb", public_snapshot=fast_dir / "site" / "public.duckdb", threads=1
    )
    wh = connect(settings)
    prepare(wh)
    yield wh, settings
    wh.close()


def _files(settings: Settings) -> list[str]:
    return sorted(p.name for p in Path(settings.public_snapshot).parent.iterdir())


def test_a_thousand_publications_leave_one_current_snapshot_and_few_old_files(pub) -> None:
    wh, settings = pub
    names = set()
    for _ in range(1000):
        names.add(publish(wh, settings, steps=TINY).version.name)
    link = Path(settings.public_snapshot)
    assert len(names) == 1000  # every version had its own name
    assert {len(n) for n in names} == {len("public-v") + 20 + len(".duckdb")}  # bounded
    assert link.is_symlink() and os.readlink(link) in names
    on_disk = versions(link)
    assert len(on_disk) <= 1 + GRACE_VERSIONS
    assert _files(settings) == sorted(["public.duckdb", *(p.name for p in on_disk)])
    assert wh.scalar("SELECT count(*) FROM service.snapshots") == 1000
    assert wh.scalar("SELECT count(DISTINCT file) FROM service.snapshots") == 1000


def test_a_version_a_query_reads_is_kept_until_the_query_ends(pub) -> None:
    wh, settings = pub
    publish(wh, settings, steps=TINY)
    with reading(settings.public_snapshot) as held:
        for _ in range(4):
            publish(wh, settings, steps=TINY)
        assert held.exists()  # leased: neither the grace copy nor current, yet kept
        assert len(versions(settings.public_snapshot)) == 2 + GRACE_VERSIONS
    publish(wh, settings, steps=TINY)
    assert not held.exists()
    assert len(versions(settings.public_snapshot)) == 1 + GRACE_VERSIONS


def test_queries_running_through_publications_never_fail(pub) -> None:
    wh, settings = pub
    publish(wh, settings, steps=TINY)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                result = run_query(
                    "SELECT n FROM scores", settings.public_snapshot, max_rows=10, timeout_s=5
                )
                assert result.rows == [[1]]
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(100):
            publish(wh, settings, steps=TINY)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert errors == []
    assert len(versions(settings.public_snapshot)) <= 1 + GRACE_VERSIONS + 2  # +2 readers


def test_versions_of_the_old_chained_names_are_cleaned_up(pub) -> None:
    wh, settings = pub
    folder = Path(settings.public_snapshot).parent
    folder.mkdir(parents=True)
    chained = folder / "public-1795000000000000001-1795000000000000002.duckdb"
    chained.write_bytes(b"old")
    unrelated = folder / "public-notes.duckdb"
    unrelated.write_bytes(b"keep me")
    (folder / ".public.duckdb.99999.3.tmp").write_bytes(b"half-written")
    publish(wh, settings, steps=TINY)
    publish(wh, settings, steps=TINY)
    assert not chained.exists()
    assert unrelated.exists()  # not a version: never touched
    assert not list(folder.glob(".public.duckdb.*"))


def test_a_failed_publication_shows_in_health_until_one_succeeds(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    health = api.client.get("/api/v1/health").json()
    assert health["status"] == "ok" and health["snapshot"]["status"] == "ok"
    first_file = health["snapshot"]["file"]

    def too_long(*args, **kwargs):
        raise OSError(36, "File name too long")

    wh, settings = api.wh, api.client.app.state.settings
    monkeypatch.setattr("proforma.app.server.main.publish", too_long)
    _publish_safely(wh, settings)
    _publish_safely(wh, settings)
    health = api.client.get("/api/v1/health").json()
    assert health["status"] == "degraded"
    assert health["snapshot"]["status"] == "failing"
    assert health["snapshot"]["file"] == first_file  # still served
    failure = health["snapshot"]["last_failure"]
    assert "File name too long" in failure["error"]
    assert failure["failures_since_last_publication"] == 2
    assert (
        api.client.get(
            "/api/v1/query", params={"sql": "SELECT count(*) AS n FROM items"}
        ).status_code
        == 200
    )  # the previous snapshot still answers

    monkeypatch.setattr("proforma.app.server.main.publish", snapshot.publish)
    _publish_safely(wh, settings)
    health = api.client.get("/api/v1/health").json()
    assert health["status"] == "ok" and health["snapshot"]["status"] == "ok"
    assert "last_failure" not in health["snapshot"]
    assert health["snapshot"]["file"] != first_file
