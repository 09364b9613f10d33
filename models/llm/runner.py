"""One LLM forecast per origin: prompt, cached call, strict parse, one retry, rebuild.

The model side of the LLM panel: it never opens the database. Given an origin's
reported history it asks the provider (or the response cache) for an answer, parses it
strictly, asks once more when the answer is unusable, and rebuilds the 23 derived
items from the primitives. The result is every item's forecast in reported units (for
`ingest_forecasts(..., space="dollars")`) and one record per call (tokens, cost, parse
outcome) for llm.calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.contracts.errors import UserError
from proforma.contracts.forecasts import FORECAST_SCHEMA
from proforma.contracts.provenance import utcnow
from proforma.models.llm.cache import ResponseCache, request_key
from proforma.models.llm.calls import Completion, Provider, ProviderError, Request
from proforma.models.llm.items import rebuild_statements
from proforma.models.llm.parsing import ParsedAnswer, better_of, parse_answer
from proforma.models.llm.prices import PriceTable
from proforma.models.llm.prompts import MAX_HORIZON, OriginHistory, system_prompt, user_message
from proforma.models.llm.providers import call_with_retries

#: An unusable answer is asked for once more, never more.
ATTEMPTS = 2


@dataclass
class CallRecord:
    """One call (or cached answer) for one origin: a row of llm.calls."""

    firm_id: int
    origin_q: int
    draw: int
    attempt: int
    prompt_key: str
    cached: bool
    status: str  # ok | incomplete | error
    reason: str | None = None
    used: bool = False
    cells_expected: int | None = None
    cells_parsed: int | None = None
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    prices_as_of: str | None = None
    elapsed_s: float | None = None
    response_id: str | None = None
    response_model: str | None = None
    stop_reason: str | None = None
    called_at: str = field(default_factory=lambda: _now())


def _now() -> str:
    return utcnow().isoformat(timespec="seconds")


@dataclass
class OriginForecast:
    firm_id: int
    origin_q: int
    draw: int
    statements: dict[str, np.ndarray] | None  # item -> dollars per horizon (NaN: left out)
    calls: list[CallRecord]


class LlmForecaster:
    """Forecasts origins with one provider and prompt arm, through the response cache."""

    def __init__(
        self,
        provider: Provider,
        arm: str,
        cache: ResponseCache,
        prices: PriceTable,
        *,
        max_horizon: int = MAX_HORIZON,
        retry: Callable[..., tuple[Completion, int]] = call_with_retries,
    ):
        self.provider, self.arm, self.cache, self.prices = provider, arm, cache, prices
        self.max_horizon = max_horizon
        self.system = system_prompt(arm, max_horizon=max_horizon)
        self.settings = provider.settings()
        self.price = prices.lookup(provider.name, provider.model)
        self._retry = retry

    def _answer(self, user: str, draw: int, attempt: int) -> tuple[dict[str, Any], bool, str]:
        """(cache record, whether it came from the cache, key); calls the provider if needed."""
        key = request_key(
            self.provider.name, self.provider.model, self.settings, self.system, user, draw, attempt
        )
        record = self.cache.get(key)
        if record is not None:
            return record, True, key
        started = time.perf_counter()
        completion, retries = self._retry(self.provider, Request(self.system, user, draw, attempt))
        record = {
            **asdict(completion),
            "provider": self.provider.name,
            "model": self.provider.model,
            "settings": self.settings,
            "draw": draw,
            "attempt": attempt,
            "retries": retries,
            "elapsed_s": round(time.perf_counter() - started, 3),
            "called_at": _now(),
            "user": user,
        }
        self.cache.put(key, record)
        return record, False, key

    def _record(
        self,
        history: OriginHistory,
        draw: int,
        attempt: int,
        key: str,
        answer: dict[str, Any],
        cached: bool,
        parsed: ParsedAnswer,
    ) -> CallRecord:
        completion = Completion(
            **{k: answer[k] for k in Completion.__dataclass_fields__ if k in answer}
        )
        problems = list(parsed.problems)
        if completion.truncated and problems:
            problems.append("stopped at the output-token limit")
        reason = "; ".join(problems + [f"note: {n}" for n in parsed.notes]) or None
        return CallRecord(
            history.firm_id,
            history.origin_q,
            draw,
            attempt,
            key,
            cached,
            "ok" if parsed.complete else "incomplete",
            reason,
            cells_expected=parsed.expected,
            cells_parsed=parsed.cells,
            input_tokens=completion.input_tokens,
            cached_input_tokens=completion.cached_input_tokens,
            output_tokens=completion.output_tokens,
            reasoning_tokens=completion.reasoning_tokens,
            cost_usd=self.price.cost(completion) if self.price else None,
            prices_as_of=self.price.as_of if self.price else None,
            elapsed_s=answer.get("elapsed_s"),
            response_id=completion.response_id,
            response_model=completion.response_model,
            stop_reason=completion.stop_reason,
            called_at=answer.get("called_at") or _now(),
        )

    def forecast(self, history: OriginHistory, draw: int = 1) -> OriginForecast:
        """Every item's forecast for one origin and draw (None when no answer was usable)."""
        items = history.reported_primitives
        result = OriginForecast(history.firm_id, history.origin_q, draw, None, [])
        if not items:
            return result
        user = user_message(history, max_horizon=self.max_horizon)
        answers: list[ParsedAnswer] = []
        answer_calls: list[CallRecord] = []
        for attempt in range(1, ATTEMPTS + 1):
            try:
                answer, cached, key = self._answer(user, draw, attempt)
            except ProviderError as exc:
                if exc.fatal:
                    raise UserError(
                        f"{self.provider.name} refused the request ({exc}); answers "
                        f"received so far are cached, so a rerun resumes"
                    ) from None
                result.calls.append(
                    CallRecord(
                        history.firm_id,
                        history.origin_q,
                        draw,
                        attempt,
                        request_key(
                            self.provider.name,
                            self.provider.model,
                            self.settings,
                            self.system,
                            user,
                            draw,
                            attempt,
                        ),
                        False,
                        "error",
                        str(exc)[:500],
                    )
                )
                break
            parsed = parse_answer(answer.get("text") or "", items, self.max_horizon)
            answer_calls.append(self._record(history, draw, attempt, key, answer, cached, parsed))
            result.calls.append(answer_calls[-1])
            answers.append(parsed)
            if parsed.complete:
                break
        if answers:
            best = better_of(answers[0], answers[-1])
            (answer_calls[0] if best is answers[0] else answer_calls[-1]).used = True
            result.statements = rebuild_statements(best.values, set(items), self.max_horizon)
        return result

    def forecast_many(
        self,
        histories: Iterable[OriginHistory],
        draw: int = 1,
        *,
        concurrency: int = 4,
        on_done: Callable[[OriginForecast], None] | None = None,
    ) -> list[OriginForecast]:
        """forecast() for every origin, `concurrency` calls at a time (results in input order)."""
        histories = list(histories)
        results: list[OriginForecast | None] = [None] * len(histories)
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            pending: dict[Future, int] = {
                pool.submit(self.forecast, h, draw): i for i, h in enumerate(histories)
            }
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        i = pending.pop(future)
                        results[i] = result = future.result()
                        if on_done:
                            on_done(result)
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
        return [r for r in results if r is not None]


#: Forecast rows in reported units carry no sigma (docs/contracts.md, "Forecasts").
DOLLAR_SCHEMA = pa.schema([f for f in FORECAST_SCHEMA if f.name != "sigma"])


def forecast_table(results: Iterable[OriginForecast], item_ids: Mapping[str, int]) -> pa.Table:
    """The finite forecasts as contract rows, `mu` in reported units (space='dollars')."""
    cols: dict[str, list] = {n: [] for n in ("firm_id", "origin_q", "item_id", "horizon", "mu")}
    for r in results:
        for item, values in (r.statements or {}).items():
            for h in np.flatnonzero(np.isfinite(values)):
                cols["firm_id"].append(r.firm_id)
                cols["origin_q"].append(r.origin_q)
                cols["item_id"].append(item_ids[item])
                cols["horizon"].append(int(h) + 1)
                cols["mu"].append(float(values[h]))
    n = len(cols["mu"])
    return pa.table(
        {
            "firm_id": pa.array(cols["firm_id"], pa.int32()),
            "origin_q": pa.array(cols["origin_q"], pa.int32()),
            "item_id": pa.array(cols["item_id"], pa.int16()),
            "horizon": pa.array(cols["horizon"], pa.int8()),
            "component": pa.array(np.zeros(n, np.int16), pa.int16()),
            "mu": pa.array(cols["mu"], pa.float64()),
        },
        schema=DOLLAR_SCHEMA,
    )
