"""What each lazily imported library would add to every `proforma` command's start.

    .venv/bin/python bench/start_imports.py             # 5 fresh interpreters per module
    .venv/bin/python bench/start_imports.py --runs 9

The command line imports some libraries only inside the commands or functions that use
them (tests/architecture/test_cli_startup.py keeps them out of `import proforma.app.cli`);
the comments beside those imports say why, and this bench gives the figure: for each
module, the median over fresh interpreters of the time its import takes after
`import proforma.app.cli` (so what the start already loads is not counted twice), and the
start itself, with Python's collector as the CLI sets it and left on throughout.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (module, where the project imports it lazily)
LAZY_IMPORTS = (
    ("scipy.special", "app/scoring/cells.py, app/scoring/significance.py"),
    ("sqlglot", "app/scoring/footprints/store.py, app/store/sqlfiles.py"),
    ("rich.progress", "app/cli/baselines.py and the other progress bars"),
    ("pyarrow.compute", "app/scoring/quantiles.py"),
    ("urllib.request", "app/cli/common.py (asking a running server)"),
    ("proforma.app.sources.synthetic", "app/cli/synthetic.py (the simulator)"),
    ("pydantic", "typer's Path coercion (app/cli/score.py takes a str)"),
)

_TIME_IMPORT = """
import time, proforma.app.cli
t0 = time.perf_counter()
import {module}
print(time.perf_counter() - t0)
"""

_TIME_START = """
import gc, time
{collector}
t0 = time.perf_counter()
import proforma.app.cli
print(time.perf_counter() - t0)
"""


def _seconds(code: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout
    return float(out.strip().splitlines()[-1])


def _median_ms(code: str, runs: int) -> float:
    return 1000 * statistics.median(_seconds(code) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per figure")
    args = parser.parse_args()
    print(f"{'module':<34} {'ms after the start':>18}  imported lazily in")
    for module, where in LAZY_IMPORTS:
        ms = _median_ms(_TIME_IMPORT.format(module=module), args.runs)
        print(f"{module:<34} {ms:>18.0f}  {where}")
    as_set = _median_ms(_TIME_START.format(collector=""), args.runs)
    # the CLI turns the collector off while its modules load (app/cli/__init__.py): with
    # gc.disable made a no-op, the collector passes over them as they are made
    forced = _median_ms(_TIME_START.format(collector="gc.disable = lambda: None"), args.runs)
    print(f"\n`import proforma.app.cli`: {as_set:.0f} ms as the CLI sets the collector, ")
    print(f"{forced:.0f} ms with the collector left on while its modules load")


if __name__ == "__main__":
    main()
