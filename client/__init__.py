"""The ProForma-20Q client: submit, follow and query a ProForma-20Q server from a
notebook or a script (`proforma remote ...` on the command line). It installs without
the models' stack or the web server (`pip install proforma`, docs/client.md):

    from proforma.client import Client

    with Client("https://proforma.example.org", token="...") as pf:
        pf.check("forecasts.parquet")                 # the server's checks, here
        done = pf.submit("forecasts.parquet", "my-model", training_cutoff="2009Q4",
                         leakage_statement="none")    # sent once, followed, scored
        board = pf.leaderboard("full", "squared")     # an Arrow table (.to_pandas())
"""

from __future__ import annotations

from proforma.client.api import Client, Submitted
from proforma.client.checks import CheckReport
from proforma.client.config import Config, config_path, load_config, save_config
from proforma.client.errors import (
    BadToken,
    ClientError,
    Conflict,
    FileRefused,
    Forbidden,
    LimitReached,
    NotFound,
    ServerBusy,
    Unreachable,
)

__all__ = [
    "BadToken",
    "CheckReport",
    "Client",
    "ClientError",
    "Config",
    "Conflict",
    "FileRefused",
    "Forbidden",
    "LimitReached",
    "NotFound",
    "ServerBusy",
    "Submitted",
    "Unreachable",
    "config_path",
    "load_config",
    "save_config",
]
