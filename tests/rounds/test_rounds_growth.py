"""The synthetic panel grown forward (`--through`): history through the design window's
end is bit-identical, the new quarters come from the same process, the oracle has
frontier origins, and each ingest records its vintage."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from rounds_helpers import PANEL, config
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.sources import ingest
from proforma.app.sources.base import RawTables, Source
from proforma.app.sources.synthetic import SyntheticConfig, SyntheticSource
from proforma.app.sources.vintages import vintages
from proforma.contracts.errors import UserError


def _tables(cfg: SyntheticConfig) -> dict[str, pa.Table]:
    raw = SyntheticSource(cfg).tables()
    parts = {"fundq": raw.fundq, "company_industry": raw.company_industry, "ccm_link": raw.ccm_link}
    out: dict[str, pa.Table] = {}
    for name, data in [*parts.items(), *((n, d) for n, (_, d) in raw.extras.items())]:
        if isinstance(data, pa.Table):
            out[name] = data
        elif isinstance(data, pa.RecordBatchReader):
            out[name] = data.read_all()
        else:
            out[name] = pa.Table.from_batches(list(data))
    return out


def test_grown_history_is_bit_identical() -> None:
    base = _tables(SyntheticConfig.for_scale("demo", **PANEL))
    grown = _tables(config("2012Q2"))
    last = pc.max(base["fundq"].column("datadate"))
    cut = pc.less_equal(grown["fundq"].column("datadate"), last)
    assert grown["fundq"].filter(cut).equals(base["fundq"])
    new = grown["fundq"].filter(pc.invert(cut))
    years = {d.year for d in new.column("datadate").to_pylist()}
    assert years == {2011, 2012} and new.num_rows > 20
    assert grown["company_industry"].equals(base["company_industry"])
    assert grown["ccm_link"].equals(base["ccm_link"])
    # the sampled oracle origins and their paths are the same; frontier origins follow
    k = base["raw.oracle_origins"].num_rows
    assert grown["raw.oracle_origins"].slice(0, k).equals(base["raw.oracle_origins"])
    frontier = grown["raw.oracle_origins"].slice(k)
    assert set(frontier.column("origin_q").to_pylist()) == {2010 * 4 + 3, 2012 * 4 + 1}
    paths = grown["raw.oracle_paths"]
    sampled = paths.filter(pc.less(paths.column("origin_id"), k))
    base_paths = base["raw.oracle_paths"]
    assert sampled.filter(pc.greater(sampled.column("horizon"), 0)).equals(
        base_paths.filter(pc.greater(base_paths.column("horizon"), 0))
    )


def test_same_through_same_data_and_frontier_kept() -> None:
    a = _tables(config("2011Q1"))
    b = _tables(config("2011Q1"))
    assert a["fundq"].equals(b["fundq"])
    # the 2010Q4 frontier keeps its origins and paths when the panel grows further
    c = _tables(config("2011Q3"))
    q = 2010 * 4 + 3
    for t in (a, c):
        t["front"] = t["raw.oracle_origins"].filter(
            pc.equal(t["raw.oracle_origins"].column("origin_q"), q)
        )
    assert a["front"].drop(["origin_id"]).equals(c["front"].drop(["origin_id"]))


def test_default_parameters_unchanged_and_bad_through() -> None:
    assert "through" not in SyntheticConfig.for_scale("demo", **PANEL).as_dict()
    with pytest.raises(UserError, match="--through"):
        config("2009Q4")
    result = CliRunner().invoke(
        app, ["ingest", "synthetic", "--firms", "5", "--end", "2008", "--through", "2008Q9"]
    )
    assert result.exit_code != 0


class _Fixed(Source):
    name = "fixed"

    def __init__(self, tables: RawTables):
        self.raw = tables

    def parameters(self) -> dict:
        return {}

    def tables(self) -> RawTables:
        return self.raw


def test_vintages_keep_what_each_ingest_said(wh) -> None:
    ingest(wh, SyntheticSource(config("2010Q4")))
    ingest(wh, SyntheticSource(config("2011Q2")))
    first, second = vintages(wh)
    assert first.rows_new > 0 and first.rows_restated == 0
    assert second.last_q == 2011 * 4 + 1 and second.rows_restated == 0
    assert second.rows_dropped == 0
    assert second.rows_new == wh.scalar(
        "SELECT count(*) FROM raw.fundq WHERE datadate > DATE '2010-12-31'"
    )
    # a restatement: one value of one row changes; both versions stay in the vintages
    fundq = wh.arrow("SELECT * FROM raw.fundq ORDER BY gvkey, datadate")
    revt = fundq.column("revtq").to_pylist()
    i = next(j for j, v in enumerate(revt) if v is not None)
    revt[i] = revt[i] * 1.1
    fundq = fundq.set_column(fundq.schema.get_field_index("revtq"), "revtq", pa.array(revt))
    ingest(
        wh,
        _Fixed(
            RawTables(
                fundq=fundq,
                company_industry=wh.arrow("SELECT * FROM raw.company_industry"),
                ccm_link=wh.arrow("SELECT * FROM raw.ccm_link"),
            )
        ),
    )
    third = vintages(wh)[-1]
    assert (third.rows_new, third.rows_restated, third.rows_dropped) == (0, 1, 0)
    key = (fundq.column("gvkey")[i].as_py(), fundq.column("datadate")[i].as_py())
    versions = wh.fetchall(
        "SELECT ingest_id, revtq FROM raw.fundq_vintages WHERE gvkey = ? AND datadate = ? "
        "ORDER BY ingest_id",
        list(key),
    )
    assert [v[0] for v in versions] == [first.ingest_id, third.ingest_id]
    assert versions[1][1] == pytest.approx(versions[0][1] * 1.1)
