"""`proforma run llm --provider fake` end to end on a tiny built panel, the other llm
commands, and every refused input (one message, exit 2, nothing written)."""

from __future__ import annotations

import json
import sys

import pytest

from proforma.app.cli import main
from proforma.app.store.warehouse import connect


def proforma(monkeypatch, capsys, *args: str) -> tuple[int | str | None, str]:
    monkeypatch.setattr(sys, "argv", ["proforma", *args])
    with pytest.raises(SystemExit) as info:
        main()
    out = capsys.readouterr()
    return info.value.code, " ".join((out.out + out.err).split())


def written(settings) -> dict[str, int]:
    with connect(settings, read_only=True) as wh:
        counts = {
            t: wh.scalar(f"SELECT count(*) FROM {t}") if wh.table_exists(t) else 0
            for t in ("eval.submissions", "eval.footprints", "llm.calls", "llm.noise")
        }
    return counts


def test_fake_run_writes_and_scores_on_the_llm_footprint(
    panel_wh, settings, monkeypatch, capsys
) -> None:
    panel_wh.close()
    code, out = proforma(
        monkeypatch,
        capsys,
        "run",
        "llm",
        "--provider",
        "fake",
        "--limit",
        "12",
        "--samples",
        "2",
        "--noise-origins",
        "5",
        "--concurrency",
        "2",
    )
    assert code == 0, out
    assert "draw 1: submission" in out and "12 of 12 origins forecast" in out
    assert "5 of 5 origins forecast" in out and "Decoding noise over 2 draws" in out
    assert "score run" in out and "cost $0.00" in out
    with connect(settings, read_only=True) as wh:
        subs = {
            name: (sid, json.loads(meta))
            for sid, name, meta in wh.fetchall(
                "SELECT submission_id, name, metadata FROM eval.submissions WHERE source = 'model'"
            )
        }
        main_id, meta = subs["llm-fake-srw-unstructured"]
        draw2_id, meta2 = subs["llm-fake-srw-unstructured-draw2"]
        assert meta["forecast_space"] == "dollars" and meta["llm_draw"] == 1
        assert meta["origins"] == 12 and meta2["llm_draw"] == 2 and meta2["origins"] == 5
        run = wh.one(
            "SELECT footprint_name, submission_ids, n_cells FROM eval.score_runs "
            "ORDER BY score_run_id DESC LIMIT 1"
        )
        assert run[0] == "llm" and main_id in run[1] and draw2_id not in run[1] and run[2] > 0
        assert (
            wh.scalar(
                "SELECT count(*) FROM eval.metrics WHERE submission_id = ? AND level = 'global'",
                [main_id],
            )
            == 1
        )
        calls = wh.fetchall(
            "SELECT draw, count(*), bool_and(used), bool_and(status = 'ok'), "
            "bool_and(NOT cached), sum(cost_usd) FROM llm.calls GROUP BY 1 ORDER BY 1"
        )
        assert calls == [(1, 12, True, True, True, 0.0), (2, 5, True, True, True, 0.0)]
        noise = wh.fetchall("SELECT horizon, n_origins, n_cells, mean_sd FROM llm.noise ORDER BY 1")
        assert len(noise) == 20 and all(n == 5 and c > 0 and 0 < sd < 0.5 for _, n, c, sd in noise)
        # The dollar answers were standardized like the truth: the fake's Q4 answer is the
        # reported Q0 value (two decimals), so its forecast is that value standardized
        # with the origin's parameters.
        diff = wh.one(
            """SELECT count(*), max(abs(f.mu - panel.pf_standardize(round(v.v, 2), k.k, o.z,
                                                                     p.mu, p.sigma)))
               FROM eval.forecasts f
               JOIN panel.values v ON v.firm_id = f.firm_id AND v.q = f.origin_q
                                  AND v.item_id = f.item_id
               JOIN panel.origins o ON o.firm_id = f.firm_id AND o.origin_q = f.origin_q
               JOIN panel.item_k k ON k.item_id = f.item_id
               JOIN panel.origin_params p ON p.item_id = f.item_id AND p.q = f.origin_q
               JOIN ref.items i ON i.item_id = f.item_id
               WHERE f.submission_id = ? AND f.horizon = 4
                 AND i.item IN ('revtq', 'cogsq', 'cheq', 'apq', 'dvq')""",
            [main_id],
        )
        assert diff[0] > 20 and diff[1] < 1e-9

    # A rerun pays nothing: every answer comes from the cache.
    code, out = proforma(
        monkeypatch, capsys, "run", "llm", "--provider", "fake", "--limit", "12", "--no-score"
    )
    assert code == 0 and "12 calls (12 cached)" in out, out
    with connect(settings, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM llm.calls WHERE cached") == 12
        assert (
            wh.scalar(
                "SELECT count(*) FROM eval.submissions WHERE name = "
                "'llm-fake-srw-unstructured' AND retired_at IS NULL"
            )
            == 1
        )


def test_prompt_and_sample_commands(panel_wh, settings, monkeypatch, capsys) -> None:
    first = panel_wh.fetchone("SELECT 1")  # the panel exists
    panel_wh.close()
    assert first == (1,)
    code, out = proforma(monkeypatch, capsys, "llm", "sample")
    assert code == 0 and "footprint llm version 1" in out and "origins per year: 2010:" in out
    code, out = proforma(monkeypatch, capsys, "llm", "prompt")
    assert code == 0 and out.startswith("Forecast horizons: Q1 through Q20.")
    assert "=== INCOME STATEMENT === Account,Q-11,Q-10" in out
    code, out = proforma(monkeypatch, capsys, "llm", "prompt", "--system", "--arm", "structured")
    assert code == 0 and "PROJECTION METHOD" in out
    with connect(settings, read_only=True) as wh:
        gvkey, q = wh.one(
            "SELECT p.gvkey, o.origin_q FROM eval.footprint_origins o JOIN panel.firms p "
            "USING (gvkey) ORDER BY o.origin_q DESC LIMIT 1"
        )
    quarter = f"{q // 4}Q{q % 4 + 1}"
    code, out = proforma(monkeypatch, capsys, "llm", "prompt", "--firm", gvkey, "--origin", quarter)
    assert code == 0 and "Firm industry (Fama-French 48):" in out and gvkey not in out
    code, out = proforma(
        monkeypatch, capsys, "llm", "prompt", "--firm", gvkey, "--origin", "2004Q1"
    )
    assert code == 2 and f"Firm {gvkey} at 2004Q1 is not an origin of the llm sample" in out


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["run", "llm", "--provider", "fake", "--arm", "freeform"],
            "Unknown prompt arm 'freeform'",
        ),
        (["run", "llm", "--provider", "gemini"], "Unknown provider 'gemini'"),
        (["run", "llm", "--provider", "openai"], "--model is required for the openai provider"),
        (
            ["run", "llm", "--provider", "anthropic", "--model", "claude-opus-4-8"],
            "set ANTHROPIC_API_KEY in the environment",
        ),
        (
            ["run", "llm", "--provider", "anthropic", "--model", "m", "--temperature", "0"],
            "--temperature is not available for the anthropic provider",
        ),
        (["llm", "prompt", "--firm", "001004"], "Give both --firm and --origin"),
        (
            ["llm", "prompt", "--firm", "999999", "--origin", "2012Q1"],
            "No firm 999999 in the panel",
        ),
        (["llm", "prompt", "--firm", "001004", "--origin", "2012Q5"], "Not a quarter: '2012Q5'"),
        (["llm", "sample", "--origins", "100"], "add --redraw"),
    ],
)
def test_refused_inputs_write_nothing(
    panel_wh, settings, monkeypatch, capsys, args, message
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    panel_wh.close()
    before = written(settings)
    code, out = proforma(monkeypatch, capsys, *args)
    assert code == 2 and message in out and "Traceback" not in out, out
    assert out.count("error:") == 1
    assert written(settings) == before


@pytest.mark.parametrize(
    "args",
    [
        ["run", "llm", "--provider", "fake"],
        ["llm", "sample"],
        ["llm", "sample", "--redraw"],
        ["llm", "prompt"],
    ],
)
def test_llm_commands_need_a_built_panel(wh, settings, monkeypatch, capsys, args) -> None:
    wh.close()
    code, out = proforma(monkeypatch, capsys, *args)
    assert code == 2 and "run `proforma build` first" in out and "Traceback" not in out
    assert written(settings) == {
        "eval.submissions": 0,
        "eval.footprints": 0,
        "llm.calls": 0,
        "llm.noise": 0,
    }
