"""What users receive, without a Docker daemon: the image's build context (the repository
less .dockerignore, copied as `docker build` sends it) builds a wheel holding every module
and data file of the package; that wheel, installed into a fresh virtualenv outside the
checkout, runs the smoke path from an empty folder that has its own `app` and `models`
packages: migrate, a tiny synthetic ingest, build, submit, score, leaderboard, report, and
a leaderboard read beside the running server.

The virtualenv gets the wheel alone (--no-deps); its dependencies come from this
interpreter's site-packages through a .pth line (a plain path: that folder's own .pth
files, the editable install's finder among them, are not run), so torch is not installed
again and nothing of the checkout is importable there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "proforma"


# -- the build context ---------------------------------------------------------------------
def _pattern(line: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go's filepath.Match plus `**`) as a regular expression."""
    text = line.strip().removeprefix("./").strip("/")
    out, i = "", 0
    while i < len(text):
        if text.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif text.startswith("**", i):
            out, i = out + ".*", i + 2
        elif text[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif text[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(text[i]), i + 1
    return re.compile(out)


def dockerignore(root: Path = REPO) -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for line in (root / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        rules.append((negated, _pattern(line.removeprefix("!"))))
    return rules


def excluded(rel: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for negated, pattern in rules:
        if any(pattern.fullmatch(p) for p in prefixes):
            verdict = not negated
    return verdict


def copy_context(dest: Path, root: Path = REPO) -> list[str]:
    """The build context `docker build root` sends, into dest (links kept as links)."""
    rules = dockerignore(root)
    sent = []
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        rel_base = base.relative_to(root).as_posix()
        for name in list(dirs):
            rel = f"{rel_base}/{name}".removeprefix("./")
            if excluded(rel, rules) and not any(neg for neg, _ in rules):
                dirs.remove(name)
            elif (base / name).is_symlink():
                dirs.remove(name)
                files.append(name)
        for name in files:
            rel = f"{rel_base}/{name}".removeprefix("./")
            if excluded(rel, rules):
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if (base / name).is_symlink():
                os.symlink(os.readlink(base / name), target)
            else:
                shutil.copy2(base / name, target)
            sent.append(rel)
    return sent


def package_files() -> set[str]:
    """Every file the package holds, through proforma/'s links: modules and data alike."""
    found = set()
    for path in PACKAGE.rglob("*"):
        rel = path.relative_to(REPO).as_posix()
        if path.is_file() and "__pycache__" not in rel and path.suffix != ".pyc":
            found.add(rel)
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `docker build` makes: built from a copy of the build context."""
    context = tmp_path_factory.mktemp("context")
    copy_context(context)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["--wheel-dir", str(out), str(context)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (built,) = out.glob("proforma-*.whl")
    return built


def test_dockerignore_matches_as_docker_does() -> None:
    rules = [(False, _pattern(p)) for p in ("data", "**/__pycache__", "*.duckdb", "tests")]
    rules.append((True, _pattern("tests/keep.py")))
    assert excluded("data/x.duckdb", rules) and not excluded("app/data.py", rules)
    assert excluded("app/cli/__pycache__/x.pyc", rules) and excluded("w.duckdb", rules)
    assert not excluded("data2/a", rules) and not excluded("sql/build/x.sql", rules)
    assert excluded("tests/a.py", rules) and not excluded("tests/keep.py", rules)


def test_the_build_context_makes_a_wheel_with_every_package_file(wheel: Path) -> None:
    """Nothing the package needs is left out of the image's context (.dockerignore) or
    out of the wheel (pyproject's package data): every module, SQL step, migration,
    reference CSV, template, static file and the shipped checkpoint."""
    names = set(zipfile.ZipFile(wheel).namelist())
    needed = package_files()
    missing = sorted(f for f in needed if f not in names)
    assert not missing, f"not in the wheel built from the build context: {missing}"
    for kind in (
        "proforma/sql/",
        "proforma/migrations/",
        "proforma/reference/",
        "proforma/app/web/templates/",
        "proforma/app/web/static/",
        "proforma/models/forma/checkpoints/",
    ):
        assert any(n.startswith(kind) for n in names), kind
    # one top-level package: no `app`, `models` or `contracts` beside a user's own
    tops = {n.split("/")[0] for n in names if not n.startswith("proforma-")}
    assert tops == {"proforma"}, tops
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "proforma = proforma.app.cli:entry" in zipfile.ZipFile(wheel).read(entry).decode()


# -- the installed wheel --------------------------------------------------------------------
@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv (outside the checkout) with the wheel; returns its bin folder."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
        + ["--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "_checkout_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    return venv / "bin"


def _user_folder(path: Path) -> Path:
    """An empty folder as a researcher's project has it: its own `app` and `models`."""
    for package in ("app", "models"):
        (path / package).mkdir(parents=True)
        (path / package / "__init__.py").write_text(f"WHO = 'the user {package}'\n")
    return path


def _env(folder: Path) -> dict[str, str]:
    """No PROFORMA_* setting from the test run, nothing of the checkout on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROFORMA_", "PYTHON"))}
    return {**env, "PROFORMA_MEMORY_LIMIT": "1GB", "PROFORMA_THREADS": "2", "COLUMNS": "200"}


def test_the_installed_package_stays_clear_of_the_users_names(
    installed: Path, tmp_path: Path
) -> None:
    """A notebook started in a folder with its own `app` and `models` packages imports
    both those and the project's modules; the package's data comes from the package."""
    folder = _user_folder(tmp_path / "notebook")
    code = (
        "import app, models, json\n"
        "import proforma.app.cli, proforma.models.forma\n"
        "from proforma.contracts import ROOT\n"
        "from proforma.app.store.sqlfiles import SQL_DIR\n"
        "from proforma.app.flows.forma import SHIPPED_DIR\n"
        "print(json.dumps({'user': [app.WHO, models.WHO], 'root': str(ROOT),"
        " 'sql': str(SQL_DIR), 'shipped': sorted(p.name for p in SHIPPED_DIR.iterdir())}))\n"
    )
    out = subprocess.run(
        [str(installed / "python"), "-c", code],
        cwd=folder,
        env=_env(folder),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(out.stdout)
    assert seen["user"] == ["the user app", "the user models"]
    root = Path(seen["root"])
    assert root.name == "proforma" and root.parent.name == "site-packages"
    assert not root.is_relative_to(REPO) and Path(seen["sql"]) == root / "sql"
    # the checkpoints, their training record and their interval calibration
    assert {"training.json", "calibration.json"} <= set(seen["shipped"])
    assert all(n.endswith((".pt", ".json")) for n in seen["shipped"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_installed_wheel_runs_the_smoke_path_from_an_empty_folder(
    installed: Path, tmp_path: Path
) -> None:
    folder = _user_folder(tmp_path / "work")
    env = _env(folder)

    def proforma(*args: str) -> str:
        done = subprocess.run(
            [str(installed / "proforma"), *args],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"proforma {' '.join(args)}:\n{done.stderr[-3000:]}"
        return done.stdout + done.stderr

    assert "applied" in proforma("migrate")
    proforma("ingest", "synthetic", "--firms", "30", "--start", "2000", "--end", "2014")
    proforma("build")
    proforma("baselines", "reference")
    proforma("score")
    # a submission on every cell the fade baseline predicts (it covers the footprint, so
    # the submission enters the board: a partial one is scored on its own run only), a
    # level-0 forecast with unit sigma, written by the installed package's dependencies
    make = (
        "import sys, duckdb, pyarrow.parquet as pq\n"
        "con = duckdb.connect('data/warehouse.duckdb', read_only=True)\n"
        't = con.execute("SELECT f.gvkey AS firm, i.item AS target, qlabel(c.origin_q) AS '
        "origin, c.horizon::INTEGER AS horizon, 0.0 AS prediction, 1.0 AS sigma "
        "FROM eval.forecasts c JOIN panel.firms f USING (firm_id) JOIN ref.items i USING "
        "(item_id) WHERE c.submission_id = (SELECT submission_id FROM eval.submissions "
        "WHERE name = 'Fade / AR(1)' AND retired_at IS NULL) "
        'AND c.component = 0 ORDER BY ALL").to_arrow_table()\n'
        "assert t.num_rows, 'no forecast cells'\n"
        "pq.write_table(t, sys.argv[1])\n"
    )
    subprocess.run(
        [str(installed / "python"), "-c", make, "level0.parquet"],
        cwd=folder,
        env=env,
        check=True,
        timeout=120,
    )
    proforma("submit", "level0.parquet", "--name", "level-zero", "--score")
    board = proforma("leaderboard", "-f", "full")
    assert "level-zero" in board
    report = proforma("report", "--no-figure2")
    assert (folder / "data" / "report" / "index.html").is_file(), report
    assert list((folder / "data" / "report").glob("*.png"))
    # everything written lies in the working folder; nothing in the installed package
    site = installed.parent / "lib"
    assert not [p for p in site.rglob("*") if p.suffix in (".duckdb", ".wal", ".png")]

    # the server holds the warehouse; the leaderboard is read through it
    port = _free_port()
    server = subprocess.Popen(
        [str(installed / "proforma"), "serve", "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"{base}/api/v1/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        with urllib.request.urlopen(f"{base}/static/style.css", timeout=10) as answer:
            assert answer.status == 200  # static files from the package
        with urllib.request.urlopen(f"{base}/report/", timeout=10) as answer:
            assert b"<img" in answer.read()
        beside = proforma("leaderboard", "-f", "full")
        assert "level-zero" in beside and f"read from the running server {base}" in beside
    finally:
        server.terminate()
        server.wait(30)
