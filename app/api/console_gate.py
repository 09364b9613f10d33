"""Bounds on the public SQL console, so that its work cannot starve the pages and the API.

Three bounds, all checked before a query takes a thread:

- **per client, rate**: a token bucket per client (`PROFORMA_QUERY_RATE_PER_MIN` queries
  a minute, bursts of `PROFORMA_QUERY_BURST`); past it, 429 with Retry-After.
- **per client, concurrency**: at most `PROFORMA_QUERY_PER_CLIENT` of one client's
  queries run or wait at once; another is a 429 at once.
- **overall concurrency**: at most `PROFORMA_QUERY_CONCURRENCY` console queries run at a
  time (default: the CPU count less one, at least two, and always one more than a client
  may hold, so one slow client never takes every place; each query runs on one DuckDB
  thread, in a worker process killed at its time limit: app/read/console_workers.py), so the remaining cores and the server's thread pool stay free for pages, the
  API and the job worker. A query waits for a place on the event loop (holding no
  thread) for at most `PROFORMA_QUERY_QUEUE_S`; then 429 with Retry-After. The wait
  counts against the query's time limit (`PROFORMA_QUERY_TIMEOUT_S`), so an answer,
  408 included, comes within that limit of the request.

A client is its address as the server sees it (behind a reverse proxy every client is
the proxy: give the proxy its own limits, or raise these). A token is not a key: the
console needs none, and keys a client could choose (a token's id, a forwarded-for
header) would let it open a fresh allowance with each query.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from proforma.app.read.errors import RateLimited
from proforma.app.store.settings import Settings


class ConsoleBusy(RateLimited):
    """429 with a Retry-After header (seconds)."""

    def __init__(self, message: str, retry_after: float):
        super().__init__(message)
        self.headers = {"Retry-After": str(max(1, math.ceil(retry_after)))}


def default_concurrency() -> int:
    return max(2, (os.cpu_count() or 2) - 1)


@dataclass
class _Client:
    tokens: float
    stamp: float
    active: int = 0


@dataclass
class ConsoleGate:
    """The console's bounds for one app (created on first use, on the app's state)."""

    rate_per_min: float
    burst: int
    per_client: int
    concurrency: int
    queue_s: float
    clients: dict[str, _Client] = field(default_factory=dict)
    _slots: asyncio.Semaphore | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ConsoleGate:
        return cls(
            rate_per_min=float(settings.query_rate_per_min),
            burst=int(settings.query_burst),
            per_client=int(settings.query_per_client),
            # one more place than a client may hold: one slow client never holds them all
            concurrency=max(
                int(settings.query_concurrency or default_concurrency()),
                int(settings.query_per_client) + 1,
            ),
            queue_s=float(settings.query_queue_s),
        )

    def _client(self, key: str, now: float) -> _Client:
        client = self.clients.get(key)
        if client is None:
            if len(self.clients) > 10_000:  # forget idle clients with full buckets
                for k in [k for k, c in self.clients.items() if c.active == 0][:5_000]:
                    del self.clients[k]
            client = self.clients[key] = _Client(tokens=float(self.burst), stamp=now)
        refill = (now - client.stamp) * self.rate_per_min / 60.0
        client.tokens = min(float(self.burst), client.tokens + refill)
        client.stamp = now
        return client

    @contextlib.asynccontextmanager
    async def admit(self, key: str) -> AsyncIterator[float]:
        """Hold a place for one query of client `key` (or raise ConsoleBusy); yields the
        seconds it waited for the place (the query's time limit counts them)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        now = time.monotonic()
        client = self._client(key, now)
        if client.active >= self.per_client:
            raise ConsoleBusy(
                f"This client already has {client.active} console quer"
                f"{'y' if client.active == 1 else 'ies'} running (at most {self.per_client} "
                f"at a time); wait for it to finish.",
                1.0,
            )
        if client.tokens < 1.0:
            wait = (1.0 - client.tokens) * 60.0 / self.rate_per_min
            raise ConsoleBusy(
                f"Too many console queries from this client (at most {self.rate_per_min:g} a "
                f"minute, bursts of {self.burst}); retry in {wait:.0f} s.",
                wait,
            )
        client.tokens -= 1.0
        client.active += 1
        try:
            try:
                await asyncio.wait_for(self._slots.acquire(), timeout=self.queue_s)
            except TimeoutError:
                raise ConsoleBusy(
                    f"The SQL console is busy ({self.concurrency} quer"
                    f"{'y' if self.concurrency == 1 else 'ies'} at a time); retry shortly.",
                    self.queue_s,
                ) from None
            try:
                yield time.monotonic() - now
            finally:
                self._slots.release()
        finally:
            client.active -= 1
