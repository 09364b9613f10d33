"""The footprints every warehouse has: full, geert and llm (docs/scoring.md, "Footprints")."""

from __future__ import annotations

from proforma.app.scoring.footprints.create import create_footprint
from proforma.app.scoring.footprints.llm import create_llm_footprint, is_block_sample
from proforma.app.scoring.footprints.store import get_footprint
from proforma.app.store.warehouse import Warehouse

#: The 25 chained-GBM items (Geertsema) that are among the 78 (docs/scoring.md).
GEERT_ITEMS = [
    "revtq",
    "cogsq",
    "rectq",
    "invtq",
    "apq",
    "xsgaq",
    "acoq",
    "lcoq",
    "ppentq",
    "intanq",
    "dpq",
    "dlcq",
    "dlttq",
    "loq",
    "xintq",
    "aoq",
    "mibtq",
    "nopiq",
    "spiq",
    "xidoq",
    "txtq",
    "txpq",
    "txditcq",
    "miiq",
    "acomincq",
]


def ensure_standard_footprints(wh: Warehouse) -> list[str]:
    """Create full, geert and llm (first versions) when missing; returns those created."""
    made = []
    have = {r[0] for r in wh.fetchall("SELECT DISTINCT name FROM eval.footprints")}
    if "full" not in have:
        create_footprint(
            wh,
            "full",
            description="All scoreable test cells (until frozen "
            "from a model suite with `proforma footprint create full --from ...`)",
        )
        made.append("full")
    if "geert" not in have:
        items = ", ".join(f"'{i}'" for i in GEERT_ITEMS)
        create_footprint(
            wh,
            "geert",
            predicate=f"item IN ({items})",
            description="The 25 chained-GBM items (Geertsema) in the 78",
        )
        made.append("geert")
    # The LLM protocol's block sample (docs/llm.md); an `llm` drawn by the older generic
    # origin sample gets the block sample as its next version.
    if wh.table_exists("panel.truth") and (
        "llm" not in have or not is_block_sample(get_footprint(wh, "llm"))
    ):
        create_llm_footprint(wh)
        made.append("llm")
    return made
