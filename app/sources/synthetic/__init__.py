"""The synthetic Compustat-shaped panel with a known oracle (docs/synthetic.md).

Public API:
- `SyntheticConfig.for_scale(scale, firms=..., start=..., end=..., seed=...)`
- `SyntheticSource(cfg)`: a Source; `proforma.app.sources.ingest(wh, SyntheticSource(cfg))`
  writes raw.fundq, raw.company_industry, raw.ccm_link and the oracle tables.
- `Simulation(cfg)`: the generator itself (`history()` yields raw.fundq batches).
- `validation_report(wh)`: the validation report over raw.* (sql/synthetic).
"""

from proforma.app.sources.synthetic.config import SCALE_FIRMS, SyntheticConfig
from proforma.app.sources.synthetic.simulation import Simulation
from proforma.app.sources.synthetic.source import SyntheticSource

__all__ = [
    "SCALE_FIRMS",
    "Simulation",
    "SyntheticConfig",
    "SyntheticSource",
]
