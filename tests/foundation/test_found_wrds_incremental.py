"""An incremental WRDS pull (`ingest wrds --incremental`) against the fake connection of
test_found_wrds.py: only the years from the cached pull's newest quarter on are fetched
again, and each ingest is recorded with its vintage (new and restated rows)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from test_found_wrds import Factory, FakeWrds
from typer.testing import CliRunner

import proforma.app.sources.wrds as wrds_source
from proforma.app.sources import ingest
from proforma.app.sources.wrds import WrdsSource
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError


class Restating(FakeWrds):
    """The fake server, later: `restated` years answer with revised atq values."""

    def __init__(self, restated: tuple[int, ...] = ()):
        super().__init__()
        self.restated = restated

    def raw_sql(self, sql: str) -> pd.DataFrame:
        frame = super().raw_sql(sql)
        m = re.search(r"BETWEEN '(\d{4})-01-01'", sql)
        if m and int(m.group(1)) in self.restated:
            frame["atq"] = frame["atq"] + 0.5
        return frame


def _src(
    tmp_path: Path, factory: Factory, end: int, incremental: bool = False, refresh: bool = False
) -> WrdsSource:
    return WrdsSource(
        "jdoe",
        2000,
        end,
        cache_dir=tmp_path / "cache",
        connection_factory=factory,
        progress=False,
        incremental=incremental,
        refresh=refresh,
    )


def _years(fake: FakeWrds) -> list[int]:
    return [int(y) for q in fake.queries for y in re.findall(r"BETWEEN '(\d{4})", q)]


def test_incremental_pull_adds_only_the_new_quarters(wh: Warehouse, tmp_path: Path) -> None:
    ingest(wh, _src(tmp_path, Factory(FakeWrds()), 2002))
    # a year later: 2003 has been filed and 2002's quarters restated
    later = Restating(restated=(2002,))
    src = _src(tmp_path, Factory(later), 2003, incremental=True)
    assert src.since_year() == 2002
    result = ingest(wh, src)
    assert _years(later) == [2002, 2003]  # 2000 and 2001 come from the cache
    assert result.rows["fundq"] == 4 * 12
    assert len(later.queries) == 4  # and the two small tables again
    (first, second) = wh.fetchall(
        "SELECT ingest_id, first_q, last_q, rows_new, rows_restated, rows_dropped "
        "FROM raw.vintages ORDER BY ingest_id"
    )
    assert first[3] == 36 and second[3:] == (12, 12, 0)  # 2003 new, 2002 restated
    assert second[2] == 2003 * 4 + 3
    assert wh.scalar("SELECT count(*) FROM raw.fundq_vintages") == 36 + 12 + 12
    label, params = wh.one("SELECT vintage, parameters FROM raw.ingests ORDER BY 1 DESC LIMIT 1")
    assert "incremental: 2002-2003" in label and '"from_year": 2002' in params
    # nothing filed since: the newest year (2003) is fetched again, no other
    again = FakeWrds()
    ingest(wh, _src(tmp_path, Factory(again), 2003, incremental=True))
    assert _years(again) == [2003]
    last = wh.one(
        "SELECT rows_new, rows_restated FROM raw.vintages ORDER BY ingest_id DESC LIMIT 1"
    )
    assert last == (0, 0)


def test_incremental_needs_an_earlier_pull(tmp_path: Path) -> None:
    factory = Factory(FakeWrds())
    with pytest.raises(UserError, match="run the pull once without --incremental"):
        _src(tmp_path, factory, 2003, incremental=True).missing()
    assert factory.calls == []
    with pytest.raises(UserError, match="--refresh pulls every year"):
        _src(tmp_path, factory, 2003, incremental=True, refresh=True)


def test_cli_incremental(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from proforma.app.cli import app

    factory = Factory(FakeWrds(), FakeWrds())
    monkeypatch.setattr(wrds_source, "_login", factory)
    base = ["ingest", "wrds", "--user", "jdoe", "--start", "2001"]
    refused = CliRunner().invoke(app, [*base, "--end", "2002", "--incremental"])
    assert isinstance(refused.exception, UserError) and factory.calls == []
    assert CliRunner().invoke(app, [*base, "--end", "2002"]).exit_code == 0
    result = CliRunner().invoke(app, [*base, "--end", "2003", "--incremental"])
    assert result.exit_code == 0, result.output
    assert "1 of 5 chunks cached, 4 to fetch (one login)" in result.output
    assert factory.calls == ["jdoe", "jdoe"]


class Unfiled(FakeWrds):
    """The fake server before `first_empty` has been filed: no fundq rows from it on."""

    def __init__(self, first_empty: int):
        super().__init__()
        self.first_empty = first_empty

    def raw_sql(self, sql: str) -> pd.DataFrame:
        frame = super().raw_sql(sql)
        m = re.search(r"BETWEEN '(\d{4})-01-01'", sql)
        return frame.iloc[0:0] if m and int(m.group(1)) >= self.first_empty else frame


def test_incremental_starts_at_the_newest_quarter_held_not_the_last_year_asked(
    wh: Warehouse, tmp_path: Path
) -> None:
    # the first pull asked through 2003, but 2003 had no filing yet (an empty chunk)
    ingest(wh, _src(tmp_path, Factory(Unfiled(2003)), 2003))
    later = FakeWrds()
    src = _src(tmp_path, Factory(later), 2003, incremental=True)
    assert src.since_year() == 2002
    ingest(wh, src)
    assert _years(later) == [2002, 2003]
    new = wh.scalar("SELECT rows_new FROM raw.vintages ORDER BY ingest_id DESC LIMIT 1")
    assert new == 12
