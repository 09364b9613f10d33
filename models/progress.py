"""Progress bars that read well on a terminal and in a log file."""

from __future__ import annotations

import sys
from typing import Any, TextIO

#: Seconds between updates when stderr is not a terminal (CI, `docker compose logs`,
#: a redirected `make demo`): a few lines per stage instead of a redraw per batch.
LOG_INTERVAL_S = 30.0


class LogLines:
    """A stream for tqdm in a log: each redraw (a carriage return, the bar, spaces over
    the longer bar before it) becomes a line of its own, so a log holds one readable line
    per update instead of one line of every update run together."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.encoding = getattr(stream, "encoding", None)  # tqdm draws unicode bars by it
        self.last = ""

    def write(self, text: str) -> int:
        out = []
        for line in text.replace("\r", "\n").split("\n"):
            line = line.rstrip()
            if line and line != self.last:  # closing redraws the last state once more
                out.append(f"{line}\n")
                self.last = line
        if out:
            self.stream.write("".join(out))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(iterable: Any = None, **kwargs: Any):
    """tqdm as usual on a terminal; in a log, one line every LOG_INTERVAL_S seconds."""
    from tqdm.auto import tqdm

    if not sys.stderr.isatty():
        kwargs.setdefault("mininterval", LOG_INTERVAL_S)
        # tqdm's monitor thread otherwise redraws a bar every 10 s (its maxinterval)
        kwargs.setdefault("maxinterval", LOG_INTERVAL_S)
        kwargs.setdefault("file", LogLines(sys.stderr))
    return tqdm(iterable, **kwargs)
