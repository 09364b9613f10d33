"""A throwaway PostgreSQL server shaped like WRDS, for the WRDS source's end-to-end tests.

`WrdsServer` runs Debian's PostgreSQL (initdb, pg_ctl) in a temporary directory:
loopback only, SSL with a self-signed certificate made by openssl at start, password
(scram) logins, connections logged. PostgreSQL refuses to run as root, so under root the
cluster belongs to the `postgres` system user. `load_panel` creates comp.fundq,
comp.co_industry and crsp.ccmxpf_lnkhist with WRDS's column types and fills them.
`edge_panel()` is the small panel of the tests: every kind of record real WRDS tables
hold that the pull or the build must handle (see its docstring).

bench/wrds_side_by_side.py uses the same server for the comparison with the package.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proforma.app.store.reference import raw_item_columns_from_file

ITEMS = raw_item_columns_from_file()
#: comp.fundq columns of the test server: the pulled ones, the package's extra ones
#: (tic, conm) and the filter columns, plus two WRDS columns nobody pulls.
FUNDQ_SERVER_COLUMNS = [
    "gvkey",
    "datadate",
    "fyearq",
    "fqtr",
    "fyr",
    "tic",
    "conm",
    "indfmt",
    "datafmt",
    "consol",
    "popsrc",
    "curcdq",
    "fic",
    *ITEMS,
]
_TEXT = {"gvkey", "tic", "conm", "indfmt", "datafmt", "consol", "popsrc", "curcdq", "fic"}


def postgres_bin() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres (PROFORMA_POSTGRES_BIN, else Debian's)."""
    given = os.environ.get("PROFORMA_POSTGRES_BIN")
    candidates = [Path(given)] if given else []
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        versions = sorted(
            (p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name), reverse=True
        )
        candidates += [v / "bin" for v in versions]
    for c in candidates:
        if all((c / b).is_file() for b in ("initdb", "pg_ctl", "postgres")):
            return c
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class WrdsServer:
    """A PostgreSQL cluster on 127.0.0.1:port with SSL; `start()` then `stop()`."""

    port: int
    admin_password: str = "admin-secret"
    bindir: Path | None = None
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pfwrds-")))

    def __post_init__(self) -> None:
        self.bindir = self.bindir or postgres_bin()
        if self.bindir is None:
            raise RuntimeError("no PostgreSQL server binaries (initdb, pg_ctl, postgres)")
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._owner: pwd.struct_passwd | None = None
        if os.geteuid() == 0:  # PostgreSQL refuses root: run it as `postgres`
            try:
                self._owner = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    "running as root, but there is no `postgres` system user to run "
                    "PostgreSQL as (Debian's postgresql package creates it)"
                ) from None

    def _run(self, *args: str) -> None:
        kw: dict[str, Any] = {}
        if self._owner is not None:
            kw = {"user": self._owner.pw_uid, "group": self._owner.pw_gid, "extra_groups": []}
        subprocess.run(list(args), check=True, capture_output=True, text=True, cwd=self.root, **kw)

    def start(self) -> WrdsServer:
        assert self.bindir is not None
        pwfile = self.root / "pw"
        pwfile.write_text(self.admin_password + "\n")
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                str(self.root / "server.key"),
                "-out",
                str(self.root / "server.crt"),
            ],
            check=True,
            capture_output=True,
        )
        os.chmod(self.root / "server.key", 0o600)
        if self._owner is not None:
            for p in [self.root, *self.root.iterdir()]:
                os.chown(p, self._owner.pw_uid, self._owner.pw_gid)
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "admin",
            "--pwfile",
            str(pwfile),
            "--auth",
            "scram-sha-256",
            "-E",
            "UTF8",
            "--locale",
            "C",
        )
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.root}'",
            "ssl": "on",
            "ssl_cert_file": f"'{self.root / 'server.crt'}'",
            "ssl_key_file": f"'{self.root / 'server.key'}'",
            "log_connections": "on",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "'32MB'",
            "max_connections": "20",
        }
        with open(self.data / "postgresql.conf", "a") as f:
            f.writelines(f"{k} = {v}\n" for k, v in conf.items())
        # SSL only, passwords only, loopback only.
        (self.data / "pg_hba.conf").write_text("hostssl all all 127.0.0.1/32 scram-sha-256\n")
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "start"
        )
        return self

    def stop(self) -> None:
        try:
            if self.bindir is not None and (self.data / "postmaster.pid").exists():
                self._run(
                    str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"
                )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- as the administrator ------------------------------------------------------------
    def admin(self, database: str = "postgres") -> Any:
        import psycopg2  # the wrds client's driver

        con = psycopg2.connect(
            host="127.0.0.1",
            port=self.port,
            user="admin",
            password=self.admin_password,
            dbname=database,
            sslmode="require",
        )
        con.autocommit = True
        return con

    def sql(self, statement: str, database: str = "wrds") -> None:
        con = self.admin(database)
        try:
            with con.cursor() as cur:
                cur.execute(statement)
        finally:
            con.close()

    def create_database(self, name: str = "wrds") -> None:
        self.sql(f"CREATE DATABASE {name}", database="postgres")

    def add_user(self, user: str, password: str, crsp: bool = True, database: str = "wrds") -> None:
        """A login role reading comp.* (and crsp.* unless crsp=False), as a subscriber."""
        self.sql(f"CREATE ROLE \"{user}\" LOGIN PASSWORD '{password}'", database)
        schemas = ["comp", "crsp"] if crsp else ["comp"]
        for s in schemas:
            self.sql(f'GRANT USAGE ON SCHEMA {s} TO "{user}"', database)
            self.sql(f'GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO "{user}"', database)

    def logins(self, user: str) -> int:
        """Login attempts of `user` so far: authorized connections plus failed passwords."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        ok = len(re.findall(rf"connection authorized: user={re.escape(user)} ", text))
        bad = len(re.findall(rf'password authentication failed for user "{re.escape(user)}"', text))
        return ok + bad


# -- the three tables ------------------------------------------------------------------------
def load_panel(
    server: WrdsServer,
    fundq: list[dict[str, Any]],
    industry: list[dict[str, Any]],
    links: list[dict[str, Any]],
    key_type: str = "double precision",
    database: str = "wrds",
) -> None:
    """Create comp.fundq, comp.co_industry, crsp.ccmxpf_lnkhist (WRDS's types) and fill them
    in the given order (the heap order a sequential scan returns)."""
    cols = []
    for c in FUNDQ_SERVER_COLUMNS:
        if c in _TEXT:
            t = "character varying(8)" if c != "conm" else "character varying(64)"
        elif c == "datadate":
            t = "date"
        elif c in ("fyearq", "fqtr", "fyr"):
            t = key_type
        else:
            t = "double precision"
        cols.append(f"{c} {t}")
    con = server.admin(database)
    try:
        with con.cursor() as cur:
            cur.execute("CREATE SCHEMA comp; CREATE SCHEMA crsp;")
            cur.execute(f"CREATE TABLE comp.fundq ({', '.join(cols)})")
            cur.execute(
                "CREATE TABLE comp.co_industry (gvkey character varying(6), datadate date, "
                "sich double precision, naicsh double precision, consol character varying(2), "
                "popsrc character varying(2), fyr double precision)"
            )
            cur.execute(
                "CREATE TABLE crsp.ccmxpf_lnkhist (gvkey character varying(6), "
                "linkprim character varying(1), liid character varying(3), "
                "linktype character varying(2), lpermno double precision, "
                "lpermco double precision, linkdt date, linkenddt date)"
            )
            for table, columns, rows in (
                ("comp.fundq", FUNDQ_SERVER_COLUMNS, fundq),
                (
                    "comp.co_industry",
                    ["gvkey", "datadate", "sich", "naicsh", "consol", "popsrc", "fyr"],
                    industry,
                ),
                (
                    "crsp.ccmxpf_lnkhist",
                    ["gvkey", "linkprim", "liid", "linktype", "lpermno", "lpermco"]
                    + ["linkdt", "linkenddt"],
                    links,
                ),
            ):
                buf = io.StringIO()
                w = csv.writer(buf)
                whole = {"fyearq", "fqtr", "fyr"} if key_type == "integer" else set()
                for r in rows:
                    w.writerow(
                        [
                            "" if r.get(c) is None else int(r[c]) if c in whole else r[c]
                            for c in columns
                        ]
                    )
                buf.seek(0)
                cur.copy_expert(
                    f"COPY {table} ({', '.join(columns)}) FROM STDIN WITH (FORMAT csv)", buf
                )
    finally:
        con.close()


def _value(gvkey: str, item_no: int, quarter: int) -> float | None:
    """A deterministic item value; about one in five is missing."""
    h = (int(gvkey) * 7919 + item_no * 104729 + quarter * 1299709) % 1000003
    if h % 5 == 0:
        return None
    return round((h % 100000) / 10.0 + 50.0, 1)


def quarter_row(gvkey: str, year: int, q: int, **extra: Any) -> dict[str, Any]:
    """One comp.fundq record of a December fiscal year firm (INDL/STD/C/D, USD)."""
    month = q * 3
    last = (dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)).day
    row: dict[str, Any] = {
        "gvkey": gvkey,
        "datadate": dt.date(year, month, last),
        "fyearq": float(year),
        "fqtr": float(q),
        "fyr": 12.0,
        "tic": f"T{gvkey[-3:]}",
        "conm": f"FIRM {gvkey}",
        "indfmt": "INDL",
        "datafmt": "STD",
        "consol": "C",
        "popsrc": "D",
        "curcdq": "USD",
        "fic": "USA",
    }
    for i, c in enumerate(ITEMS):
        row[c] = _value(gvkey, i, year * 4 + q)
    row["txbcofy"] = None  # a column with no value at all (the client's all-empty text column)
    row.update(extra)
    return row


def _ind(gvkey: str, date: dt.date, sich: float | None, naicsh: float | None) -> dict[str, Any]:
    return {
        "gvkey": gvkey,
        "datadate": date,
        "sich": sich,
        "naicsh": naicsh,
        "consol": "C",
        "popsrc": "D",
        "fyr": 12.0,
    }


def _link(
    gvkey: str, permno: int, linktype: str, linkprim: str, lo: str | None, hi: str | None
) -> dict[str, Any]:
    return {
        "gvkey": gvkey,
        "linkprim": linkprim,
        "liid": "01",
        "linktype": linktype,
        "lpermno": float(permno),
        "lpermco": float(permno + 50000),
        "linkdt": dt.date.fromisoformat(lo) if lo else None,
        "linkenddt": dt.date.fromisoformat(hi) if hi else None,
    }


def edge_panel(
    years: range = range(2000, 2004),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The tests' panel: (fundq, co_industry, ccm_link) records, in heap order.

    - 001001 linked (LC/P from 2000), SIC 3711; an LN link and a J-primary link that the
      filters drop;
    - 001002 never linked, kept whole (an LX link that the filter drops would trim it);
    - 001003 overlapping links: LC/P 2000-2001 and LU/C from 2001, so the four 2001
      quarters lie in both windows; SIC 2011 (Food) from 2000Q3 to 2001Q4, 3312 (Steel
      Works) otherwise: 6 against 10 quarters once (paper: Steel Works), 10 against 10
      with a copy per window (published, ties to the smaller SIC: Food);
    - 001004 exact duplicates: two records of 2000Q2 with different atq (a tie), two
      identical records of 2000Q3;
    - 001005 a record without fqtr and one without fyearq (2001);
    - 001006 two co_industry records on one date: SIC 6199 (financial) and 3302;
    - 001007 a Canadian filer (fic CAN, curcdq CAD, popsrc D), SIC 1311;
    - records the filters drop: FS format, SUMM_STD, parent consolidation, popsrc I;
    - years outside the window (1998, 2005) and an industry record after the end year.
    """
    fundq: list[dict[str, Any]] = []
    for g in ("001001", "001002", "001003", "001004", "001005", "001006"):
        for y in years:
            for q in range(1, 5):
                fundq.append(quarter_row(g, y, q))
    for y in years:
        for q in range(1, 5):
            fundq.append(quarter_row("001007", y, q, fic="CAN", curcdq="CAD"))
    # exact duplicates: a tie with other values, and an identical pair
    tie = quarter_row("001004", years[0], 2)
    tie["atq"] = (tie["atq"] or 0.0) + 1000.0
    fundq.insert(5, tie)
    fundq.append(quarter_row("001004", years[0], 3))
    # missing fiscal keys
    fundq.append(quarter_row("001005", years[1], 2, fqtr=None, datadate=dt.date(years[1], 5, 31)))
    fundq.append(quarter_row("001005", years[1], 3, fyearq=None, datadate=dt.date(years[1], 8, 31)))
    # other formats and populations of the same firm-quarters
    fundq.append(quarter_row("001001", years[0], 1, indfmt="FS"))
    fundq.append(quarter_row("001001", years[0], 2, datafmt="SUMM_STD"))
    fundq.append(quarter_row("001002", years[0], 1, consol="P"))
    fundq.append(quarter_row("001007", years[0], 1, popsrc="I"))
    # out of the pulled window
    fundq.append(quarter_row("001001", years[0] - 2, 4))
    fundq.append(quarter_row("001002", years[-1] + 2, 1))

    first = dt.date(years[0] - 1, 12, 31)
    industry = [
        _ind("001001", first, 3711.0, 336111.0),
        _ind("001002", first, 2834.0, 325412.0),
        _ind("001003", first, 3312.0, 331110.0),
        _ind("001003", dt.date(years[0], 9, 30), 2011.0, 311611.0),
        _ind("001003", dt.date(years[2], 1, 1), 3312.0, 331110.0),
        _ind("001004", first, 2834.0, None),
        _ind("001005", first, None, None),
        # two records on one date; the rule keeps 3302, the package the last one (3302)
        _ind("001006", first, 6199.0, 523110.0),
        _ind("001006", first, 3302.0, 331110.0),
        _ind("001007", first, 1311.0, 211120.0),
        _ind("001001", dt.date(years[-1] + 3, 12, 31), 3714.0, None),  # after the end year
        {**_ind("001002", first, 9999.0, None), "popsrc": "I"},  # another population
    ]
    links = [
        _link("001001", 10001, "LC", "P", f"{years[0]}-01-01", None),
        _link("001001", 10091, "LN", "P", f"{years[0]}-01-01", None),
        _link("001001", 10092, "LC", "J", f"{years[0]}-01-01", None),
        _link("001002", 10002, "LX", "P", f"{years[1]}-01-01", None),
        _link("001003", 10003, "LC", "P", f"{years[0]}-01-01", f"{years[1]}-12-31"),
        _link("001003", 10004, "LU", "C", f"{years[1]}-01-01", None),
        _link("001004", 10005, "LU", "P", None, None),
        _link("001007", 10007, "LC", "P", f"{years[0]}-06-01", None),
    ]
    return fundq, industry, links


def wait_for(predicate: Any, timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return False
