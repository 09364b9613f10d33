"""`proforma ingest wrds` end to end through the real `wrds` client against a real PostgreSQL.

The server (tests/foundation/wrds_server.py) is a throwaway cluster on 127.0.0.1 with
SSL and password logins, holding WRDS-shaped comp.fundq, comp.co_industry and
crsp.ccmxpf_lnkhist filled with the edge panel. Without PostgreSQL the tests skip, and
fail under `make test` (PROFORMA_REQUIRE_POSTGRES=1), which installs it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.sources.wrds import fundq_columns
from proforma.app.store.warehouse import Warehouse, connect
from tests.build.conftest import run_steps
from tests.foundation.wrds_server import (
    WrdsServer,
    edge_panel,
    free_port,
    load_panel,
    postgres_bin,
    wait_for,
)

START, END = 2000, 2003
PASSWORD = "s3cret pass"


@pytest.fixture(scope="module")
def server() -> Iterator[WrdsServer]:
    if postgres_bin() is None:
        msg = "PostgreSQL server binaries not found (Debian: apt-get install postgresql)"
        if os.environ.get("PROFORMA_REQUIRE_POSTGRES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    port = int(os.environ.get("PROFORMA_TEST_POSTGRES_PORT") or free_port())
    s = WrdsServer(port).start()
    try:
        s.create_database()
        load_panel(s, *edge_panel(range(START, END + 1)))
        s.add_user("jdoe", PASSWORD)
        s.add_user("2j.doe-x", PASSWORD, crsp=False)  # a WRDS-style name without CRSP
        yield s
    finally:
        s.stop()


@pytest.fixture
def pgpass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: WrdsServer):
    """Write a password file (libpq's PGPASSFILE) for the user; returns the writer."""

    def write(user: str = "jdoe", password: str = PASSWORD) -> None:
        path = tmp_path / "pgpass"
        path.write_text(f"127.0.0.1:{server.port}:wrds:{user}:{password}\n")
        path.chmod(0o600)
        monkeypatch.setenv("PGPASSFILE", str(path))

    monkeypatch.delenv("PGHOST", raising=False)
    write()
    return write


def _ingest(server: WrdsServer, *extra: str, user: str = "jdoe") -> Any:
    args = ["ingest", "wrds", "--user", user, "--host", "127.0.0.1"]
    args += ["--port", str(server.port), "--start", str(START), "--end", str(END), *extra]
    return CliRunner().invoke(app, args)


# -- what the raw tables must hold -------------------------------------------------------------
def _order(row: dict[str, Any], columns: list[str]) -> tuple:
    return tuple((row[c] is None, row[c] if row[c] is not None else 0) for c in columns)


def expected_fundq() -> list[tuple]:
    cols = fundq_columns()
    fundq, _, _ = edge_panel(range(START, END + 1))
    kept = [
        r
        for r in fundq
        if (r["indfmt"], r["datafmt"], r["consol"], r["popsrc"]) == ("INDL", "STD", "C", "D")
        and START <= r["datadate"].year <= END
    ]
    kept.sort(key=lambda r: (r["datadate"].year, _order(r, cols)))
    out = []
    for r in kept:
        keys = (
            r["gvkey"],
            r["datadate"],
            *(None if r[c] is None else int(r[c]) for c in cols[2:5]),
        )
        out.append(keys + tuple(r[c] for c in cols[5:]))
    return out


def expected_industry() -> list[tuple]:
    return [
        ("001001", dt.date(1999, 12, 31), 3711, 336111),
        ("001002", dt.date(1999, 12, 31), 2834, 325412),
        ("001003", dt.date(1999, 12, 31), 3312, 331110),
        ("001003", dt.date(2000, 9, 30), 2011, 311611),
        ("001003", dt.date(2002, 1, 1), 3312, 331110),
        ("001004", dt.date(1999, 12, 31), 2834, None),
        ("001005", dt.date(1999, 12, 31), None, None),
        ("001006", dt.date(1999, 12, 31), 3302, 331110),  # of 6199 and 3302 on one date
        ("001007", dt.date(1999, 12, 31), 1311, 211120),
    ]


EXPECTED_LINKS = [
    ("001001", 10001, "LC", "P", dt.date(2000, 1, 1), None),
    ("001003", 10003, "LC", "P", dt.date(2000, 1, 1), dt.date(2001, 12, 31)),
    ("001003", 10004, "LU", "C", dt.date(2001, 1, 1), None),
    ("001004", 10005, "LU", "P", None, None),
    ("001007", 10007, "LC", "P", dt.date(2000, 6, 1), None),
]


def raw_tables(wh: Warehouse) -> dict[str, list[tuple]]:
    cols = ", ".join(fundq_columns())
    return {
        "fundq": wh.fetchall(f"SELECT {cols} FROM raw.fundq ORDER BY rowid"),
        "industry": wh.fetchall("SELECT * FROM raw.company_industry ORDER BY rowid"),
        "links": wh.fetchall("SELECT * FROM raw.ccm_link ORDER BY rowid"),
    }


def cache_digests(cache: Path) -> dict[str, str]:
    return {
        str(p.relative_to(cache)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(cache.rglob("*.parquet"))
    }


# -- the tests ---------------------------------------------------------------------------------
def test_pull_is_the_expected_raw_tables_and_deterministic(
    settings, server: WrdsServer, pgpass, tmp_path: Path
) -> None:
    before = server.logins("jdoe")
    first = _ingest(server)
    assert first.exit_code == 0, first.output
    assert server.logins("jdoe") == before + 1
    out = first.output
    assert f"from 127.0.0.1:{server.port}/wrds (SSL required) as jdoe" in out
    assert "0 of 6 chunks cached, 6 to fetch (one login)" in out
    # the summary: ties, overlapping links and duplicate industry records resolved
    assert "fundq: 2 (gvkey, datadate, fyearq, fqtr) keys held by 4 records" in out
    assert "2 records without fyearq or fqtr" in out
    assert "ccm_link: 4 fundq records lie inside more than one link window (8 windows" in out
    assert "co_industry: 1 (gvkey, datadate) keys held 2 records" in out
    assert "done: ingest 1 from wrds: fundq 116, company_industry 9, ccm_link 5 rows" in out

    with connect(settings) as wh:
        tables = raw_tables(wh)
    assert tables["fundq"] == expected_fundq()
    assert tables["industry"] == expected_industry()
    assert tables["links"] == EXPECTED_LINKS

    # a fully cached rerun: no connection, every chunk's pull date shown
    again = _ingest(server)
    assert again.exit_code == 0, again.output
    assert server.logins("jdoe") == before + 1
    today = dt.datetime.now(dt.UTC).date().isoformat()
    assert f"reusing fundq {START}-{END} pulled {today}" in again.output
    assert f"reusing co_industry pulled {today}" in again.output
    assert "(no login needed)" in again.output

    # a second pull into another cache: the same bytes, the same raw tables
    other = tmp_path / "cache2"
    second = _ingest(server, "--cache-dir", str(other))
    assert second.exit_code == 0, second.output
    digests = cache_digests(settings.cache_dir)
    assert len(digests) == 6 and digests == cache_digests(other)
    with connect(settings) as wh:
        assert raw_tables(wh) == tables

    # --refresh pulls every chunk again with one login; same bytes
    refreshed = _ingest(server, "--refresh")
    assert refreshed.exit_code == 0, refreshed.output
    assert "0 of 6 chunks cached, 6 to fetch (one login)" in refreshed.output
    assert server.logins("jdoe") == before + 3
    assert cache_digests(settings.cache_dir) == digests


def test_build_rules_on_the_pulled_tables(settings, server: WrdsServer, pgpass) -> None:
    assert _ingest(server).exit_code == 0
    with connect(settings) as wh:
        sic = {}
        for rules in ("published", "paper"):
            run_steps(wh, "060", rules=rules)
            sic[rules] = dict(wh.fetchall("SELECT gvkey, sic FROM stage.firm_industry"))
            copies = wh.scalar("SELECT count(*) - count(DISTINCT raw_row) FROM stage.fundq_linked")
            assert copies == (4 if rules == "published" else 0)
    # overlapping link windows: a copy per window under published (10 Food vs 10 Steel
    # quarters, the tie to the smaller SIC), once under paper (6 vs 10)
    assert sic["published"]["001003"] == 2011 and sic["paper"]["001003"] == 3312
    # of two industry records on one date the rule keeps 3302: not a financial firm
    assert sic["published"]["001006"] == 3302 == sic["paper"]["001006"]
    # the link filters dropped 001002's LX link: kept whole
    assert len([g for g in sic["paper"] if g == "001002"]) == 1


def test_wrong_password_is_one_connection(settings, server: WrdsServer, pgpass) -> None:
    pgpass(password="not the password")
    before = server.logins("jdoe")
    result = _ingest(server)
    assert result.exit_code != 0
    message = str(result.exception)
    assert "one attempt was made" in message and "password authentication failed" in message
    assert server.logins("jdoe") == before + 1
    assert not list(settings.cache_dir.rglob("*.parquet"))


def test_missing_crsp_permission_then_only_the_missing_table(
    settings, server: WrdsServer, pgpass
) -> None:
    user = "2j.doe-x"  # WRDS-style: a leading digit, '.', '-'
    pgpass(user=user)
    result = _ingest(server, user=user)
    assert result.exit_code != 0
    message = str(result.exception)
    assert "ccm_link all failed after 5 of 6 chunks" in message
    assert "permission denied" in message and "\n" not in message
    assert len(list(settings.cache_dir.rglob("*.parquet"))) == 5
    server.sql(f'GRANT USAGE ON SCHEMA crsp TO "{user}"')
    server.sql(f'GRANT SELECT ON crsp.ccmxpf_lnkhist TO "{user}"')
    try:
        again = _ingest(server, user=user)
        assert again.exit_code == 0, again.output
        assert "5 of 6 chunks cached, 1 to fetch (one login)" in again.output
        assert server.logins(user) == 2
    finally:
        server.sql(f'REVOKE SELECT ON crsp.ccmxpf_lnkhist FROM "{user}"')


def test_a_killed_pull_resumes(settings, server: WrdsServer, pgpass, tmp_path: Path) -> None:
    """Killed (SIGKILL) while waiting on co_industry: the rerun pulls only what is missing."""
    cli = Path(sys.executable).parent / "proforma"
    args = [str(cli), "ingest", "wrds", "--user", "jdoe", "--host", "127.0.0.1"]
    args += ["--port", str(server.port), "--start", str(START), "--end", str(END)]
    lock = server.admin("wrds")
    lock.autocommit = False
    try:
        with lock.cursor() as cur:
            cur.execute("LOCK TABLE comp.co_industry IN ACCESS EXCLUSIVE MODE")
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            four = wait_for(lambda: len(list(settings.cache_dir.rglob("*.parquet"))) == 4, 180)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        assert four, "the pull did not write the four fundq chunks"
    finally:
        lock.rollback()
        lock.close()
    assert proc.returncode == -signal.SIGKILL
    assert not list(settings.cache_dir.rglob("*.tmp-*"))  # nothing half-written kept
    again = _ingest(server)
    assert again.exit_code == 0, again.output
    assert "4 of 6 chunks cached, 2 to fetch (one login)" in again.output
    with connect(settings) as wh:
        assert raw_tables(wh)["fundq"] == expected_fundq()


def test_pghost_is_named_not_followed(
    settings, server: WrdsServer, pgpass, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGHOST", "elsewhere.example.org")
    result = _ingest(server)
    assert result.exit_code == 0, result.output
    assert "PGHOST=elsewhere.example.org is set but not used: connecting to 127.0.0.1" in (
        result.output
    )


def test_integer_key_columns(settings, server: WrdsServer, pgpass) -> None:
    """The same panel with integer fyearq/fqtr/fyr (another database): the same raw fundq."""
    server.create_database("wrds_int")
    load_panel(server, *edge_panel(range(START, END + 1)), key_type="integer", database="wrds_int")
    server.sql("GRANT USAGE ON SCHEMA comp, crsp TO jdoe", "wrds_int")
    server.sql("GRANT SELECT ON ALL TABLES IN SCHEMA comp, crsp TO jdoe", "wrds_int")
    path = Path(os.environ["PGPASSFILE"])
    path.write_text(path.read_text() + f"127.0.0.1:{server.port}:wrds_int:jdoe:{PASSWORD}\n")
    result = _ingest(server, "--database", "wrds_int")
    assert result.exit_code == 0, result.output
    with connect(settings) as wh:
        assert raw_tables(wh)["fundq"] == expected_fundq()
