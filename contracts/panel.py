"""The panel's fixed vocabulary: splits, horizons and the build's rule sets
(docs/contracts.md, "Keys" and "Rule sets")."""

from __future__ import annotations

#: Origin splits by calendar year: train 1971-2001, val 2002-2009, test 2010-2024.
SPLITS = ("train", "val", "test")

#: Forecast horizons in quarters.
HORIZONS = range(1, 21)

#: The build's rule sets, the default first: `published` follows the published benchmark
#: package where it and the paper differ, `paper` the paper's literal text. A build that
#: records none was made under `paper`.
RULE_SETS = ("published", "paper")
DEFAULT_RULES = RULE_SETS[0]
UNRECORDED_RULES = "paper"
