"""The CLI starts without the heavy libraries only some commands need: every `proforma`
call (a submit, a score, a help page) pays for what `proforma.app.cli` imports at start-up, and
scipy alone cost 0.4 s of the 0.8 s a start took. Modules that need scipy, torch or the
web stack import them where they are used."""

from __future__ import annotations

import json
import subprocess
import sys

#: Imported only by the commands that use them, never by `import proforma.app.cli`.
LAZY = (
    "scipy",
    "torch",
    "lightgbm",
    "sklearn",
    "fastapi",
    "uvicorn",
    "matplotlib",
    "jinja2",
    "pandas",
    "pydantic",
)
#: Parts of libraries every command loads that only some commands use (by full name):
#: progress bars, pyarrow's compute functions, the HTTP client for a running server
#: (70, 75 and 20 ms of every start).
LAZY_PARTS = ("rich.progress", "pyarrow.compute", "urllib.request")


def _printed(code: str) -> object:
    """The JSON value a fresh interpreter running `code` prints last."""
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _loaded_at_start(names: tuple[str, ...], *, top_level: bool) -> object:
    """Which of `names` a fresh `import proforma.app.cli` loads (by top-level package
    when `top_level`, else by full module name)."""
    loaded = "{m.split('.')[0] for m in sys.modules}" if top_level else "set(sys.modules)"
    return _printed(
        "import json, sys; import proforma.app.cli; "
        f"print(json.dumps(sorted({loaded} & set({names!r}))))"
    )


def test_cli_start_up_imports_no_heavy_library():
    assert _loaded_at_start(LAZY, top_level=True) == []


def test_cli_start_up_imports_no_part_only_some_commands_use():
    assert _loaded_at_start(LAZY_PARTS, top_level=False) == []


def test_the_collector_is_as_the_importer_left_it():
    # off while the start's modules load, then back as it was: on, or off when the
    # importing program had turned it off
    assert _printed("import gc, json; import proforma.app.cli; print(json.dumps(gc.isenabled()))")
    assert not _printed(
        "import gc, json; gc.disable(); import proforma.app.cli; print(json.dumps(gc.isenabled()))"
    )
