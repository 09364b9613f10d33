"""The learned competitors of Forma (docs/baselines.md): their names on the command line
and the forecast family each submission declares."""

from __future__ import annotations

COMPETITORS = ("enet", "rf", "ffnn-linear", "ffnn-large", "gbm-l1", "gbm-l2")
#: The GBM L1 arm targets the median (absolute-error track); point models carry no sigma.
FAMILY = {"gbm-l1": "laplace"}


def family_of(model: str) -> str:
    return FAMILY.get(model, "gaussian")
