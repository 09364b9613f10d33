"""Facts every part of ProForma-20Q shares, defined once (docs/architecture.md, "Contracts").

This package imports nothing from `app` or `models` (and nothing heavier than pyarrow),
so sources, the build, scoring, the service and the models can all depend on it without
depending on each other. What lives here: the error types, the repository root, the
forecast and raw Arrow schemas, splits, families and column aliases, the leaderboard
tracks, the rule sets, quarter parsing, the provenance clock and file hashing, and the
competitor list.
"""

from pathlib import Path

#: The package root: the folder holding app/, models/, contracts/ and the data the project
#: reads at run time (sql/, migrations/, reference/, models/forma/checkpoints/). Installed,
#: it is site-packages/proforma; in the repository, proforma/ (whose links lead to the
#: top-level folders). Not resolved: resolving the links would leave the package.
ROOT = Path(__file__).absolute().parent.parent
