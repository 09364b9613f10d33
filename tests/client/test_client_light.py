"""The client installs and runs without the models' stack or the web server: importing
proforma.client and the `proforma remote` commands, and checking a file with the
server's checks, load no torch, LightGBM, scikit-learn, SciPy, matplotlib, LLM SDK,
wrds, FastAPI or uvicorn (a fresh interpreter, so nothing else loaded them first). And
the config file: flags over environment over file, mode 600, a token never shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from proforma.client import ClientError, FileRefused, load_config, save_config

HEAVY = (
    "torch",
    "lightgbm",
    "sklearn",
    "scipy",
    "matplotlib",
    "anthropic",
    "openai",
    "wrds",
    "pandas",
    "fastapi",
    "starlette",
    "uvicorn",
    "jinja2",
)

_PROBE = """
import sys
import proforma.client
from proforma.app.cli import app  # the whole command tree, `remote` included
from proforma.client.checks import check_file
report = check_file(sys.argv[1], ["001004"])
assert report.rows == 2, report
print(",".join(sorted(m for m in {heavy} if m in sys.modules)))
"""


def test_the_client_and_its_check_load_nothing_heavy(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(
        pa.table(
            {
                "firm": ["001004", "001004"],
                "target": ["revtq", "niq"],
                "origin": ["2015Q1", "2015Q1"],
                "horizon": [1, 2],
                "prediction": [0.1, 0.2],
            }
        ),
        path,
    )
    probe = _PROBE.format(heavy=repr(set(HEAVY)))
    run = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == ""


def test_the_local_check_refuses_as_the_server_does(tmp_path: Path) -> None:
    from proforma.client.checks import check_file

    path = tmp_path / "f.parquet"
    pq.write_table(
        pa.table(
            {
                "firm": ["001004", "001004", "001004"],
                "target": ["revtq", "revtq", "nope"],
                "origin": ["2015Q1", "2015Q1", "2015Q1"],
                "horizon": [1, 1, 25],
                "prediction": [0.1, 0.2, 0.3],
            }
        ),
        path,
    )
    with pytest.raises(FileRefused) as refused:
        check_file(path, ["001004"])
    problems = {p["problem"] for p in refused.value.problems}
    assert "unknown target item (not one of the 78 items)" in problems
    assert "horizon outside 1..20" in problems
    # duplicates are the server's integer-level check: reported once the rows are clean
    pq.write_table(pq.read_table(path).slice(0, 2), path)
    with pytest.raises(FileRefused, match="duplicate key"):
        check_file(path, ["001004"])


def test_config_precedence_mode_and_secrecy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROFORMA_CLIENT_CONFIG", str(tmp_path / "c" / "client.json"))
    monkeypatch.delenv("PROFORMA_SERVER", raising=False)
    monkeypatch.delenv("PROFORMA_TOKEN", raising=False)
    assert load_config().server == "http://127.0.0.1:8000"
    path = save_config("http://files.example/", "secret-token")
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {
        "server": "http://files.example",
        "token": "secret-token",
    }
    from_file = load_config()
    assert (from_file.server, from_file.token) == ("http://files.example", "secret-token")
    assert "secret-token" not in repr(from_file)
    monkeypatch.setenv("PROFORMA_SERVER", "http://env.example")
    monkeypatch.setenv("PROFORMA_TOKEN", "env-token")
    assert load_config().server == "http://env.example"
    flagged = load_config("http://flag.example", "flag-token")
    assert (flagged.server, flagged.token, flagged.source) == (
        "http://flag.example",
        "flag-token",
        "flag",
    )
    os.chmod(path, 0o640)
    with pytest.raises(ClientError, match="chmod 600"):
        load_config()
