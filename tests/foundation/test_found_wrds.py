"""The WRDS source against a fake connection: projection, chunk resume, one login."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pandas as pd  # only to play the wrds client, which answers with DataFrames
import pytest
from typer.testing import CliRunner

import proforma.app.sources.wrds as wrds_source
from proforma.app.sources import ingest
from proforma.app.sources.wrds import FUNDQ_KEYS, Server, WrdsSource, fundq_columns
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError

FIRMS = ("001004", "001045", "012345")


def _group(pattern: str, text: str) -> str:
    """The first group of `pattern` in `text` (which must match)."""
    m = re.search(pattern, text)
    assert m is not None, f"{pattern!r} not in {text!r}"
    return m.group(1)


def like_client(frame: pd.DataFrame) -> pd.DataFrame:
    """The column types wrds 3.5's raw_sql hands back (dtype_backend numpy_nullable, as
    tests/foundation/test_found_wrds_postgres.py sees them from a real server): numbers
    as Float64, text, dates and all-empty columns as string."""
    out = {}
    for c in frame.columns:
        col = frame[c]
        if col.isna().all() or not pd.api.types.is_numeric_dtype(col):
            values = [
                None
                if pd.isna(v)
                else str(v)[:10]
                if c.endswith("dt") or c == "datadate"
                else str(v)
                for v in col
            ]
            out[c] = pd.array(values, dtype="string")
        else:
            out[c] = pd.array(col.astype("float64"), dtype="Float64")
    return pd.DataFrame(out)


class FakeWrds:
    """Answers raw_sql like wrds.Connection: a pandas DataFrame per query."""

    def __init__(self, fail_after: int | None = None, bad_gvkey: bool = False):
        self.queries: list[str] = []
        self.fail_after = fail_after
        self.bad_gvkey = bad_gvkey
        self.closed = False

    def raw_sql(self, sql: str) -> pd.DataFrame:
        if self.fail_after is not None and len(self.queries) >= self.fail_after:
            raise RuntimeError("server closed the connection unexpectedly\nmore detail")
        self.queries.append(sql)
        columns = [c.strip() for c in _group(r"SELECT (.*?) FROM", sql).split(",")]
        if "comp.fundq" in sql:
            year = int(_group(r"BETWEEN '(\d{4})-01-01'", sql))
            rows = []
            for f, gvkey in enumerate(FIRMS):
                for q in range(1, 5):
                    row: dict[str, Any] = {c: float(f * 1000 + q) for c in columns}
                    row.update(
                        gvkey=gvkey[1:] if self.bad_gvkey else gvkey,
                        datadate=dt.date(year, q * 3, 28),
                        fyearq=float(year),
                        fqtr=float(q),
                        fyr=12.0,
                    )
                    row["txbcofy"] = None  # a column with no value this year (object dtype)
                    rows.append(row)
            return like_client(pd.DataFrame(rows, columns=columns))
        if "comp.co_industry" in sql:
            return pd.DataFrame(
                {
                    "gvkey": list(FIRMS),
                    "datadate": [dt.date(1999, 12, 31)] * 3,
                    "sich": [5080.0, 6020.0, None],
                    "naicsh": [423.0, None, None],
                }
            )[columns].pipe(like_client)
        if "crsp.ccmxpf_lnkhist" in sql:
            return pd.DataFrame(
                {
                    "gvkey": ["001004"],
                    "lpermno": [54594.0],
                    "linktype": ["LC"],
                    "linkprim": ["P"],
                    "linkdt": [pd.Timestamp("1990-01-01")],
                    "linkenddt": [pd.NaT],
                }
            )[columns].pipe(like_client)
        raise AssertionError(f"unexpected query {sql}")

    def close(self) -> None:
        self.closed = True


class Factory:
    def __init__(self, *fakes: FakeWrds, error: Exception | None = None):
        self.fakes = list(fakes)
        self.error = error
        self.calls: list[str] = []
        self.servers: list[Server] = []

    def __call__(self, user: str, server: Server) -> FakeWrds:
        self.calls.append(user)
        self.servers.append(server)
        if self.error is not None:
            raise self.error
        return self.fakes.pop(0)


def source(tmp_path: Path, factory: Factory, start: int = 2000, end: int = 2003) -> WrdsSource:
    return WrdsSource(
        "jdoe", start, end, cache_dir=tmp_path / "cache", connection_factory=factory, progress=False
    )


def test_projection_and_filters(tmp_path: Path) -> None:
    fake = FakeWrds()
    src = source(tmp_path, Factory(fake))
    assert src.pull() == 4 + 2
    fundq = [q for q in fake.queries if "comp.fundq" in q]
    assert len(fundq) == 4
    for year, q in zip(range(2000, 2004), fundq, strict=True):
        selected = [c.strip() for c in _group(r"SELECT (.*?) FROM", q).split(",")]
        assert selected == fundq_columns()
        assert len(selected) == len(FUNDQ_KEYS) + 72 and "*" not in q
        for f in ("indfmt = 'INDL'", "datafmt = 'STD'", "consol = 'C'", "popsrc = 'D'"):
            assert f in q
        assert f"BETWEEN '{year}-01-01' AND '{year}-12-31'" in q
    (industry,) = [q for q in fake.queries if "co_industry" in q]
    assert "SELECT gvkey, datadate, sich, naicsh FROM" in industry
    assert "consol = 'C'" in industry and "popsrc = 'D'" in industry
    (links,) = [q for q in fake.queries if "lnkhist" in q]
    assert "linktype IN ('LU', 'LC')" in links and "linkprim IN ('P', 'C')" in links
    assert fake.closed


def test_interrupted_pull_resumes_from_cached_chunks(tmp_path: Path) -> None:
    first = FakeWrds(fail_after=2)
    src = source(tmp_path, Factory(first))
    with pytest.raises(UserError, match=r"fundq 2002 failed after 2 of 6 chunks.*run the same"):
        src.pull()
    assert first.closed
    folder = src.chunks()[0].folder
    assert sorted(p.name for p in folder.glob("*.parquet")) == ["2000.parquet", "2001.parquet"]

    second = FakeWrds()
    factory = Factory(second)
    src = source(tmp_path, factory)
    assert src.pull() == 4
    asked = [
        _group(r"'(\d{4})-01-01'", q) if "fundq" in q else q.split()[-1] for q in second.queries
    ]
    assert asked[:2] == ["2002", "2003"] and len(asked) == 4
    assert factory.calls == ["jdoe"]
    assert not list(tmp_path.rglob("*.tmp-*"))  # atomic writes leave nothing half-done

    third = Factory()  # everything cached: no login at all
    assert source(tmp_path, third).pull() == 0
    assert third.calls == []


def test_cache_key_follows_the_projection(tmp_path: Path) -> None:
    a = source(tmp_path, Factory())
    b = source(tmp_path, Factory())
    b.columns = b.columns[:-1]
    assert a.chunks()[0].folder != b.chunks()[0].folder
    assert a.chunks()[0].folder == source(tmp_path, Factory()).chunks()[0].folder


def test_exactly_one_login_attempt_when_login_fails(tmp_path: Path) -> None:
    factory = Factory(error=RuntimeError("FATAL: password authentication failed\nsecret detail"))
    src = source(tmp_path, factory)
    with pytest.raises(UserError) as info:
        src.tables()
    message = str(info.value)
    assert "one attempt" in message and "loop" in message and "\n" not in message
    assert "secret detail" not in message
    with pytest.raises(UserError):  # the same run never tries again
        src.pull()
    assert factory.calls == ["jdoe"] and src.login_attempts == 1
    assert not (tmp_path / "cache" / "wrds").exists() or not list(
        (tmp_path / "cache").rglob("*.parquet")
    )


def test_exactly_one_login_attempt_for_a_whole_pull(tmp_path: Path) -> None:
    factory = Factory(FakeWrds())
    src = source(tmp_path, factory, 1995, 2004)
    src.tables()
    src.tables()
    assert factory.calls == ["jdoe"] and src.login_attempts == 1


def test_ingest_writes_raw_tables(wh: Warehouse, tmp_path: Path) -> None:
    src = source(tmp_path, Factory(FakeWrds()))
    result = ingest(wh, src)
    assert result.rows == {"fundq": 4 * 12, "company_industry": 3, "ccm_link": 1}
    row = wh.fetchone(
        "SELECT gvkey, datadate, fyearq, fqtr, fyr, atq, txbcofy FROM raw.fundq "
        "WHERE gvkey = '001045' AND datadate = DATE '2001-06-28'"
    )
    assert row == ("001045", dt.date(2001, 6, 28), 2001, 2, 12, 1002.0, None)
    assert wh.fetchall("SELECT * FROM raw.ccm_link") == [
        ("001004", 54594, "LC", "P", dt.date(1990, 1, 1), None)
    ]
    assert wh.scalar("SELECT count(*) FROM raw.company_industry WHERE sich IS NULL") == 1
    source_name, vintage, params = wh.one("SELECT source, vintage, parameters FROM raw.ingests")
    assert source_name == "wrds" and vintage.startswith("WRDS pull 20")
    assert '"start_year": 2000' in params and "password" not in params


def test_bad_rows_are_rejected_and_previous_raw_tables_kept(wh: Warehouse, tmp_path: Path) -> None:
    ingest(wh, source(tmp_path / "a", Factory(FakeWrds())))
    before = wh.scalar("SELECT count(*) FROM raw.fundq")
    bad = source(tmp_path / "b", Factory(FakeWrds(bad_gvkey=True)))
    with pytest.raises(UserError, match="wrds ingest rejected, nothing was written"):
        ingest(wh, bad)
    assert wh.scalar("SELECT count(*) FROM raw.fundq") == before
    assert wh.scalar("SELECT count(*) FROM raw.ingests") == 1


def test_bad_arguments_cost_no_login(tmp_path: Path) -> None:
    factory = Factory(FakeWrds())
    with pytest.raises(UserError, match="after"):
        WrdsSource("jdoe", 2005, 2000, connection_factory=factory)
    with pytest.raises(UserError, match="Not a WRDS user name"):
        WrdsSource("j doe; drop", connection_factory=factory)
    assert factory.calls == []


def test_cli_wrds_failed_login_is_one_attempt(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from proforma.app.cli import app

    calls: list[str] = []

    def refuse(user: str, server: Server) -> None:
        calls.append(user)
        raise RuntimeError("Duo push was not approved")

    monkeypatch.setattr(wrds_source, "_login", refuse)
    result = CliRunner().invoke(
        app, ["ingest", "wrds", "--user", "jdoe", "--start", "2001", "--end", "2002"]
    )
    assert isinstance(result.exception, UserError), result.output
    assert "one attempt" in str(result.exception) and "Do not re-run it in a loop" in str(
        result.exception
    )
    assert calls == ["jdoe"]


def test_cli_wrds_pulls_and_ingests(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from proforma.app.cli import app

    factory = Factory(FakeWrds())
    monkeypatch.setattr(wrds_source, "_login", factory)
    result = CliRunner().invoke(
        app, ["ingest", "wrds", "--user", "jdoe", "--start", "2001", "--end", "2002"]
    )
    assert result.exit_code == 0, result.output
    assert "0 of 4 chunks cached, 4 to fetch (one login)" in result.output
    assert "done: ingest 1 from wrds: fundq 24" in result.output
    assert factory.calls == ["jdoe"]
    again = CliRunner().invoke(
        app, ["ingest", "wrds", "--user", "jdoe", "--start", "2001", "--end", "2002"]
    )
    assert again.exit_code == 0 and "(no login needed)" in again.output
    assert factory.calls == ["jdoe"]


class _EngineSpy:
    """Stands in for sqlalchemy.create_engine: records the engines made and their
    connection attempts (each refused or answered)."""

    def __init__(self, fails: bool):
        self.events: list[tuple] = []
        self.fails = fails

    def __call__(self, url, **kwargs):
        spy = self
        spy.events.append(("engine", url.username, url.host, url.port, url.database, kwargs))

        class Engine:
            def connect(self):
                spy.events.append(("connect",))
                if spy.fails:
                    raise RuntimeError("FATAL: password authentication failed")
                return object()

            def dispose(self):
                spy.events.append(("dispose",))

        return Engine()


@pytest.mark.parametrize("fails", [False, True])
@pytest.mark.filterwarnings("ignore:pandas only supports SQLAlchemy")  # the spy's connection
def test_default_login_is_one_connection_through_public_interfaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    """The default login makes ONE connection attempt of its own (SQLAlchemy, SSL
    required, autocommit), touching none of the wrds client's private methods and not its
    retrying connect(): a client release that renames them changes nothing here."""
    import sys

    import sqlalchemy

    spy = _EngineSpy(fails)
    monkeypatch.setattr(sqlalchemy, "create_engine", spy)
    # a `wrds` module that fails whatever is used of it
    monkeypatch.setitem(sys.modules, "wrds", None)
    src = WrdsSource("jdoe", 2001, 2001, cache_dir=tmp_path, progress=False)
    if fails:
        with pytest.raises(UserError, match="one attempt"):
            src.pull()
        with pytest.raises(UserError):
            src.pull()
    else:
        with pytest.raises(UserError, match="failed after 0 of 3"):  # the spy answers no SQL
            src.pull()
    engine = spy.events[0]
    assert engine[1:5] == ("jdoe", "wrds-pgdata.wharton.upenn.edu", 9737, "wrds")
    assert engine[5]["isolation_level"] == "AUTOCOMMIT"
    assert engine[5]["connect_args"]["sslmode"] == "require"
    assert [e for e in spy.events if e[0] in ("engine", "connect")] == [engine, ("connect",)]


def test_no_second_login_after_a_failed_query_in_the_same_run(tmp_path: Path) -> None:
    factory = Factory(FakeWrds(fail_after=1), FakeWrds())
    src = source(tmp_path, factory)
    with pytest.raises(UserError, match="failed after 1 of 6"):
        src.pull()
    with pytest.raises(UserError, match="already logged in to WRDS once"):
        src.pull()
    assert factory.calls == ["jdoe"]


@pytest.mark.parametrize("name", ["jdoe", "2jdoe", "j.doe-x", "j_doe", "JDoe"])
def test_wrds_user_names_are_accepted(tmp_path: Path, name: str) -> None:
    factory = Factory(FakeWrds())
    src = WrdsSource(name, 2001, 2001, cache_dir=tmp_path, connection_factory=factory)
    src.progress = False
    src.pull()
    assert factory.calls == [name]


@pytest.mark.parametrize(
    "name", ["", "j doe", "j:doe", "j@doe", "j/doe", "-jdoe", "j%20", "a" * 64]
)
def test_names_that_would_change_the_address_are_refused(name: str) -> None:
    factory = Factory(FakeWrds())
    with pytest.raises(UserError, match="Not a WRDS user name"):
        WrdsSource(name, connection_factory=factory)
    assert factory.calls == []


def test_server_from_flags_settings_and_defaults(
    settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proforma.app.store.settings import get_settings

    assert Server.from_settings(get_settings()) == Server(
        "wrds-pgdata.wharton.upenn.edu", 9737, "wrds"
    )
    monkeypatch.setenv("PROFORMA_WRDS_HOST", "pg.example.org")
    monkeypatch.setenv("PROFORMA_WRDS_PORT", "5432")
    get_settings.cache_clear()
    assert Server.from_settings(get_settings()) == Server("pg.example.org", 5432, "wrds")
    assert Server.from_settings(get_settings(), host="h", database="d") == Server("h", 5432, "d")
    factory = Factory(FakeWrds())
    src = WrdsSource("jdoe", 2001, 2001, cache_dir=tmp_path, connection_factory=factory)
    src.progress = False
    src.pull()
    assert factory.servers == [Server("pg.example.org", 5432, "wrds")]
    # another server, another cache: chunks never mix with WRDS's
    wrds = WrdsSource("jdoe", 2001, 2001, cache_dir=tmp_path, server=Server())
    assert wrds.chunks()[0].folder != src.chunks()[0].folder
    for bad in (Server("a b"), Server(port=0), Server(database="x;y")):
        with pytest.raises(UserError, match="Not a"):
            WrdsSource("jdoe", server=bad, connection_factory=factory)


def test_pghost_is_named_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGHOST", raising=False)
    assert Server().pghost_note() is None
    monkeypatch.setenv("PGHOST", "wrds-pgdata.wharton.upenn.edu")
    assert Server().pghost_note() is None
    monkeypatch.setenv("PGHOST", "localhost")
    note = Server().pghost_note()
    assert note is not None and "PGHOST=localhost is set but not used" in note


def test_queries_order_every_column(tmp_path: Path) -> None:
    src = source(tmp_path, Factory())
    fundq, industry, links = src.chunks()[0], src.chunks()[-2], src.chunks()[-1]
    assert fundq.sql.endswith(f"ORDER BY {', '.join(fundq_columns())}")
    assert industry.sql.endswith("ORDER BY gvkey, datadate, sich, naicsh")
    assert links.sql.endswith("ORDER BY gvkey, linkdt, linkenddt, lpermno, linktype, linkprim")


def test_pull_dates_refresh_and_stale_industry(tmp_path: Path) -> None:
    import json

    src = source(tmp_path, Factory(FakeWrds()))
    src.pull()
    chunks = src.chunks()
    day = chunks[0].pulled_at()[:10]
    assert day == dt.datetime.now(dt.UTC).date().isoformat()
    meta = json.loads(chunks[0].meta_path.read_text())
    assert meta["rows"] == 12 and "ORDER BY" in meta["sql"]

    def backdate(chunk, stamp: str) -> None:
        m = json.loads(chunk.meta_path.read_text())
        m["pulled_at"] = stamp
        chunk.meta_path.write_text(json.dumps(m))

    for c in chunks:
        backdate(c, "2026-01-05T10:00:00+00:00")
    backdate(chunks[2], "2026-02-01T10:00:00+00:00")  # one later fundq year
    backdate(chunks[3], "2026-02-01T10:00:00+00:00")
    again = source(tmp_path, Factory())
    # industry and links are older than the newest fundq year: pulled again
    assert [(c.table, c.label) for c in again.missing()] == [
        ("co_industry", "all"),
        ("ccm_link", "all"),
    ]
    for c in chunks[4:]:
        backdate(c, "2026-02-01T10:00:00+00:00")
    again = source(tmp_path, Factory())
    assert again.missing() == []
    assert again.cached_lines() == [
        "reusing fundq 2000-2001 pulled 2026-01-05",
        "reusing fundq 2002-2003 pulled 2026-02-01",
        "reusing co_industry pulled 2026-02-01",
        "reusing ccm_link pulled 2026-02-01",
    ]
    # a missing fundq year brings industry and links along
    chunks[1].path.unlink()
    assert [(c.table, c.label) for c in source(tmp_path, Factory()).missing()] == [
        ("fundq", "2001"),
        ("co_industry", "all"),
        ("ccm_link", "all"),
    ]
    # --refresh: every chunk once, then nothing
    fake = FakeWrds()
    refresh = WrdsSource(
        "jdoe",
        2000,
        2003,
        cache_dir=tmp_path / "cache",
        connection_factory=Factory(fake),
        progress=False,
        refresh=True,
    )
    assert len(refresh.missing()) == 6
    assert refresh.pull() == 6 and refresh.missing() == []
    assert refresh.chunks()[0].pulled_at()[:10] == day


def test_cached_chunks_are_byte_identical_across_pulls(tmp_path: Path) -> None:
    import hashlib

    a = source(tmp_path / "a", Factory(FakeWrds()))
    b = source(tmp_path / "b", Factory(FakeWrds()))
    a.pull()
    b.pull()
    for x, y in zip(a.chunks(), b.chunks(), strict=True):
        assert (
            hashlib.sha256(x.path.read_bytes()).digest()
            == hashlib.sha256(y.path.read_bytes()).digest()
        )


class OverlapWrds(FakeWrds):
    """Two overlapping links for 001004 and two industry records on one date for 001045."""

    def raw_sql(self, sql: str) -> pd.DataFrame:
        frame = super().raw_sql(sql)
        if "crsp.ccmxpf_lnkhist" in sql:
            extra = pd.DataFrame(
                {
                    "gvkey": ["001004"],
                    "lpermno": [54595.0],
                    "linktype": ["LU"],
                    "linkprim": ["C"],
                    "linkdt": [pd.Timestamp("2001-01-01")],
                    "linkenddt": [pd.Timestamp("2001-12-31")],
                }
            ).pipe(like_client)
            return pd.concat([frame, extra], ignore_index=True)
        if "comp.co_industry" in sql:
            extra = pd.DataFrame(
                {
                    "gvkey": ["001045"],
                    "datadate": ["1999-12-31"],
                    "sich": [3711.0],
                    "naicsh": [336111.0],
                }
            ).pipe(like_client)
            return pd.concat([extra, frame], ignore_index=True)
        return frame


def test_overlaps_and_duplicate_industry_records(wh: Warehouse, tmp_path: Path) -> None:
    from tests.build.conftest import run_steps

    src = source(tmp_path, Factory(OverlapWrds()))
    ingest(wh, src)
    assert src.resolved["overlap_records"] == 4 and src.resolved["overlap_windows"] == 8
    assert src.resolved["industry_dup_keys"] == 1 and src.resolved["industry_dup_records"] == 2
    assert src.resolved["tied_keys"] == 0
    # 3711 (with a SIC and a NAICS) over 6020 (no NAICS) on the same date
    assert wh.fetchall("SELECT sich FROM raw.company_industry WHERE gvkey = '001045'") == [(3711,)]
    for rules, copies in (("published", 4), ("paper", 0)):
        run_steps(wh, "030", rules=rules)
        assert (
            wh.scalar("SELECT count(*) - count(DISTINCT raw_row) FROM stage.fundq_linked") == copies
        )
        # one row per firm-quarter after the de-duplication either way
        assert wh.scalar("SELECT count(*) FROM stage.fundq_dedup WHERE gvkey = '001004'") == 16
