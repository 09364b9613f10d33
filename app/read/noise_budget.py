"""How much noise an upload's public numbers carry: a weekly information budget per user
(docs/service.md, "The truth: threat model").

An upload's mean over n cells moves by at most `sensitivity / n` per standardized unit
of one cell's truth y (contracts/metrics.py), so a published number x + s z, z standard
normal and s = sigma * sensitivity / n, tells an attacker at most 1 / sigma^2 of Fisher
information about y. Every independently drawn number that contains the cell (each
metric at each level, on each footprint and round board, and a fresh draw whenever the
sample under it changes: VERSIONS of each) is one such channel, and the user's uploads
add up: the j-th upload of a user within seven days gets

    sigma_j = sqrt(C * H(M) * j / BUDGET)

(C channels, M = 7 x the user's daily limit uploads a week, H the harmonic number), so
that sum_j C / sigma_j^2 <= BUDGET whatever the user does within its limits: with the
truth's prior spread (PRIOR_SD) the best estimate of any cell still misses it by
TOLERANCE standardized units (RMS). Early uploads of a week are precise, late ones
coarse; an honest user with a few uploads a week sees sharp numbers.
"""

from __future__ import annotations

import math

from proforma.contracts.metrics import METRICS, Disclosure

#: No hidden truth value recoverable to an RMS error below this (standardized units).
TOLERANCE = 0.5
#: The standardized truth's own spread, which an attacker knows.
PRIOR_SD = 1.0
#: The Fisher information about one cell a user may gather in a week: RMS >= TOLERANCE
#: for a Gaussian prior of PRIOR_SD and Gaussian noise.
BUDGET = 1.0 / TOLERANCE**2 - 1.0 / PRIOR_SD**2
#: Levels of the static boards an upload is published at; the headline ones.
STATIC_LEVELS = ("global", "horizon", "item", "statement", "item_horizon")
HEADLINE_LEVELS = ("global", "horizon")
#: An upload's score on its own clean slice (the origins after its declared cutoff: one
#: fixed slice, the noise metrics only; app/read/board_disclosure.py).
CLEAN_LEVEL = "clean"
#: A round board's levels (the round, per horizon), and the live board's (pooled).
ROUND_LEVELS = ("global", "horizon")
LIVE_LEVELS = ("global",)
#: Fresh draws of a number a week: its sample may change (a new in-house model or
#: build) once a week, a round resolves once.
VERSIONS = 2


def metric_channels(levels: tuple[str, ...]) -> int:
    """Independently drawn numbers that contain one cell, at these levels, per version."""
    count = 0
    for metric in METRICS.values():
        if metric.disclosure is Disclosure.noise:
            count += len(levels)
        elif metric.disclosure is Disclosure.headline_noise:
            count += len([x for x in levels if x in HEADLINE_LEVELS])
    return count


def channels(footprints: int) -> int:
    """C: every channel one upload's cell can be read through, static or round (a round
    file is an upload too; the larger door counts)."""
    static = metric_channels((*STATIC_LEVELS, CLEAN_LEVEL)) * VERSIONS * max(footprints, 0)
    rounds = (metric_channels(ROUND_LEVELS) + metric_channels(LIVE_LEVELS)) * VERSIONS
    return max(static, rounds)


def harmonic(m: int) -> float:
    return sum(1.0 / k for k in range(1, max(m, 1) + 1))


def sigma(ordinal: int, week_uploads: int, footprints: int) -> float:
    """sigma_j of the `ordinal`-th upload of a user's seven days (module docstring)."""
    j = max(int(ordinal), 1)
    return math.sqrt(channels(footprints) * harmonic(week_uploads) * j / BUDGET)


def week_uploads(daily_limit: int) -> int:
    return 7 * max(int(daily_limit), 1)


def information(sigmas: list[float], footprints: int) -> float:
    """The most an attacker learns about one cell from uploads with these sigmas."""
    c = channels(footprints)
    return sum(c / s**2 for s in sigmas)
