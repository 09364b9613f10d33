"""Ingest through proforma.app.sources.ingest and the CLI; the validation report on the result."""

from __future__ import annotations

import json

from synthetic_helpers import tiny_config
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.sources import ingest
from proforma.app.sources.synthetic import SyntheticSource
from proforma.app.sources.synthetic.validation import validation_report
from proforma.contracts.errors import UserError


def test_ingest_writes_raw_tables_oracle_and_provenance(wh):
    cfg = tiny_config(firms=40)
    result = ingest(wh, SyntheticSource(cfg))
    assert result.rows["fundq"] == wh.scalar("SELECT count(*) FROM raw.fundq") > 300
    assert wh.scalar("SELECT count(*) FROM raw.company_industry") > 0
    assert wh.scalar("SELECT count(*) FROM raw.ccm_link") > 0
    src, params = wh.fetchone("SELECT source, parameters FROM raw.ingests")
    assert src == "synthetic" and json.loads(params)["seed"] == cfg.seed
    meta = wh.scalar("SELECT parameters FROM raw.oracle_meta")
    assert json.loads(meta) == json.loads(params)
    k = wh.scalar("SELECT count(*) FROM raw.oracle_origins")
    assert k == cfg.oracle_origins
    assert wh.scalar("SELECT count(*) FROM raw.oracle_paths") == k * (1 + 4 * 6)
    assert wh.scalar("SELECT count(*) FROM raw.fundq WHERE length(gvkey) <> 6") == 0
    # a second ingest replaces everything, oracle tables included
    ingest(wh, SyntheticSource(tiny_config(firms=20, seed=9, oracle_origins=3)))
    assert wh.scalar("SELECT count(*) FROM raw.oracle_origins") == 3
    assert wh.scalar("SELECT count(DISTINCT gvkey) FROM raw.fundq") <= 20

    report = validation_report(wh)
    assert report.identity_violations == 0
    assert report.identities.num_rows == 26
    assert sum(report.identities.column("evaluated").to_pylist()) > 1000
    assert report.availability.num_rows == 78 * 3
    assert report.joint.column("scope").to_pylist() == ["full", "test"]
    checks = dict(
        zip(
            report.ytd.column("check_name").to_pylist(),
            report.ytd.column("value").to_pylist(),
            strict=True,
        )
    )
    assert (
        checks[
            "negative quarterly flows of non-negative items (capx, dv, aqc, sstk, prstkc, dltis, dltr, ivch, siv, sppe)"
        ]
        == 0
    )


def test_cli_ingest_validate_and_bad_input(settings):
    runner = CliRunner()
    for args in (
        ["ingest", "synthetic", "--help"],
        ["synthetic", "validate", "--help"],
        ["oracle", "--help"],
    ):
        assert runner.invoke(app, args).exit_code == 0
    ok = runner.invoke(
        app,
        [
            "ingest",
            "synthetic",
            "--firms",
            "25",
            "--start",
            "2006",
            "--end",
            "2012",
            "--oracle-origins",
            "2",
            "--oracle-paths",
            "2",
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert "done:" in ok.output and "synthetic" in ok.output
    report = runner.invoke(app, ["synthetic", "validate"])
    assert report.exit_code == 0, report.output
    assert "0 identity violation(s)" in report.output and "Joint availability" in report.output
    bad = runner.invoke(app, ["ingest", "synthetic", "--start", "2020", "--end", "2010"])
    # UserError: one line, exit 2 through proforma.app.cli.main (the runner calls the typer app)
    assert isinstance(bad.exception, UserError) and "--start" in str(bad.exception)
    bad_scale = runner.invoke(app, ["ingest", "synthetic", "--scale", "huge"])
    assert isinstance(bad_scale.exception, UserError) and "Unknown scale" in str(
        bad_scale.exception
    )
    # the failed runs wrote nothing: still the 25-firm panel
    from proforma.app.store.warehouse import connect

    with connect() as wh:
        assert wh.scalar("SELECT count(DISTINCT gvkey) FROM raw.fundq") <= 25
        assert wh.scalar("SELECT count(*) FROM raw.ingests") == 1
    no_build = runner.invoke(app, ["oracle"])
    assert isinstance(no_build.exception, UserError) and "proforma build" in str(no_build.exception)
