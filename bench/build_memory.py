"""Where `proforma build`'s peak memory goes: per step, at several panel sizes.

    nice .venv/bin/python bench/build_memory.py --firms 500 1000 2000 [--workdir /tmp/x]

For each firm count, a synthetic raw panel (`proforma ingest synthetic --firms N`) is
made once in the work folder and copied; the build then runs in a child process of its
own (so its peak is its own), as `proforma build` runs it: sql/build in order
(app/flows/build.run_build), then the standard footprints and the test split's cell
grid. A thread samples the process's resident set (VmRSS) every 10 ms; per step the
script prints the step's peak RSS, the RSS after it, and DuckDB's own view after it
(duckdb_memory(): memory its buffer manager holds, and the temp files it spilled).
The last lines print each phase's peak against the firm count and a linear projection
to --project firms (30,000 by default), which is arithmetic, not a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class RssSampler:
    """Peak VmRSS (MB) since the last `mark()`, sampled every `period` seconds."""

    def __init__(self, period: float = 0.01) -> None:
        self.period = period
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = _status_kb("VmRSS")
            self.peak = max(self.peak, rss)
            time.sleep(self.period)

    def mark(self) -> float:
        """The peak since the last mark (MB); starts a new window at the current RSS."""
        peak = max(self.peak, _status_kb("VmRSS")) / 1024
        self.peak = 0
        return peak

    def stop(self) -> None:
        self._stop.set()
        self._t.join()


def duckdb_view(wh) -> tuple[float, float]:
    """(MB DuckDB's buffer manager holds, MB spilled to temp files) right now."""
    mem, tmp = wh.con.execute(
        "SELECT sum(memory_usage_bytes), sum(temporary_storage_bytes) FROM duckdb_memory()"
    ).fetchall()[0]
    return (mem or 0) / 2**20, (tmp or 0) / 2**20


def _writer_at(rev: str):
    """The cell layout's `_write_dense` as it was at git revision `rev` (for a before/after
    run; the module was app/scoring/grid.py before it was app/scoring/cell_layout.py)."""
    import types

    root = Path(__file__).resolve().parent.parent
    for path in ("app/scoring/cell_layout.py", "app/scoring/grid.py"):
        shown = subprocess.run(
            ["git", "show", f"{rev}:{path}"], check=False, cwd=root, capture_output=True, text=True
        )
        if shown.returncode == 0:
            break
    else:
        raise SystemExit(f"no cell layout module at {rev}")
    module = types.ModuleType(f"cell_layout_at_{rev}")
    sys.modules[module.__name__] = module  # its dataclasses look their module up
    exec(compile(shown.stdout, f"{rev}:{path}", "exec"), module.__dict__)  # noqa: S102
    return module._write_dense


def child(warehouse: Path, out: Path, rev: str | None) -> None:
    """Run the build as `proforma build` does, recording memory per step into `out`."""
    from proforma.app.flows.build import run_build
    from proforma.app.scoring.footprints.standard import ensure_standard_footprints
    from proforma.app.scoring.positional import cell_layout
    from proforma.app.store.settings import get_settings
    from proforma.app.store.warehouse import connect

    get_settings.cache_clear()
    sampler = RssSampler()
    wh = connect()
    rows: list[dict] = []
    t = [time.perf_counter()]

    def record(name: str) -> None:
        mem, tmp = duckdb_view(wh)
        rows.append(
            {
                "step": name,
                "peak_mb": sampler.mark(),
                "rss_after_mb": _status_kb("VmRSS") / 1024,
                "duckdb_mb": mem,
                "spilled_mb": tmp,
                "wall_s": time.perf_counter() - t[0],
            }
        )
        t[0] = time.perf_counter()

    record("(open)")

    def on_step(i, n, step, phase):
        if phase == "done":
            record(step.name)

    run_build(wh, "estimate", on_step=on_step)
    record("(commit and record)")
    ensure_standard_footprints(wh)
    record("standard footprints")
    # the grid's two phases: eval/042 (SQL) and its rows, then its dense arrays
    from proforma.app.scoring import cell_layout as layout_module

    write_dense = _writer_at(rev) if rev else layout_module._write_dense

    def timed_write_dense(*a, **k):
        record("grid: 042 + row arrays")
        write_dense(*a, **k)
        record("grid: dense arrays")

    layout_module._write_dense = timed_write_dense
    g = cell_layout(wh, "test")
    record("grid: map")
    grid = {"rows": len(g.row_firm), "slots": g.n_slots, "cells": g.n_scoreable}
    wh.close()
    sampler.stop()
    out.write_text(json.dumps({"steps": rows, "hwm_mb": _status_kb("VmHWM") / 1024, "grid": grid}))


def raw_panel(work: Path, firms: int) -> Path:
    """A migrated warehouse holding a synthetic raw panel of `firms` firms (made once)."""
    raw = work / f"raw_{firms}.duckdb"
    if raw.exists():
        return raw
    env = {
        **os.environ,
        "PROFORMA_WAREHOUSE": str(raw),
        "PROFORMA_TEMP_DIRECTORY": str(work / "tmp"),
    }
    cli = [sys.executable, "-c", "from proforma.app.cli import main; main()"]
    subprocess.run([*cli, "migrate"], env=env, check=True, capture_output=True)
    subprocess.run(
        [*cli, "ingest", "synthetic", "--firms", str(firms)],
        env=env,
        check=True,
        capture_output=True,
    )
    return raw


def peak_of(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """(peak RSS MB, wall s) of a command run to its end (its own process tree's peak)."""
    t0 = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=err, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:  # reported, not raised: the other figures still stand
        tail = log.read_text(errors="replace").strip().splitlines()[-1:]
        print(f"  {' '.join(cmd[3:])} failed (rc {proc.returncode}): {tail}")
    return usage.ru_maxrss / 1024, time.perf_counter() - t0


def measure(
    work: Path, firms: int, memory_limit: str, threads: int, rev: str | None, after: bool = False
) -> dict:
    raw = raw_panel(work, firms)
    wh_path = work / f"build_{firms}.duckdb"
    for p in work.glob(f"build_{firms}.duckdb*"):
        p.unlink()
    shutil.copyfile(raw, wh_path)
    out = work / f"build_{firms}.json"
    cache = work / f"cache_{firms}"  # the grid's dense arrays: made afresh, as a build does
    shutil.rmtree(cache, ignore_errors=True)
    env = {
        **os.environ,
        "PROFORMA_WAREHOUSE": str(wh_path),
        "PROFORMA_TEMP_DIRECTORY": str(work / "tmp"),
        "PROFORMA_MEMORY_LIMIT": memory_limit,
        "PROFORMA_THREADS": str(threads),
        "PROFORMA_CACHE_DIR": str(cache),
    }
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, __file__, "--child", str(wh_path), str(out), rev or ""],
        env=env,
        check=True,
    )
    res = json.loads(out.read_text())
    res["wall_s"] = time.perf_counter() - t0
    if after:  # the rest of the path on the built warehouse, each command on its own
        cli = [sys.executable, "-c", "from proforma.app.cli import main; main()"]
        res["export"] = peak_of(
            [*cli, "export", str(work / f"export_{firms}"), "--layout", "proforma20q"],
            env,
            work / f"export_{firms}.log",
        )
        shutil.rmtree(work / f"export_{firms}", ignore_errors=True)
        res["baselines"] = peak_of(
            [*cli, "baselines", "reference"], env, work / f"baselines_{firms}.log"
        )
    for p in work.glob(f"build_{firms}.duckdb*"):
        p.unlink()
    shutil.rmtree(cache, ignore_errors=True)
    return res


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] or None)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--firms", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--workdir", default="/tmp/build_memory")
    ap.add_argument("--memory-limit", default="6GB", help="PROFORMA_MEMORY_LIMIT of the build")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--project", type=int, default=30_000, help="Firms to project the peak to")
    ap.add_argument(
        "--rest",
        action="store_true",
        help="Also run `export --layout proforma20q` and `baselines reference` after the "
        "(current) build and print their peak RSS",
    )
    ap.add_argument(
        "--before",
        default=None,
        metavar="REV",
        help="Also run each size with the grid's dense-array writer of git revision REV "
        "(e.g. 33e99e7, before it wrote piece by piece), interleaved with the current one",
    )
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"build memory: memory_limit={args.memory_limit}, threads={args.threads}; "
        f"load at start {os.getloadavg()[0]:.1f}"
    )
    variants = [("before", args.before), ("after", None)] if args.before else [("now", None)]
    results: dict[str, dict[int, dict]] = {v: {} for v, _ in variants}
    for n in args.firms:
        for label, rev in variants:
            res = measure(work, n, args.memory_limit, args.threads, rev, args.rest and rev is None)
            results[label][n] = res
            g = res["grid"]
            print(
                f"\n{n:,} firms, {label}{f' (grid writer of {rev})' if rev else ''}: peak RSS "
                f"{res['hwm_mb']:,.0f} MB, {res['wall_s']:.0f} s wall, load "
                f"{os.getloadavg()[0]:.1f}; test grid {g['rows']:,} rows x {g['slots']:,} "
                f"slots = {g['rows'] * g['slots']:,} positions, {g['cells']:,} scoreable cells"
            )
            print(
                f"  {'step':<28}{'peak MB':>9}{'after MB':>10}{'duckdb MB':>11}"
                f"{'spilled':>9}{'s':>7}"
            )
            for r in res["steps"]:
                print(
                    f"  {r['step']:<28}{r['peak_mb']:9,.0f}{r['rss_after_mb']:10,.0f}"
                    f"{r['duckdb_mb']:11,.0f}{r['spilled_mb']:9,.0f}{r['wall_s']:7.1f}"
                )
    print(f"\npeak RSS (MB) of `proforma build`, memory_limit={args.memory_limit}:")
    print(
        f"  {'firms':>7}"
        + "".join(f"{v + ' sql/build':>18}{v + ' grid':>13}{v + ' whole':>14}" for v, _ in variants)
    )
    for n in args.firms:
        line = f"  {n:>7,}"
        for v, _ in variants:
            steps = results[v][n]["steps"]
            build = max(r["peak_mb"] for r in steps if r["step"][:3].isdigit())
            grid = max(r["peak_mb"] for r in steps if r["step"].startswith("grid"))
            line += f"{build:18,.0f}{grid:13,.0f}{results[v][n]['hwm_mb']:14,.0f}"
        print(line)
    for n in args.firms:
        now = results[variants[-1][0]][n]
        if "export" in now:
            print(
                f"  {n:,} firms: export --layout proforma20q peak {now['export'][0]:,.0f} MB "
                f"({now['export'][1]:.0f} s); baselines reference peak "
                f"{now['baselines'][0]:,.0f} MB ({now['baselines'][1]:.0f} s)"
            )
    if len(args.firms) >= 2:
        n0, n1 = min(args.firms), max(args.firms)
        for v, _ in variants:
            r0, r1 = results[v][n0], results[v][n1]
            slope = (r1["hwm_mb"] - r0["hwm_mb"]) / (n1 - n0)
            proj = r1["hwm_mb"] + slope * (args.project - n1)
            trend = (
                f"a straight line gives {proj / 1024:,.1f} GB at {args.project:,} firms "
                "(arithmetic, not a run; DuckDB's part stops at memory_limit: a run with a "
                "limit under the panel's size shows the bound)"
                if slope > 0
                else "no growth: the peak is held by the settings"
            )
            print(
                f"  {v}: peak {r0['hwm_mb']:,.0f} MB at {n0:,} firms, {r1['hwm_mb']:,.0f} MB at "
                f"{n1:,} ({slope * 1000:+,.0f} MB per 1,000 firms); {trend}"
            )
    print(f"load at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
