"""A round's cycle at demo scale, each step as the `proforma` command a user runs, in a
child process of its own (wall time, CPU seconds and that child's peak RSS from os.wait4):

    .venv/bin/python bench/rounds.py [--firms 1000] [--workdir /tmp/rounds-bench]
        [--competitors enet,ffnn-linear,ffnn-large | --competitors none]

ingest (the default demo panel) -> build -> the demo's competitors stage (`run
baselines --preset demo --no-score`: the imputation and the static fits) -> round open
(with the reference baselines) -> round enter (the same competitors, demo preset, 2 jobs:
what `make demo` adds to its round; their static fits are reused) -> round close -> the
next vintage (the panel grown by four quarters, `--through
2025Q4`, ingested and built in its own warehouse) -> round resolve --panel. Prints one
line per step, then the round's resolution per horizon and leaderboard (docs/rounds.md,
"Figures at demo scale").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the competitors `make demo` enters into its round (app/cli/demo.py)
DEMO = ("enet", "ffnn-linear", "ffnn-large")
PROFORMA = [sys.executable, "-m", "proforma.app.cli"]


def step(title: str, args: list[str], warehouse: Path) -> None:
    env = {
        **os.environ,
        "PROFORMA_WAREHOUSE": str(warehouse),
        "PROFORMA_MODELS_DIR": str(warehouse.parent / "models"),
    }
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*PROFORMA, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{title} failed ({proc.returncode}):\n{output}")
    done = [line for line in output.splitlines() if line.startswith("done:")]
    cpu = usage.ru_utime + usage.ru_stime  # the child and the processes it waited for
    print(
        f"{title:<28} {wall:7.1f} s  {cpu:7.1f} CPU-s  peak RSS {usage.ru_maxrss / 2**20:5.2f} GiB  "
        f"{done[-1] if done else ''}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--firms", type=int, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rounds-bench"))
    parser.add_argument(
        "--competitors",
        default=",".join(DEMO),
        help="the learned competitors entered (default: the demo's); 'none' for none",
    )
    opts = parser.parse_args()
    shutil.rmtree(opts.workdir, ignore_errors=True)
    opts.workdir.mkdir(parents=True)
    main_wh, next_wh = opts.workdir / "warehouse.duckdb", opts.workdir / "next.duckdb"
    firms = ["--firms", str(opts.firms)] if opts.firms else []
    print(f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    step("ingest", ["ingest", "synthetic", "--scale", "demo", *firms], main_wh)
    step("build", ["build"], main_wh)
    demo = ["--preset", "demo", "--jobs", "2"]
    if opts.competitors != "none":
        # the demo's competitors stage (the imputation and the static fits), before its round
        static = ["run", "baselines", *demo, "--no-score", "--which", opts.competitors]
        step("run baselines (static)", static, main_wh)
    step("round open", ["round", "open", "--name", "bench", "--days", "14"], main_wh)
    if opts.competitors != "none":
        enter = ["round", "enter", "bench", "--competitors", opts.competitors]
        step("round enter", [*enter, *demo], main_wh)
    step("round close", ["round", "close", "bench"], main_wh)
    grow = ["ingest", "synthetic", "--scale", "demo", *firms, "--through", "2025Q4"]
    step("next vintage: ingest", grow, next_wh)
    step("next vintage: build", ["build"], next_wh)
    step("round resolve --panel", ["round", "resolve", "--panel", str(next_wh)], main_wh)
    env = {**os.environ, "PROFORMA_WAREHOUSE": str(main_wh)}
    subprocess.run([*PROFORMA, "round", "show", "bench"], env=env, check=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
