"""Rewrite the project's import names `app`, `models`, `contracts` to `proforma.app`,
`proforma.models`, `proforma.contracts` (the installed distribution's one top-level
package; docs/architecture.md, "Layout").

    python tools/rename_imports.py [--check] [ROOT]

Idempotent: a second run changes nothing (`--check` exits 1 and lists the files a run
would change). What it rewrites:

- Python files (app/, models/, contracts/, tests/, bench/, tools/): `from app.x import y`,
  `from app import x`, `import app.x as y`; a bare `import app.x` (which binds the name
  `app`) becomes `import proforma.app.x  # noqa: F401` plus `from proforma import app`,
  so the code that uses `app.x.y` keeps working. Inside string literals and comments,
  dotted module paths whose second part is a real module of the package
  (`"app.cli:main"`, `"models.forma.train.fit"` for mock.patch, `-m app.cli`), never
  attribute access in code (`app.state` of a FastAPI object stays).
- Markdown (README.md, docs/), Makefile, Dockerfile, docker-compose.yml, pyproject.toml,
  .ci/: import statements and the same checked dotted module paths.

Then the changed Python files go through `ruff check --select I --fix` and `ruff format`
(longer names re-sort and re-wrap some import blocks), so the result passes `make lint`
as it stands (`--no-ruff` skips this).

A dotted path is only rewritten when `app/<second part>` (or `.py`) exists under ROOT,
so `models.csv` or `contracts.md` stay as they are. Lines it cannot rewrite safely
(`import app.x, models.y` on one line) are listed and left alone.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tokenize
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("app", "models", "contracts")
PREFIX = "proforma"
PY_DIRS = ("app", "models", "contracts", "tests", "bench", "tools")
TEXT_FILES = (
    "README.md",
    "Makefile",
    "Dockerfile",
    "docker-compose.yml",
    "pyproject.toml",
)
TEXT_DIRS = ("docs", ".ci")
#: This script and its test hold the old names as their subject matter.
SKIP = ("tools/rename_imports.py", "tests/packaging/test_rename_imports.py")

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PKG = "|".join(PACKAGES)
# `from app.x import y` / `from app import y` (not `from .app`, not already prefixed).
_FROM = re.compile(rf"^([ \t]*from[ \t]+)({_PKG})((?:\.{_NAME})*)([ \t]+import\b)", re.MULTILINE)
# `import app.x as y` (one module, aliased).
_IMPORT_AS = re.compile(
    rf"^([ \t]*import[ \t]+)({_PKG})((?:\.{_NAME})*)([ \t]+as[ \t]+{_NAME}[ \t]*(?:#.*)?)$",
    re.MULTILINE,
)
# `import app.x` / `import app` (one module, no alias: binds the package name).
_IMPORT_BARE = re.compile(
    rf"^([ \t]*)import[ \t]+({_PKG})((?:\.{_NAME})*)[ \t]*(#.*)?$", re.MULTILINE
)
# `import app.x, models.y`: left alone, reported.
_IMPORT_LIST = re.compile(rf"^[ \t]*import[ \t]+[^#\n]*\b({_PKG})\b[^#\n]*,", re.MULTILINE)
# A dotted module path in free text: not preceded by a word character, a dot, a slash or
# a dash (attribute access, `proforma.app.x`, `tests/app.x`, `--app.x`).
_DOTTED = re.compile(rf"(?<![\w./-])({_PKG})\.({_NAME})")


class Renamer:
    def __init__(self, root: Path):
        self.root = root
        self.problems: list[str] = []

    def is_module(self, package: str, name: str) -> bool:
        base = self.root / package / name
        return (base / "__init__.py").is_file() or base.with_suffix(".py").is_file()

    # -- pieces ---------------------------------------------------------------------------
    def dotted(self, text: str) -> str:
        def repl(m: re.Match[str]) -> str:
            if self.is_module(m.group(1), m.group(2)):
                return f"{PREFIX}.{m.group(0)}"
            return m.group(0)

        return _DOTTED.sub(repl, text)

    def imports(self, text: str, where: str) -> str:
        for m in _IMPORT_LIST.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            self.problems.append(f"{where}:{line}: several modules on one import line")
        text = _FROM.sub(lambda m: f"{m[1]}{PREFIX}.{m[2]}{m[3]}{m[4]}", text)
        text = _IMPORT_AS.sub(lambda m: f"{m[1]}{PREFIX}.{m[2]}{m[3]}{m[4]}", text)

        def bare(m: re.Match[str]) -> str:
            indent, package, rest, comment = m[1], m[2], m[3], m[4]
            tail = f"  {comment}" if comment else ""
            if not rest:
                return f"{indent}from {PREFIX} import {package}{tail}"
            return (
                f"{indent}import {PREFIX}.{package}{rest}  # noqa: F401\n"
                f"{indent}from {PREFIX} import {package}{tail}"
            )

        return _IMPORT_BARE.sub(bare, text)

    # -- files ----------------------------------------------------------------------------
    def python(self, text: str, where: str) -> str:
        text = self.imports(text, where)
        # Strings and comments: rewrite their dotted module paths, nothing else.
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError) as exc:
            self.problems.append(f"{where}: not tokenized ({exc}); only imports rewritten")
            return text
        lines = text.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        edits: list[tuple[int, int, str]] = []
        for tok in tokens:
            if tok.type not in (tokenize.STRING, tokenize.COMMENT):
                continue
            new = self.dotted(tok.string)
            if new != tok.string:
                start = offsets[tok.start[0] - 1] + tok.start[1]
                end = offsets[tok.end[0] - 1] + tok.end[1]
                edits.append((start, end, new))
        for start, end, new in reversed(edits):
            text = text[:start] + new + text[end:]
        return text

    def other(self, text: str, where: str) -> str:
        return self.dotted(self.imports(text, where))

    def rewrite(self, path: Path) -> str:
        text = path.read_text()
        where = path.relative_to(self.root).as_posix()
        return self.python(text, where) if path.suffix == ".py" else self.other(text, where)

    def files(self) -> Iterable[Path]:
        for folder in PY_DIRS:
            yield from sorted((self.root / folder).rglob("*.py"))
        for folder in TEXT_DIRS:
            base = self.root / folder
            if base.is_dir():
                yield from sorted(p for p in base.rglob("*") if p.is_file() and _is_text(p))
        for name in TEXT_FILES:
            if (self.root / name).is_file():
                yield self.root / name

    def run(self, write: bool) -> list[Path]:
        changed = []
        for path in self.files():
            if path.relative_to(self.root).as_posix() in SKIP or path.is_symlink():
                continue
            old = path.read_text()
            new = self.rewrite(path)
            if new != old:
                changed.append(path)
                if write:
                    path.write_text(new)
        return changed


def _is_text(path: Path) -> bool:
    return path.suffix in {".md", ".txt", ".sh", ".yml", ".yaml", ".toml", ".cfg"} or (
        path.suffix == "" and not path.name.startswith(".")
    )


def ruff_fix(root: Path, paths: list[Path]) -> None:
    """Re-sort and re-wrap the import blocks the longer names changed."""
    python = [str(p) for p in paths if p.suffix == ".py"]
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not python:
        return
    if not Path(ruff).is_file():
        print(
            "ruff not found: run `ruff check --select I --fix` and `ruff format`", file=sys.stderr
        )
        return
    subprocess.run([ruff, "check", "-q", "--select", "I", "--fix", *python], cwd=root, check=False)
    subprocess.run([ruff, "format", "-q", *python], cwd=root, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a run would"
    )
    parser.add_argument(
        "--no-ruff", action="store_true", help="leave the changed files unformatted"
    )
    args = parser.parse_args(argv)
    renamer = Renamer(args.root.resolve())
    changed = renamer.run(write=not args.check)
    if changed and not args.check and not args.no_ruff:
        ruff_fix(renamer.root, changed)
    for path in changed:
        print(path.relative_to(renamer.root))
    for problem in renamer.problems:
        print(f"left alone: {problem}", file=sys.stderr)
    print(f"{len(changed)} file(s) {'to change' if args.check else 'changed'}", file=sys.stderr)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
