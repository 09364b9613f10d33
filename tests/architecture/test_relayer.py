"""tools/relayer.py on a small tree outside git: it moves each module to its room once,
rewrites imports, patch strings, docs paths and the errors shim, and a second run
changes nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("relayer", ROOT / "tools" / "relayer.py")
assert _spec and _spec.loader
relayer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(relayer)

MODULE = """from proforma.app import views
from proforma.app.api import queries
from proforma.app.api.errors import NotFound
from proforma.app.errors import UserError
from proforma.app.warehouse import Warehouse
from proforma.app.flows.warehouse import prepare
import proforma.app.settings as settings_module

PATCH = "proforma.app.api.main.publish"
"""
EXPECTED = """from proforma.app.model_inputs import views
from proforma.app.read import queries
from proforma.app.read.errors import NotFound
from proforma.contracts.errors import UserError
from proforma.app.store.warehouse import Warehouse
from proforma.app.flows.warehouse import prepare
import proforma.app.store.settings as settings_module

PATCH = "proforma.app.server.main.publish"
"""


def _tree(tmp_path: Path) -> Path:
    files = {
        "app/__init__.py": "",
        "app/warehouse.py": "X = 1\n",
        "app/settings.py": "",
        "app/views.py": "",
        "app/errors.py": "from proforma.contracts.errors import UserError\n",
        "app/flows/__init__.py": "",
        "app/flows/warehouse.py": "",
        "app/api/__init__.py": "",
        "app/api/queries.py": "",
        "app/api/errors.py": "",
        "app/api/main.py": "",
        "app/api/auth.py": "",
        "app/api/formats.py": "",
        "tests/test_x.py": MODULE,
        "docs/page.md": "See `app/views.py`, app/api/main.py and `app/flows/warehouse.py`.\n",
        "migrations/V0001__x.sql": "-- made by app/build.py\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_moves_and_rewrites_once(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert relayer.main([str(root), "--no-ruff"]) == 0
    assert (root / "app/store/warehouse.py").read_text() == "X = 1\n"
    for gone in ("app/warehouse.py", "app/views.py", "app/errors.py", "app/api/main.py"):
        assert not (root / gone).exists(), gone
    for room in ("store", "model_inputs", "read", "server"):
        assert (root / "app" / room / "__init__.py").exists()
    assert (root / "tests/test_x.py").read_text() == EXPECTED
    assert (root / "docs/page.md").read_text() == (
        "See `app/model_inputs/views.py`, app/server/main.py and `app/flows/warehouse.py`.\n"
    )
    assert (root / "migrations/V0001__x.sql").read_text() == "-- made by app/build.py\n"
    # A second run (the replay over a merged tree that holds nothing old) changes nothing.
    assert relayer.main([str(root), "--check"]) == 0


def test_a_module_at_both_places_stops_the_run(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "app/store").mkdir()
    (root / "app/store/warehouse.py").write_text("")
    try:
        relayer.main([str(root), "--no-ruff"])
    except SystemExit as stop:
        assert "both" in str(stop)
    else:
        raise AssertionError("expected the run to stop")
