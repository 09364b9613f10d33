"""`proforma backup`, `backup --verify` and `restore` from the command line, and every
refusal: a damaged, incomplete or tampered backup, a backup into a used folder, a restore
into an occupied location. A refusal is one clear line and writes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proforma.app.api.auth import add_user
from proforma.app.cli import RESOURCE_EXIT, app, resource_problem
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import Warehouse, connect
from proforma.contracts.errors import UserError


def _cli(*args: str) -> tuple[int, str]:
    """The command's exit status and output, its error line as `proforma` prints it."""
    result = CliRunner().invoke(app, list(args))
    exc = result.exception
    if isinstance(exc, UserError):
        return exc.exit_code, result.output + str(exc)
    if exc is not None and not isinstance(exc, SystemExit):
        line = resource_problem(exc)
        if line is None:
            raise exc
        return RESOURCE_EXIT, result.output + line
    return result.exit_code, result.output


@pytest.fixture
def backup(wh: Warehouse, settings: Settings, tmp_path: Path) -> Path:
    """A backup of a warehouse with one user, made by the command (no server)."""
    add_user(wh, "alice")
    wh.close()
    folder = tmp_path / "backup"
    code, out = _cli("backup", str(folder))
    assert code == 0, out
    assert "done: backup" in out
    return folder


def _elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    root = tmp_path / "elsewhere"
    monkeypatch.setenv("PROFORMA_WAREHOUSE", str(root / "warehouse.duckdb"))
    monkeypatch.setenv("PROFORMA_UPLOAD_DIR", str(root / "uploads"))
    monkeypatch.setenv("PROFORMA_PUBLIC_SNAPSHOT", str(root / "public.duckdb"))
    get_settings.cache_clear()
    return get_settings()


def test_backup_verify_and_restore_from_the_command_line(
    backup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _cli("backup", "--verify", str(backup))
    assert code == 0 and "is whole" in out, out
    target = _elsewhere(tmp_path, monkeypatch)
    code, out = _cli("restore", str(backup))
    assert code == 0 and "restored the backup" in out, out
    wh = connect(target, read_only=True)
    assert wh.fetchall("SELECT name FROM service.users") == [("alice",)]
    wh.close()
    # a second restore into the same place is refused: the location is no longer empty
    code, out = _cli("restore", str(backup))
    assert code == 2 and "A restore goes into an empty location" in out, out


def test_no_warehouse_nothing_to_back_up(settings: Settings, tmp_path: Path) -> None:
    code, out = _cli("backup", str(tmp_path / "b"))
    assert code == 2 and "nothing to back up" in out
    assert not settings.warehouse.exists() and not (tmp_path / "b").exists()


def test_a_backup_goes_to_a_new_folder(backup: Path, settings: Settings) -> None:
    code, out = _cli("backup", str(backup))
    assert code == 2 and "is not an empty folder" in out
    assert json.loads((backup / "manifest.json").read_text())  # the backup there is intact


@pytest.mark.parametrize(
    "damage, message",
    [
        ("flip", "does not match its sha256"),
        ("truncate", "bytes, the manifest"),
        ("remove", "warehouse.duckdb is missing"),
        ("no manifest", "the backup is incomplete"),
        ("bad manifest", "is not a readable backup manifest"),
        ("extra", "is not in the manifest"),
        ("rows", "rows, the manifest"),
    ],
)
def test_a_damaged_or_incomplete_backup_is_refused_and_nothing_is_written(
    backup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str, message: str
) -> None:
    copy = backup / "warehouse.duckdb"
    manifest = backup / "manifest.json"
    if damage == "flip":
        data = bytearray(copy.read_bytes())
        data[len(data) // 2] ^= 0xFF
        copy.write_bytes(bytes(data))
    elif damage == "truncate":
        copy.write_bytes(copy.read_bytes()[:-4096])
    elif damage == "remove":
        copy.unlink()
    elif damage == "no manifest":
        manifest.unlink()
    elif damage == "bad manifest":
        manifest.write_text(manifest.read_text()[:50])
    elif damage == "extra":
        (backup / "store").mkdir(exist_ok=True)
        (backup / "store" / "stray.parquet").write_bytes(b"PAR1")
    elif damage == "rows":  # a manifest edited to agree with the file but not its rows
        m = json.loads(manifest.read_text())
        m["tables"]["service.users"] += 1
        manifest.write_text(json.dumps(m))
    code, out = _cli("backup", "--verify", str(backup))
    assert code == 2 and message in " ".join(out.split()), out
    target = _elsewhere(tmp_path, monkeypatch)
    code, out = _cli("restore", str(backup))
    assert code == 2 and "Nothing was restored" in " ".join(out.split()), out
    assert not target.warehouse.parent.exists() or not any(target.warehouse.parent.iterdir())


def test_a_restore_that_fails_midway_removes_what_it_wrote(
    backup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proforma.app.flows import restore

    target = _elsewhere(tmp_path, monkeypatch)

    def broken(*args: object) -> list[str]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(restore, "_reopen", broken)
    code, out = _cli("restore", str(backup))
    assert code == 3 and "no space left" in out.lower(), out
    assert not target.warehouse.exists()
    shutil.rmtree(target.warehouse.parent, ignore_errors=True)


def test_a_queued_upload_comes_back_with_its_job(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job still queued at the backup: its received file is in the backup (uploads/)
    and the restored job points at the restored file, so the worker takes it up."""
    from proforma.app.api.job_store import NewJob, insert_job
    from proforma.app.flows.warehouse import prepare

    monkeypatch.setenv("PROFORMA_UPLOAD_DIR", str(tmp_path / "site" / "uploads"))
    get_settings.cache_clear()
    site = get_settings()
    received = Path(site.upload_dir) / "job-1.parquet"
    received.parent.mkdir(parents=True)
    received.write_bytes(b"the bytes a client sent")
    wh = connect(site)
    prepare(wh)
    user, _ = add_user(wh, "alice")
    job = NewJob(user.user_id, "m", "gaussian", None, {}, received.absolute(), 23, "ab" * 32)
    queued = insert_job(wh, job)
    assert queued is not None
    job_id = queued.job_id
    wh.close()
    assert _cli("backup", str(tmp_path / "backup"))[0] == 0
    target = _elsewhere(tmp_path, monkeypatch)
    assert _cli("restore", str(tmp_path / "backup"))[0] == 0
    wh = connect(target, read_only=True)
    path, status = wh.fetchone(
        "SELECT upload_path, status FROM service.jobs WHERE job_id = ?", [job_id]
    ) or (None, None)
    wh.close()
    assert status == "queued" and Path(path).parent == Path(target.upload_dir).absolute()
    assert Path(path).read_bytes() == b"the bytes a client sent"
