"""The build's rule set chooses three scoring rules (contracts/rules.py): the sigma floor
(sigma_floor: paper 1e-4, published none), whether an unusable sigma leaves the common
sample (sigma_in_sample: paper) or only the density sums (published), and float32
residuals and sigmas (float32_residuals: published). Each is checked under both shipped
rule sets and switched alone in a declared one (`published` with that rule flipped)."""

from __future__ import annotations

import dataclasses
from contextlib import nullcontext

import numpy as np
import pyarrow as pa
import pytest
from scipy import special, stats
from scoring_fixtures import forecasts_from, module_warehouse

from proforma.app import scoring
from proforma.app.scoring.cells import build_rules
from proforma.contracts.errors import UserError
from proforma.contracts.rules import PAPER, PUBLISHED, RuleSet, declared

SMALL = "horizon IN (1, 7) AND item IN ('atq', 'niq')"


RULE_SETS = ["published", "paper", "sigma_floor", "sigma_in_sample", "float32_residuals"]


def _rule_set(name: str) -> RuleSet:
    """A shipped rule set, or `published` with the rule `name` at `paper`'s value."""
    if name in ("published", "paper"):
        return RuleSet.parse(name)
    return dataclasses.replace(PUBLISHED, name=f"published-{name}", **{name: getattr(PAPER, name)})


def _with_build(tmp_path_factory, rules: str | None):
    wh = module_warehouse(tmp_path_factory, f"rules_{rules}")
    if rules is not None:
        wh.execute(
            "INSERT INTO meta.builds (status, sql_checksum, parameters, reg_stats, "
            "started_at) VALUES ('succeeded', 'test', ?, 'estimate', now())",
            [f'{{"rules": "{rules}"}}'],
        )
    scoring.create_footprint(wh, "small", predicate=SMALL)
    return wh


def test_rules_of_a_build():
    assert build_rules(None) is PAPER
    assert build_rules({"parameters": '{"k_lo": 0.01}'}) is PAPER
    assert build_rules({"parameters": '{"rules": "published"}'}) is PUBLISHED
    with pytest.raises(UserError, match="unknown rule set 'other'"):
        build_rules({"parameters": {"rules": "other"}})


@pytest.mark.parametrize("name", RULE_SETS)
def test_sigma_floor_and_unusable_sigma_follow_the_rules(tmp_path_factory, name):
    rs = _rule_set(name)
    with declared(rs) if rs.name not in ("published", "paper") else nullcontext():
        _sigma_floor_and_unusable_sigma(_with_build(tmp_path_factory, rs.name), rs)


def _sigma_floor_and_unusable_sigma(wh, rs: RuleSet) -> None:
    rules = rs.name
    cells = wh.arrow(
        "SELECT t.firm_id, t.origin_q, t.item_id, t.horizon, t.actual FROM panel.truth t "
        "JOIN ref.items i USING (item_id) WHERE t.split = 'test' AND t.horizon IN (1, 7) "
        "AND i.item IN ('atq', 'niq') ORDER BY t.firm_id, t.origin_q, t.item_id, t.horizon"
    )
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(4)
    mu = actual + rng.normal(0, 0.3, actual.size)
    sigma = rng.uniform(0.2, 0.6, actual.size)
    sigma[:3] = 1e-6  # below the paper's floor
    single = scoring.ingest_forecasts(wh, "single", forecasts_from(cells, mu, sigma))
    mus = actual[None, :] + rng.normal(0, 0.3, (2, actual.size))
    sds = rng.uniform(0.2, 0.6, (2, actual.size))
    mixture = scoring.ingest_forecasts(
        wh,
        "mixture",
        pa.concat_tables([forecasts_from(cells, mus[j], sds[j], component=j) for j in range(2)]),
    )
    points = scoring.ingest_forecasts(wh, "points", forecasts_from(cells, mu))
    # no sigma column at all: aggregated by the point-only step (066), not 065
    bare = scoring.ingest_forecasts(wh, "bare points", forecasts_from(cells, mu).drop(["sigma"]))
    # Unusable sigmas cannot pass validation; forecasts stored before it (or by hand) can
    # hold them, and the rules say what they mean.
    bad = [5, 6, 7]
    for pos, sid, component in [(5, single, 0), (6, single, 0), (7, mixture, 1)]:
        wh.execute(
            "UPDATE eval.forecast_rows SET sigma = ? WHERE submission_id = ? AND firm_id = ? "
            "AND origin_q = ? AND item_id = ? AND horizon = ? AND component = ?",
            [
                0.0 if pos != 6 else float("nan"),
                sid,
                cells["firm_id"][pos].as_py(),
                cells["origin_q"][pos].as_py(),
                cells["item_id"][pos].as_py(),
                cells["horizon"][pos].as_py(),
                component,
            ],
        )
    run = scoring.score(wh, "small", [single, mixture, points, bare], coherence=False)
    assert wh.scalar("SELECT rules FROM eval.score_runs WHERE score_run_id = ?", [run]) == rules
    g = {
        r["submission_id"]: r
        for r in wh.arrow(
            "SELECT * FROM eval.metrics WHERE score_run_id = ? AND level = 'global'", [run]
        ).to_pylist()
    }

    def without(*positions):
        mask = np.ones(actual.size, bool)
        mask[list(positions)] = False
        return mask

    if not rs.sigma_in_sample:
        # Every cell with finite points is in the sample; density sums skip unusable sigmas.
        sample = np.ones(actual.size, bool)
        dens_single, dens_mixture = without(5, 6), without(7)
    else:
        sample = without(*bad)
        dens_single = dens_mixture = sample
    # float32_residuals: a single forecast's residual and sigma as float32 (the package's
    # arrays); sigma_floor: then floored
    res, s = mu - actual, sigma
    if rs.float32_residuals:
        res, s = res.astype(np.float32).astype(np.float64), s.astype(np.float32).astype(np.float64)
    if rs.sigma_floor is not None:
        s = np.maximum(s, rs.sigma_floor)
    assert all(m["n"] == sample.sum() for m in g.values())
    assert g[points]["mse"] == pytest.approx(np.mean(res[sample] ** 2), rel=1e-12)
    assert g[single]["n_density"] == dens_single.sum()
    assert g[mixture]["n_density"] == dens_mixture.sum()
    assert g[points]["n_density"] == 0 and g[points]["nll"] is None
    nll = -stats.norm.logpdf(res, 0.0, s)
    assert g[single]["nll"] == pytest.approx(nll[dens_single].mean(), rel=1e-9)
    cover = np.abs(stats.norm.cdf(-res / s) - 0.5) <= 0.25
    assert g[single]["cov50"] == pytest.approx(cover[dens_single].mean(), abs=1e-12)
    mix_nll = -(special.logsumexp(stats.norm.logpdf(actual[None, :], mus, sds), axis=0) - np.log(2))
    assert g[mixture]["nll"] == pytest.approx(mix_nll[dens_mixture].mean(), rel=1e-9)
    assert g[mixture]["mse"] == pytest.approx(
        np.mean((mus.mean(axis=0) - actual)[sample] ** 2), rel=1e-12
    )
    # The PIT histogram counts the cells with a density only (a cell without one once
    # landed in the last bin), and point forecasts have none.
    pit = dict(
        wh.fetchall(
            "SELECT submission_id, sum(n) FROM eval.pit WHERE score_run_id = ? GROUP BY 1", [run]
        )
    )
    assert pit == {single: dens_single.sum(), mixture: dens_mixture.sum()}

    def metric_rows(sid):
        return wh.arrow(
            "SELECT level, horizon, item_id, statement, n, n_density, r2, mse, mae "
            "FROM eval.metrics WHERE score_run_id = ? AND submission_id = ? "
            "ORDER BY level, horizon, item_id, statement",
            [run, sid],
        ).to_pylist()

    got, want = metric_rows(bare), metric_rows(points)
    assert [list(r.values())[:6] for r in got] == [list(r.values())[:6] for r in want]
    # the same sums in another order (parallel aggregation): equal up to rounding
    assert [v for r in got for v in list(r.values())[6:]] == pytest.approx(
        [v for r in want for v in list(r.values())[6:]], rel=1e-12
    )
    wh.close()


@pytest.mark.parametrize("name", ["published", "paper", "float32_residuals"])
def test_published_residuals_and_sigmas_are_float32(tmp_path_factory, name):
    """published: residual and sigma are rounded to float32 before any score, as the
    published evaluator stores them; paper keeps double precision."""
    rs = _rule_set(name)
    with declared(rs) if rs.name not in ("published", "paper") else nullcontext():
        _float32_residuals(_with_build(tmp_path_factory, rs.name), rs)


def _float32_residuals(wh, rs: RuleSet) -> None:
    cells = wh.arrow(
        "SELECT firm_id, origin_q, item_id, horizon, actual FROM panel.truth "
        "WHERE split = 'test' ORDER BY ALL LIMIT 200"
    )
    actual = cells["actual"].to_numpy().astype(np.float64)
    mu = actual + 0.1 + 1e-9 * np.arange(actual.size)  # digits float32 cannot hold
    sigma = 0.3 + 1e-9 * np.arange(actual.size)
    sid = scoring.ingest_forecasts(wh, "precise", forecasts_from(cells, mu, sigma))
    scoring.score(wh, "full", submissions=[sid], coherence=False, baselines=False)
    got = wh.arrow(
        "SELECT cell, r, z FROM eval.cell_scores WHERE submission_id = ? ORDER BY cell", [sid]
    ).to_pylist()
    keys = wh.arrow(
        "SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell FROM panel.truth "
        "WHERE split = 'test' ORDER BY firm_id, origin_q, item_id, horizon LIMIT 200"
    )
    by_cell = {r["cell"]: r for r in got}
    for i, key in enumerate(keys["cell"].to_pylist()):
        r, s = mu[i] - actual[i], sigma[i]
        if rs.float32_residuals:
            r, s = float(np.float32(r)), float(np.float32(s))
        assert by_cell[key]["r"] == pytest.approx(r, rel=1e-15, abs=0)
        assert by_cell[key]["z"] == pytest.approx(r / s, rel=1e-14)
    wh.close()
