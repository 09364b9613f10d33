"""The best linear differencing attack on public numbers (docs/service.md, "The truth:
threat model"), shared by the probes in tests/api, tests/rounds and bench/differencing.py.

Pairs of uploads differ only in a few target cells: +60 in one, -60 in the other (a
tiny sigma, so that CRPS moves as MAE does). In every published group that holds targets,
the difference of the pair's values is linear in their truths:

    MSE:  (60 - y)^2 - (-60 - y)^2 = -240 y       (per cell, over the group's n)
    MAE, CRPS:  |60 - y| - |-60 - y| = -2 y

plus the two uploads' noise, of known scale (each upload's sigma, the metric's
sensitivity, n). `estimate` stacks every (pair, group, metric) equation and solves them
by generalized least squares: every channel an attacker can combine, weighted as an
attacker who knows the budget would weigh them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: The per-cell slope of a pair's difference in each linear metric (+60 against -60).
SLOPES = {"mse": -240.0, "mae": -2.0, "crps": -2.0}


@dataclass(frozen=True)
class Reading:
    """One published number of one upload: its group, metric, cells and value."""

    group: tuple
    metric: str
    n: int
    value: float


def estimate(
    pairs: Sequence[tuple[Mapping[tuple, Reading], Mapping[tuple, Reading]]],
    sigmas: Sequence[tuple[float, float]],
    targets_in: Mapping[tuple, Sequence[int]],
    n_targets: int,
    sensitivity: Mapping[str, float],
) -> np.ndarray:
    """The GLS estimate of the targets' truths from every reading both uploads of a pair
    published (`pairs`: (plus, minus) readings keyed by (group, metric); `targets_in`:
    which targets each group holds; `sigmas`: each pair's two grants)."""
    rows, values, weights = [], [], []
    for (plus, minus), (sa, sb) in zip(pairs, sigmas, strict=True):
        for key, a in plus.items():
            b = minus.get(key)
            group, metric = key
            held = targets_in.get(group, ())
            if b is None or not held or metric not in SLOPES or a.n != b.n:
                continue
            x = np.zeros(n_targets)
            x[list(held)] = SLOPES[metric] / a.n
            scale = sensitivity[metric] / a.n
            rows.append(x)
            values.append(a.value - b.value)
            weights.append(1.0 / ((sa**2 + sb**2) * scale**2))
    x_mat, y, w = np.asarray(rows), np.asarray(values), np.asarray(weights)
    lhs = x_mat.T @ (w[:, None] * x_mat)
    rhs = x_mat.T @ (w * y)
    return np.linalg.solve(lhs, rhs)


def rms(found: np.ndarray, truth: Sequence[float]) -> float:
    return float(np.sqrt(np.mean(np.square(found - np.asarray(truth, float)))))
