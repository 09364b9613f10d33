"""Facts every part of ProForma-20Q shares, defined once (docs/architecture.md, "Contracts").

This package imports nothing from `app` or `models` (and nothing heavier than pyarrow),
so sources, the build, scoring, the service and the models can all depend on it without
depending on each other. What lives here: the error types, the repository root, the
forecast and raw Arrow schemas, splits, families and column aliases, the leaderboard
tracks, the rule sets, quarter parsing, the provenance clock and file hashing, and the
competitor list.
"""

from pathlib import Path

#: Repository root: migrations/, sql/ and reference/ live beside the packages.
ROOT = Path(__file__).resolve().parent.parent
