"""The panel's fixed vocabulary: splits, horizons and the build's rule sets
(docs/contracts.md, "Keys" and "Rule sets")."""

from __future__ import annotations

from enum import Enum

import pyarrow as pa

from proforma.contracts.errors import UserError

#: Origin splits by calendar year: train 1971-2001, val 2002-2009, test 2010-2024.
SPLITS = ("train", "val", "test")

#: Forecast horizons in quarters.
HORIZONS = range(1, 21)


class RuleSet(str, Enum):
    """The build's rule sets, the default first: `published` follows the published
    benchmark package where it and the paper differ, `paper` the paper's literal text
    (docs/contracts.md, "Rule sets")."""

    published = "published"
    paper = "paper"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: object, where: str = "") -> RuleSet:
        """The rule set named `value` (a RuleSet or its name); a UserError naming the
        choices otherwise. `where` says whose value it is ("The build records ...")."""
        try:
            return cls(value)
        except ValueError:
            lead = f"{where} an unknown rule set" if where else "Unknown rule set"
            raise UserError(f"{lead} {value!r}: use one of {', '.join(RULE_SETS)}") from None


RULE_SETS = tuple(r.value for r in RuleSet)
DEFAULT_RULES = RuleSet.published
#: A build that records no rule set was made before rule sets existed: under `paper`.
UNRECORDED_RULES = RuleSet.paper

#: One record per origin of the tuple view (proforma.app.readers.views.tuple_windows, read by Forma): the
#: firm's reported tuples (quarter relative to the origin, item, standardized value).
TUPLE_WINDOW_SCHEMA = pa.schema(
    [
        pa.field("firm_id", pa.int32()),
        pa.field("origin_q", pa.int32()),
        pa.field("split", pa.string()),
        pa.field("ff48", pa.int16()),
        pa.field("rel_q", pa.list_(pa.int8())),
        pa.field("item_id", pa.list_(pa.int16())),
        pa.field("x", pa.list_(pa.float32())),
    ]
)
