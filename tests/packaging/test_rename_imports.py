"""tools/rename_imports.py on sample texts: every import form and string module path is
rewritten to the proforma.* names, attribute access and file names are not, and a second
run changes nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tools.rename_imports import Renamer, main

SAMPLE = '''"""Module docstring naming app.cli and models.csv."""
from __future__ import annotations

import app.scoring
import app.reconcile as rec
import contracts
from app.settings import Settings
from app import errors
from models.forma.train import fit  # trailing comment
from .local import thing

    import models.forma.predict as predict

app = make_app()
app.state.settings = Settings()
target = "app.cli:main"
patched = "models.forma.train.fit"
command = [sys.executable, "-m", "app.cli", "serve"]
uvicorn_target = "app.api.main:create_app"
not_a_module = "models.csv and contracts.md and app.state"
path = "app/cli/main.py"
# see app.scoring.leaderboard
'''

EXPECTED = '''"""Module docstring naming proforma.app.cli and models.csv."""
from __future__ import annotations

import proforma.app.scoring  # noqa: F401
from proforma import app
import proforma.app.reconcile as rec
from proforma import contracts
from proforma.app.settings import Settings
from proforma.app import errors
from proforma.models.forma.train import fit  # trailing comment
from .local import thing

    import proforma.models.forma.predict as predict

app = make_app()
app.state.settings = Settings()
target = "proforma.app.cli:main"
patched = "proforma.models.forma.train.fit"
command = [sys.executable, "-m", "proforma.app.cli", "serve"]
uvicorn_target = "proforma.app.api.main:create_app"
not_a_module = "models.csv and contracts.md and app.state"
path = "app/cli/main.py"
# see proforma.app.scoring.leaderboard
'''

MARKDOWN = """Run `python -m app.cli demo` or:

```python
from app.scoring import leaderboard
import models.forma.train as train
```

The files of app/cli/ and `models.csv`; proforma.app.cli stays.
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A tree holding the modules the sample names (and not `state`, `csv`, `md`)."""
    for module in (
        "app/__init__.py",
        "app/cli/__init__.py",
        "app/scoring/__init__.py",
        "app/reconcile.py",
        "app/settings.py",
        "app/errors.py",
        "app/api/__init__.py",
        "app/api/main.py",
        "models/__init__.py",
        "models/forma/__init__.py",
        "models/forma/train.py",
        "contracts/__init__.py",
    ):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    return tmp_path


def test_python_sample(root: Path) -> None:
    renamer = Renamer(root)
    out = renamer.python(SAMPLE, "sample.py")
    assert out == EXPECTED
    assert renamer.python(out, "sample.py") == out  # idempotent
    assert renamer.problems == []


def test_bare_import_keeps_the_name_bound(root: Path) -> None:
    """`import app.scoring` bound `app`; its rewrite binds `app` to proforma.app."""
    out = Renamer(root).python("import app.scoring\nx = app.scoring.f\n", "m.py")
    tree = ast.parse(out)
    bound = {
        a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
    }
    assert "app" in bound


def test_markdown_sample(root: Path) -> None:
    out = Renamer(root).other(MARKDOWN, "docs/x.md")
    assert "python -m proforma.app.cli demo" in out
    assert "from proforma.app.scoring import leaderboard" in out
    assert "import proforma.models.forma.train as train" in out
    assert "app/cli/" in out and "`models.csv`" in out
    assert "proforma.proforma" not in out


def test_import_list_is_reported_not_rewritten(root: Path) -> None:
    renamer = Renamer(root)
    text = "import app.settings, models.forma\n"
    assert renamer.python(text, "m.py") == text
    assert renamer.problems == ["m.py:1: several modules on one import line"]


def test_run_writes_then_check_is_clean(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text(SAMPLE)
    (root / "Makefile").write_text("run:\n\tpython -m app.cli demo\n")
    assert main(["--check", str(root)]) == 1
    assert main(["--no-ruff", str(root)]) == 0
    assert (root / "tests" / "test_x.py").read_text() == EXPECTED
    assert "python -m proforma.app.cli demo" in (root / "Makefile").read_text()
    assert main(["--check", str(root)]) == 0
