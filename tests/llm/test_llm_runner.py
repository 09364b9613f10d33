"""The response cache, the one-retry policy, resume, and token and cost sums, with a
recorded provider (answers written here; no network)."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from llm_helpers import RecordedProvider

from proforma.contracts.errors import UserError
from proforma.models.llm.cache import ResponseCache, request_key
from proforma.models.llm.calls import ProviderError
from proforma.models.llm.items import DERIVED
from proforma.models.llm.prices import load_prices
from proforma.models.llm.prompts import OriginHistory
from proforma.models.llm.providers import call_with_retries
from proforma.models.llm.runner import DOLLAR_SCHEMA, LlmForecaster, forecast_table

ITEMS = {"revtq": {0: 100.0, -1: 90.0}, "cogsq": {0: 60.0}, "cheq": {-4: 10.0}}


def history(firm_id: int = 1, origin_q: int = 8050) -> OriginHistory:
    # the prompt carries no firm id: vary a value so each firm's prompt differs
    return OriginHistory(firm_id, origin_q, "Retail", {**ITEMS, "dvq": {0: float(firm_id)}})


def good(request) -> str:
    return "\n".join(f"Q{h}: revtq={100 + h}, cogsq=60.5, cheq=-1.25, dvq=0" for h in range(1, 21))


def partial(request) -> str:  # cheq missing from Q11 on
    return "\n".join(
        f"Q{h}: revtq=1, cogsq=2, dvq=0" + (", cheq=3" if h <= 10 else "") for h in range(1, 21)
    )


@pytest.fixture
def prices(tmp_path):
    path = tmp_path / "prices.csv"
    path.write_text(
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,"
        "output_usd_per_mtok,as_of,note\nrecorded,recorded-1,2,1,10,2026-11-01,test\n"
    )
    return load_prices(path)


def forecaster(provider, tmp_path, prices, arm="unstructured"):
    return LlmForecaster(
        provider,
        arm,
        ResponseCache(tmp_path / "cache"),
        prices,
        retry=functools.partial(call_with_retries, sleep=lambda s: None),
    )


def test_cache_round_trip_is_atomic_and_keyed_by_everything(tmp_path) -> None:
    cache = ResponseCache(tmp_path)
    key = request_key("p", "m", {"effort": None}, "sys", "user", 1, 1)
    assert cache.get(key) is None
    cache.put(key, {"text": "Q1: revtq=1"})
    assert cache.get(key) == {"text": "Q1: revtq=1", "key": key}
    assert [p.name for p in cache.path(key).parent.iterdir()] == [f"{key}.json"]  # no temp left
    others = [
        request_key(*args)
        for args in (
            ("p", "m", {"effort": "high"}, "sys", "user", 1, 1),
            ("p", "m2", {"effort": None}, "sys", "user", 1, 1),
            ("p", "m", {"effort": None}, "sys", "user", 2, 1),
            ("p", "m", {"effort": None}, "sys", "user", 1, 2),
            ("p", "m", {"effort": None}, "sys2", "user", 1, 1),
            ("q", "m", {"effort": None}, "sys", "user", 1, 1),
        )
    ]
    assert len({key, *others}) == 7
    cache.path(key).write_text('{"text": "Q1: rev')  # a torn or edited file counts as absent
    assert cache.get(key) is None


def test_a_good_answer_takes_one_call_and_is_rebuilt_and_priced(tmp_path, prices) -> None:
    provider = RecordedProvider(good)
    result = forecaster(provider, tmp_path, prices).forecast(history())
    assert len(provider.requests) == 1 and provider.requests[0].attempt == 1
    (call,) = result.calls
    assert (call.status, call.used, call.cached, call.cells_parsed, call.cells_expected) == (
        "ok",
        True,
        False,
        80,
        80,
    )
    assert call.cost_usd == pytest.approx((1000 * 2 + 500 * 10) / 1e6)
    assert call.prices_as_of == "2026-11-01" and call.reasoning_tokens == 250
    assert set(result.statements) == {"revtq", "cogsq", "cheq", "dvq", *DERIVED}
    assert result.statements["gpq"][0] == 101 - 60.5
    table = forecast_table([result], {name: i for i, name in enumerate(result.statements, 1)})
    assert table.schema == DOLLAR_SCHEMA and table.num_rows == (4 + 23) * 20


def test_an_unusable_answer_is_retried_once_and_the_better_one_used(tmp_path, prices) -> None:
    answers = iter(["Sorry, here is my analysis.", good(None)])
    provider = RecordedProvider(lambda r: next(answers))
    result = forecaster(provider, tmp_path, prices).forecast(history())
    assert [r.attempt for r in provider.requests] == [1, 2]
    first, second = result.calls
    assert (first.status, first.used, second.status, second.used) == (
        "incomplete",
        False,
        "ok",
        True,
    )
    assert first.reason.startswith("no Q-lines") and "note: 1 line(s) of other text" in first.reason
    assert result.statements["revtq"][19] == 120


def test_never_more_than_one_retry_and_missing_cells_stay_missing(tmp_path, prices) -> None:
    provider = RecordedProvider(partial)
    result = forecaster(provider, tmp_path, prices).forecast(history())
    assert len(provider.requests) == 2
    assert [c.used for c in result.calls] == [True, False]  # a tie keeps the first answer
    assert np.isnan(result.statements["cheq"][10:]).all() and result.statements["cheq"][9] == 3
    assert np.isnan(result.statements["atq"][10:]).all()  # built from the missing cheq
    assert result.statements["xoprq"][19] == 2  # cogsq + absent xsgaq: not built from cheq
    table = forecast_table([result], {n: i for i, n in enumerate(result.statements, 1)})
    assert np.isfinite(table["mu"].to_numpy()).all()  # missing cells are left out, never zero


def test_a_rerun_never_pays_twice_and_an_interrupted_run_resumes(tmp_path, prices) -> None:
    histories = [history(f) for f in (1, 2, 3, 4)]
    calls = []

    def flaky(request):
        calls.append(request)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the run dies mid-way
        return good(request)

    with pytest.raises(KeyboardInterrupt):
        forecaster(RecordedProvider(flaky), tmp_path, prices).forecast_many(
            histories, concurrency=1
        )
    provider = RecordedProvider(good)
    results = forecaster(provider, tmp_path, prices).forecast_many(histories, concurrency=2)
    # only the origins never answered are asked again (the worker may have answered the
    # queued fourth origin before the interruption reached the main thread)
    answered_before = len(calls) - 1
    assert answered_before >= 2 and len(provider.requests) == 4 - answered_before
    assert sum(c.cached for r in results for c in r.calls) == answered_before
    assert [r.firm_id for r in results] == [1, 2, 3, 4]  # input order
    again = RecordedProvider(good)
    results = forecaster(again, tmp_path, prices).forecast_many(histories)
    assert again.requests == [] and all(c.cached for r in results for c in r.calls)
    # cached answers keep their tokens, so cost sums stay whole (paid once, earlier)
    assert sum(c.cost_usd for r in results for c in r.calls) == pytest.approx(4 * 0.007)


def test_draws_and_arms_are_separate_calls(tmp_path, prices) -> None:
    provider = RecordedProvider(good)
    f = forecaster(provider, tmp_path, prices)
    f.forecast(history(), draw=1)
    f.forecast(history(), draw=2)
    f.forecast(history(), draw=1)
    forecaster(provider, tmp_path, prices, arm="structured").forecast(history())
    assert [r.draw for r in provider.requests] == [1, 2, 1]
    assert "PROJECTION METHOD" in provider.requests[-1].system


def test_failed_calls_are_recorded_and_fatal_ones_stop_the_run(tmp_path, prices) -> None:
    busy = [ProviderError("HTTP 529 overloaded", transient=True, status=529)] * 7
    result = forecaster(RecordedProvider(good, errors=list(busy)), tmp_path, prices).forecast(
        history()
    )
    assert result.statements is None
    assert [(c.status, c.reason) for c in result.calls] == [("error", "HTTP 529 overloaded")]
    denied = RecordedProvider(
        good, errors=[ProviderError("HTTP 401 bad key", transient=False, status=401)]
    )
    with pytest.raises(UserError, match="refused the request .*HTTP 401.*rerun resumes"):
        forecaster(denied, tmp_path, prices).forecast(history())
    bad_request = RecordedProvider(
        good, errors=[ProviderError("HTTP 400", transient=False, status=400)]
    )
    result = forecaster(bad_request, tmp_path, prices).forecast(history(2))
    assert result.statements is None and result.calls[0].status == "error"


def test_models_missing_from_the_prices_table_have_no_cost(tmp_path, prices) -> None:
    provider = RecordedProvider(good, model="recorded-2")
    (call,) = forecaster(provider, tmp_path, prices).forecast(history()).calls
    assert call.cost_usd is None and call.input_tokens == 1000
    assert prices.lookup("recorded", "recorded-1-20261101") is prices.lookup(
        "recorded", "recorded-1"
    )


def test_the_default_prices_table_is_dated_and_a_bad_one_is_refused(tmp_path) -> None:
    table = load_prices()
    assert {m for _, m in table.prices} >= {"claude-opus-4-8", "gpt-5.5", "claude-sonnet-5"}
    assert all(p.as_of for p in table.prices.values())
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,"
        "output_usd_per_mtok,as_of\nx,y,1,1,lots,2026-01-01\n"
    )
    with pytest.raises(UserError, match="line 2: prices must be numbers"):
        load_prices(bad)
    with pytest.raises(UserError, match="Cannot read"):
        load_prices(tmp_path / "missing.csv")


def test_the_cached_record_keeps_the_request_settings(tmp_path, prices) -> None:
    provider = RecordedProvider(good)
    call = forecaster(provider, tmp_path, prices).forecast(history()).calls[0]
    record = json.loads(ResponseCache(tmp_path / "cache").path(call.prompt_key).read_text())
    assert record["settings"] == {"style": "recorded"} and record["model"] == "recorded-1"
    assert record["output_tokens"] == 500 and record["draw"] == 1 and record["attempt"] == 1
