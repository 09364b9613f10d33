"""The leaderboard's tracks (docs/scoring.md): squared error on conditional means (R²),
absolute error on medians (MAE), proper scores on densities (CRPS, NLL)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Track(str, Enum):
    """A track's name (the API's `track` parameter, the CLI's `--track`)."""

    squared = "squared"
    absolute = "absolute"
    density = "density"


@dataclass(frozen=True)
class TrackSpec:
    name: str
    #: How pages and the API's index describe it.
    label: str
    #: The metric a leaderboard of this track ranks by.
    metric: str
    #: Metric columns a leaderboard of this track shows, the ranking one first.
    columns: tuple[str, ...]
    #: Whether a smaller metric ranks higher.
    ascending: bool
    #: The loss of its Diebold-Mariano tests (None: no DM test on this track).
    dm_loss: str | None


TRACKS: dict[str, TrackSpec] = {
    t.name: t
    for t in (
        TrackSpec(
            "squared", "Squared error: R² (means)", "r2", ("r2", "mse", "mae"), False, "squared"
        ),
        TrackSpec(
            "absolute",
            "Absolute error: MAE (medians)",
            "mae",
            ("mae", "mse", "r2"),
            True,
            "absolute",
        ),
        TrackSpec(
            "density",
            "Density: CRPS, NLL, coverage",
            "crps",
            ("nll", "crps", "z2", "cov50", "cov80", "cov90", "cov95"),
            True,
            None,
        ),
    )
}
TRACK_NAMES = tuple(TRACKS)
