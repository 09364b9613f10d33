"""Where the client finds its server and token: flags first, then the environment
(PROFORMA_SERVER, PROFORMA_TOKEN), then the config file in the user's home
(~/.config/proforma/client.json, or $XDG_CONFIG_HOME/proforma/client.json; another file
with PROFORMA_CLIENT_CONFIG). The file is written with mode 600 and refused when others
may read it (a token is a password); a token is never printed."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from proforma.client.errors import ClientError

DEFAULT_SERVER = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Config:
    server: str
    token: str | None
    #: where the server and token came from (flag, environment, the file, the default)
    source: str

    def __repr__(self) -> str:  # the token stays out of logs and tracebacks
        shown = "set" if self.token else "none"
        return f"Config(server={self.server!r}, token={shown}, source={self.source!r})"


def config_path() -> Path:
    given = os.environ.get("PROFORMA_CLIENT_CONFIG")
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "proforma" / "client.json"


def _read_file(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise ClientError(
            f"{path} may be read by other users (mode {mode:o}): it holds a token, so the "
            f"client reads it only with mode 600 (chmod 600 {path})"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ClientError(f"Cannot read the client's config file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ClientError(f"{path} must hold a JSON object with `server` and `token`.")
    return {k: str(v) for k, v in data.items() if k in ("server", "token") and v}


def load_config(server: str | None = None, token: str | None = None) -> Config:
    """The server and token to use: each from the first of flag, environment, file."""
    stored = _read_file(config_path())
    chosen_server, server_from = next(
        (value, where)
        for value, where in (
            (server, "flag"),
            (os.environ.get("PROFORMA_SERVER"), "PROFORMA_SERVER"),
            (stored.get("server"), str(config_path())),
            (DEFAULT_SERVER, "default"),
        )
        if value
    )
    chosen_token = token or os.environ.get("PROFORMA_TOKEN") or stored.get("token")
    return Config(chosen_server.rstrip("/"), chosen_token, server_from)


def save_config(server: str, token: str | None) -> Path:
    """Write the server and token to the config file, mode 600 from its first byte."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = {"server": server.rstrip("/"), **({"token": token} if token else {})}
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(body, f)
        f.write("\n")
    os.chmod(tmp, 0o600)  # a umask cannot widen it, an existing file's mode is replaced
    tmp.replace(path)
    return path
