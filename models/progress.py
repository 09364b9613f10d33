"""Progress bars that read well on a terminal and in a log file."""

from __future__ import annotations

import sys
from typing import Any

#: Seconds between updates when stderr is not a terminal (CI, `docker compose logs`,
#: a redirected `make demo`): a few lines per stage instead of a redraw per batch.
LOG_INTERVAL_S = 30.0


def progress_bar(iterable: Any = None, **kwargs: Any):
    """tqdm as usual on a terminal; in a log, one update every LOG_INTERVAL_S seconds."""
    from tqdm.auto import tqdm

    if not sys.stderr.isatty():
        kwargs.setdefault("mininterval", LOG_INTERVAL_S)
    return tqdm(iterable, **kwargs)
