"""Move app/'s modules into the rooms of their layer (docs/architecture.md, "Layers") and
rewrite every reference to the old places.

    python tools/relayer.py [--check] [--no-ruff] [ROOT]

Idempotent: a module moves only while its old file exists (with `git mv` inside a git
checkout, so history follows it), and the rewriting only matches the old names, so a
second run changes nothing (`--check` exits 1 and lists what a run would do). Written to
be replayed over a tree that other branches changed in the meantime: it knows the moves,
not the files that mention them.

What it rewrites, in every tracked Python file, Markdown page, template and the project's
config (pyproject.toml, Makefile, Dockerfile, docker-compose.yml, .ci/):

- dotted module paths `proforma.app.<old>` (imports, `mock.patch`/`monkeypatch` strings,
  `python -m`, comments, docs) -> `proforma.app.<room>.<name>`;
- `from proforma.app import <old>` / `from proforma.app.api import <old>, <kept>` ->
  `from proforma.app.<room> import <name>` (one line per package the names now live in);
- file paths `app/<old>.py` (docs, comments, ruff's per-file settings) -> the new path;
- `proforma.app.errors` (the shim for code written before contracts/ existed, removed
  here) -> `proforma.contracts.errors`.

Never rewritten: migrations/ and sql/ (their text is checksummed; a comment there that
names an old path is reported, not changed), this script and tools/rename_imports.py
with its test (their subject matter). Changed Python files then go through
`ruff check --select I --fix` and `ruff format` (the longer names re-sort and re-wrap
some import blocks), so the result passes `make lint` as it stands.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: old module (dotted, under proforma.app) -> new module. The rooms are named for their
#: layer: store (the warehouse layer), model_inputs (what models read), flows, read (what
#: the API and the pages both read), server (the one process that mounts both).
MOVES: dict[str, str] = {
    # warehouse layer
    "warehouse": "store.warehouse",
    "sqlfiles": "store.sqlfiles",
    "migrations": "store.migrations",
    "reference": "store.reference",
    "settings": "store.settings",
    # what models read
    "views": "model_inputs.views",
    "imputed": "model_inputs.imputed",
    # flows
    "build": "flows.build",
    "export": "flows.export",
    "projection": "flows.projection",
    "reconcile": "flows.reconcile",
    "scenario": "flows.scenario",
    # the read layer shared by the API and the pages
    "api.queries": "read.queries",
    "api.disclosure": "read.disclosure",
    "api.snapshot": "read.snapshot",
    "api.sqlguard": "read.sqlguard",
    "api.formats": "read.formats",
    "api.errors": "read.errors",
    # the composition root: mounts the API's routers and the pages
    "api.main": "server.main",
}
#: Removed modules whose names now live elsewhere (not under proforma.app).
RENAMED: dict[str, str] = {"proforma.app.errors": "proforma.contracts.errors"}
REMOVED_FILES = ("app/errors.py",)
#: Packages the moves need (each gets an __init__.py with its docstring).
ROOMS: dict[str, str] = {
    "store": '"""The warehouse layer: connection, SQL files, migrations, reference data, settings."""\n',
    "model_inputs": '"""What models read: the Arrow views of the panel and the imputed tabular view."""\n',
    "read": '"""The read layer the API and the pages share: queries, public snapshot, formats, errors."""\n',
    "server": '"""The service process: mounts the API (app/api) and the pages (app/web)."""\n',
}

TEXT_FILES = ("README.md", "Makefile", "Dockerfile", "docker-compose.yml", "pyproject.toml")
TEXT_SUFFIXES = (".py", ".md", ".html", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt", ".j2")
TEXT_DIRS = ("app", "models", "contracts", "tests", "bench", "tools", "docs", ".ci", "proforma")
SKIP = (
    "tools/relayer.py",
    "tests/architecture/test_relayer.py",
    "tools/rename_imports.py",
    "tests/packaging/test_rename_imports.py",
)
#: Checksummed text: reported, never changed.
NEVER = ("migrations/", "sql/")


def _patterns() -> list[tuple[re.Pattern[str], str]]:
    subs: list[tuple[re.Pattern[str], str]] = []
    for old, new in sorted(MOVES.items(), key=lambda kv: -len(kv[0])):
        dotted = re.escape(f"proforma.app.{old}")
        subs.append((re.compile(rf"(?<![\w.]){dotted}(?!\w)"), f"proforma.app.{new}"))
        path = re.escape(f"app/{old.replace('.', '/')}.py")
        subs.append((re.compile(rf"(?<![\w/.]){path}(?!\w)"), f"app/{new.replace('.', '/')}.py"))
    for old, new in RENAMED.items():
        subs.append((re.compile(rf"(?<![\w.]){re.escape(old)}(?!\w)"), new))
    return subs


#: `from proforma.app import a, b as c` / `from proforma.app.api import ...` on one line
#: (a parenthesized list of these packages' modules does not occur; `check by hand` if
#: it ever does).
_FROM = re.compile(
    r"^(?P<indent>[ \t]*)from[ \t]+(?P<pkg>proforma\.app(?:\.api)?)[ \t]+import[ \t]+"
    r"(?P<names>[^\n#(]+?)[ \t]*(?P<comment>#[^\n]*)?$",
    re.MULTILINE,
)
_FROM_PAREN = re.compile(
    r"^[ \t]*from[ \t]+proforma\.app(?:\.api)?[ \t]+import[ \t]*\(", re.MULTILINE
)


def _target(pkg: str, name: str) -> str:
    """The package a module imported as `from <pkg> import <name>` now lives in."""
    dotted = f"{pkg}.{name}"
    if dotted in RENAMED:
        return RENAMED[dotted].rpartition(".")[0]
    old = dotted.removeprefix("proforma.app.")
    if old in MOVES:
        return "proforma.app." + MOVES[old].rpartition(".")[0]
    return pkg


def _split_from(match: re.Match[str]) -> str:
    """One `from X import a, b` line as one line per package its names now live in."""
    pkg, indent = match["pkg"], match["indent"]
    groups: dict[str, list[str]] = {}
    for alias in (a.strip() for a in match["names"].split(",")):
        if alias:
            groups.setdefault(_target(pkg, alias.split()[0]), []).append(alias)
    if list(groups) == [pkg]:
        return match[0]
    comment = f"  {match['comment']}" if match["comment"] else ""
    lines = [f"{indent}from {p} import {', '.join(names)}" for p, names in groups.items()]
    lines[0] += comment
    return "\n".join(lines)


def tracked(root: Path) -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files"], cwd=root, check=True, capture_output=True, text=True
        ).stdout.split()
        files = [root / f for f in out]
    except (subprocess.CalledProcessError, FileNotFoundError):
        files = [p for d in TEXT_DIRS for p in (root / d).rglob("*") if p.is_file()]
        files += [root / f for f in TEXT_FILES]
    return [f for f in files if f.is_file() and not f.is_symlink()]


def wanted(root: Path, path: Path) -> bool:
    rel = path.relative_to(root).as_posix()
    if rel in SKIP or rel.startswith(NEVER):
        return False
    return rel in TEXT_FILES or (rel.split("/")[0] in TEXT_DIRS and path.suffix in TEXT_SUFFIXES)


def move_files(root: Path, dry: bool) -> list[str]:
    done = []
    git = (root / ".git").exists()
    for room, doc in ROOMS.items():
        init = root / "app" / room / "__init__.py"
        needed = any(new.startswith(f"{room}.") for new in MOVES.values())
        if needed and not init.exists():
            done.append(f"create app/{room}/__init__.py")
            if not dry:
                init.parent.mkdir(parents=True, exist_ok=True)
                init.write_text(doc)
                if git:
                    subprocess.run(["git", "add", str(init)], cwd=root, check=True)
    for old, new in MOVES.items():
        src = root / "app" / f"{old.replace('.', '/')}.py"
        dst = root / "app" / f"{new.replace('.', '/')}.py"
        if not src.exists():
            continue
        if dst.exists():
            raise SystemExit(f"both {src} and {dst} exist: merge them by hand first")
        done.append(f"move {src.relative_to(root)} -> {dst.relative_to(root)}")
        if not dry:
            dst.parent.mkdir(parents=True, exist_ok=True)
            if git:
                subprocess.run(["git", "mv", str(src), str(dst)], cwd=root, check=True)
            else:
                shutil.move(src, dst)
    for rel in REMOVED_FILES:
        f = root / rel
        if f.exists():
            done.append(f"remove {rel}")
            if not dry:
                if git:
                    subprocess.run(["git", "rm", "-q", str(f)], cwd=root, check=True)
                else:
                    f.unlink()
    return done


def rewrite(text: str, subs: list[tuple[re.Pattern[str], str]]) -> str:
    text = _FROM.sub(_split_from, text)
    for pattern, replacement in subs:
        text = pattern.sub(replacement, text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=Path(__file__).resolve().parents[1], type=Path)
    ap.add_argument(
        "--check", action="store_true", help="list what a run would do; exit 1 if anything"
    )
    ap.add_argument("--no-ruff", action="store_true", help="skip ruff on the changed files")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    actions = move_files(root, args.check)
    subs = _patterns()
    changed: list[Path] = []
    for path in tracked(root):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(NEVER) and path.suffix == ".sql":
            stale = [p.pattern for p, _ in subs if p.search(path.read_text())]
            if stale:
                print(f"note: {rel} names an old path in a comment (left as it is)")
            continue
        if not wanted(root, path):
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        new = rewrite(text, subs)
        if new != text:
            changed.append(path)
            if not args.check:
                path.write_text(new)
        for line in _FROM_PAREN.findall(new):
            print(f"check by hand: {rel}: {line.strip()} ...")
    actions += [f"rewrite {p.relative_to(root)}" for p in changed]
    for a in actions:
        print(a)
    if args.check:
        return 1 if actions else 0
    py = [str(p) for p in changed if p.suffix == ".py" and p.exists()]
    py += [str(root / "app" / f"{n.replace('.', '/')}.py") for n in MOVES.values()]
    py = sorted({p for p in py if Path(p).exists()})
    if py and not args.no_ruff:
        ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
        subprocess.run([ruff, "check", "--select", "I", "--fix", "-q", *py], cwd=root, check=False)
        subprocess.run([ruff, "format", "-q", *py], cwd=root, check=False)
    print(f"done: {len(actions)} changes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
