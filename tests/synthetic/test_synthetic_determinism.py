"""A panel is a pure function of its configuration."""

from __future__ import annotations

import pyarrow as pa
from synthetic_helpers import tiny_config

from proforma.app.sources.synthetic import SyntheticSource


def _tables(seed: int) -> dict[str, pa.Table]:
    raw = SyntheticSource(tiny_config(seed=seed, firms=30)).tables()
    assert isinstance(raw.fundq, pa.RecordBatchReader)  # the history streams
    out = {
        "fundq": raw.fundq.read_all(),
        "company_industry": raw.company_industry,
        "ccm_link": raw.ccm_link,
    }
    for name, (_, data) in raw.extras.items():
        out[name] = (
            data.read_all()
            if isinstance(data, pa.RecordBatchReader)
            else (data if isinstance(data, pa.Table) else pa.Table.from_batches(list(data)))
        )
    return out


def test_same_seed_same_panel_and_oracle():
    a, b = _tables(3), _tables(3)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].equals(b[name]), name
    assert a["fundq"].num_rows > 300
    assert a["raw.oracle_paths"].num_rows > 0


def test_other_seed_other_panel():
    a, c = _tables(3), _tables(4)
    assert not a["fundq"].equals(c["fundq"])
