"""The leaderboard's tracks (docs/scoring.md): squared error on conditional means (R²),
absolute error on medians (MAE), proper scores on densities (CRPS, NLL).

Which metrics a track shows and which way its ranking metric improves come from the
metric definitions (contracts/metrics.py: `Metric.tracks`, `Metric.better`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from proforma.contracts.metrics import METRICS, Better, track_metrics


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
    #: The loss of its Diebold-Mariano tests (None: no DM test on this track).
    dm_loss: str | None

    @property
    def columns(self) -> tuple[str, ...]:
        """Metric columns a leaderboard of this track shows: the ranking one first, then
        every other metric whose definition names this track, in registry order."""
        return (self.metric, *(m for m in track_metrics(self.name) if m != self.metric))

    @property
    def ascending(self) -> bool:
        """Whether a smaller metric ranks higher."""
        return METRICS[self.metric].better is Better.lower


TRACKS: dict[str, TrackSpec] = {
    t.name: t
    for t in (
        TrackSpec("squared", "Squared error: R² (means)", "r2", "squared"),
        TrackSpec("absolute", "Absolute error: MAE (medians)", "mae", "absolute"),
        TrackSpec("density", "Density: CRPS, NLL, coverage", "crps", None),
    )
}
TRACK_NAMES = tuple(TRACKS)
