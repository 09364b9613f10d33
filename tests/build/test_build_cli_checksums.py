"""The build CLI (--explain, build, audit, export routing), checksum normalization with
sqlglot, and the step files' shape (one opening comment per step, in order)."""

from __future__ import annotations

import re

import sqlglot
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.store.sqlfiles import checksum, normalize_sql, steps_in
from proforma.app.store.warehouse import connect
from proforma.contracts.errors import UserError
from tests.build.conftest import insert_fundq, qdate

runner = CliRunner()


def user_error(result, text: str) -> bool:
    """The command stopped with a UserError (the CLI's main() prints it and exits 2)."""
    return isinstance(result.exception, UserError) and text in str(result.exception)


def test_every_step_opens_with_its_purpose_and_parses():
    steps = steps_in("build")
    assert [s.name[:3] for s in steps] == sorted(s.name[:3] for s in steps)
    assert len(steps) == 16
    for s in steps:
        assert s.text.startswith("--"), s.name
        assert re.search(r" (from|over) ", s.purpose), s.name


def test_checksum_ignores_layout_and_comments_but_not_semantics():
    for s in steps_in("build"):
        text = s.text
        relaid = re.sub(r"\n\s*", "\n      ", text)  # re-indent every line
        relaid = "-- a different opening comment\n" + relaid.replace("\n", "  -- note\n", 3)
        assert checksum(relaid) == s.checksum, s.name
    base = "SELECT a, b FROM t WHERE x > 1"
    assert normalize_sql(base) == normalize_sql("select a,\n  b -- comment\nfrom t where x>1")
    assert checksum(base) != checksum("SELECT a, b FROM t WHERE x >= 1")
    # Parsed, not string-compared: sqlglot's canonical form of both is the same AST.
    assert sqlglot.parse_one(base, read="duckdb") == sqlglot.parse_one(
        "select a, b from t where x > 1", read="duckdb"
    )


def test_explain_prints_plan_with_checksums(settings):
    result = runner.invoke(app, ["build", "--explain"], terminal_width=300)
    assert result.exit_code == 0, result.output
    for s in steps_in("build"):
        assert s.name in result.output
        assert s.checksum[:16] in result.output
        assert s.purpose in " ".join(result.output.split())
    assert "16 steps" in result.output and "estimated from this panel" in result.output


def test_build_cli_progress_audit_and_errors(settings, wh):
    # Empty raw panel: one clear error.
    result = runner.invoke(app, ["build"])
    assert user_error(result, "raw.fundq is empty")
    rows = []
    for c in range(8):
        yr, qt = 2000 + c // 4, c % 4 + 1
        # BS13 (atq = ltq + mibtq + seqq) holds except at 2000Q3 (atq off by 10).
        rows.append(
            {
                "gvkey": "000021",
                "datadate": qdate(yr, qt),
                "fyearq": yr,
                "fqtr": qt,
                "fyr": 12,
                "atq": 100.0 + (10.0 if c == 2 else 0.0),
                "ltq": 60.0,
                "mibtq": 0.0,
                "seqq": 40.0,
            }
        )
    insert_fundq(wh, rows)
    wh.close()
    result = runner.invoke(app, ["build"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "160_tabular_view" in result.output and "done: build" in result.output
    # the footprints every warehouse has come with the panel, not with the first score
    assert "standard footprints made: full, geert, llm" in result.output
    result = runner.invoke(app, ["footprint", "list"], terminal_width=200)
    assert result.exit_code == 0 and "3 footprint version(s)" in result.output, result.output
    result = runner.invoke(app, ["audit", "identities"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "BS13" in result.output and "1 of 8 complete identity instances" in result.output
    assert "000021" in result.output and "2000Q3" in result.output
    result = runner.invoke(app, ["build", "--reg-stats", "/nonexistent/stats.parquet"])
    assert user_error(result, "No statistics file")


def test_build_warns_about_fallbacks_and_score_s_leaves_references_alone(settings, wh):
    # One firm, 2000Q1..2001Q4: each item's training pool (its 5th.. quarters through
    # 2001Q3) holds 3 ratios, too few for a kurtosis: the package's k = 1, said in one line.
    rows = []
    for c in range(8):
        yr, qt = 2000 + c // 4, c % 4 + 1
        rows.append(
            {
                "gvkey": "000021",
                "datadate": qdate(yr, qt),
                "fyearq": yr,
                "fqtr": qt,
                "fyr": 12,
                "atq": 100.0 + c,
                "ltq": 60.0,
                "seqq": 40.0 + c,
            }
        )
    insert_fundq(wh, rows)
    wh.close()
    result = runner.invoke(app, ["build"], terminal_width=80)
    assert result.exit_code == 0, result.output
    warning = [ln for ln in result.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1 and "k = 1" in warning[0], result.output
    assert "warning:" not in result.stdout  # warnings go to stderr (README)
    assert "atq" in warning[0] and "seqq" in warning[0]
    # scoring named submissions makes no reference baseline, and says so in one line
    result = runner.invoke(app, ["score", "-s", "nope"], terminal_width=200)
    assert result.exit_code != 0
    assert "reference baselines not made for this build" in result.output, result.output
    with connect(settings, read_only=True) as w:
        assert w.scalar("SELECT count(*) FROM eval.submissions WHERE source = 'reference'") == 0


def test_export_requires_a_built_panel(settings, wh, tmp_path):
    wh.close()
    result = runner.invoke(app, ["export", "--layout", "proforma20q", str(tmp_path / "x")])
    assert user_error(result, "not built")
    result = runner.invoke(app, ["export", "--layout", "other", str(tmp_path / "x")])
    assert user_error(result, "Unknown layout")
