"""The service's log lines as JSON, one object a line (docs/operations.md, "Logs"):
time, level, logger, message, the request id of the request or job the line belongs to,
and whatever the line carries (`extra`: the access line's method, route, status and
duration; a job line's job id and status). `proforma serve` installs it (`--log-format
text` keeps plain lines); nothing here runs on import."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

from proforma.app.api.telemetry import request_id

#: Attributes every LogRecord has: what is not among them came in as `extra`.
_STANDARD = set(vars(logging.LogRecord("x", 0, "x", 0, "x", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class RequestIdFilter(logging.Filter):
    """Puts the current request's (or job's) id on every record that has none."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in out:
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure(level: str = "info", fmt: str = "json") -> None:
    """The root logger's one handler (stderr), JSON or plain, with request ids."""
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(levelname)s %(name)s [%(request_id)s]: %(message)s")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
