"""Helpers for benches that run the published proforma20q package beside this project.

The package is never a dependency: it lives in a throwaway virtualenv the user names with
`--published-venv PATH` (e.g. `python -m venv /tmp/pfvenv && /tmp/pfvenv/bin/pip install
-e 'path/to/proforma-20q[dev]'`). Both tools run as child processes, each measured alone:
wall seconds, CPU seconds (user + system) and the child's peak resident memory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: this project's CLI: beside the interpreter (the virtualenv's), or PROFORMA_CLI
PROFORMA = Path(os.environ.get("PROFORMA_CLI") or Path(sys.executable).parent / "proforma")
RELEASE_TAG = "pf_full__r13_node_optionD_indfe_val8"


@dataclass
class Measured:
    label: str
    wall_s: float
    cpu_s: float
    peak_mb: float
    returncode: int

    def line(self) -> str:
        return (
            f"{self.label:<46} {self.wall_s:8.1f} s wall {self.cpu_s:8.1f} CPU-s "
            f"{self.peak_mb:8.0f} MB peak"
        )


def run(
    label: str,
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    check: bool = True,
) -> Measured:
    """Run one command as a child process and measure it (os.wait4 gives its own rusage)."""
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        if not isinstance(out, int):  # a log file, not DEVNULL
            out.close()
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    m = Measured(label, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code)
    # progress as each step ends (flushed: the benches run for minutes, often piped to a file)
    print(m.line(), flush=True)
    if check and code != 0:
        tail = log.read_text()[-2000:] if log and log.exists() else ""
        raise SystemExit(f"{label} failed ({code}): {' '.join(map(str, cmd))}\n{tail}")
    return m


def published_cli(venv: Path) -> Path:
    cli = Path(venv) / "bin" / "proforma20q"
    if not cli.exists():
        raise SystemExit(f"No proforma20q in {venv}/bin: install the published package there first")
    return cli


def warehouse_env(
    workdir: Path, name: str, threads: int | None, memory: str | None
) -> dict[str, str]:
    """Settings for a scratch warehouse of this project under workdir."""
    env = {
        "PROFORMA_WAREHOUSE": str(workdir / f"{name}.duckdb"),
        "PROFORMA_TEMP_DIRECTORY": str(workdir / "tmp"),
        "PROFORMA_CACHE_DIR": str(workdir / "cache"),
        "PROFORMA_MODELS_DIR": str(workdir / "models"),
    }
    if threads:
        env["PROFORMA_THREADS"] = str(threads)
    if memory:
        env["PROFORMA_MEMORY_LIMIT"] = memory
    return env


def copied_warehouse(
    source: Path, workdir: Path, name: str, threads: int | None, memory: str | None
) -> dict[str, str]:
    """warehouse_env for a copy of `source` under workdir (the original is never written)."""
    env = warehouse_env(workdir, name, threads, memory)
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, env["PROFORMA_WAREHOUSE"])
    return env


#: Byte-compiles an importable package's modules, following the links of a folder laid
#: out as this repository's proforma/ (compileall alone does not enter linked folders).
_COMPILE = """
import compileall, importlib, os, sys
root = os.path.dirname(importlib.import_module(sys.argv[1]).__file__)
ok = compileall.compile_dir(root, maxlevels=0, quiet=1)
for entry in os.scandir(root):
    if entry.is_dir() and entry.name != "__pycache__":
        ok &= compileall.compile_dir(os.path.realpath(entry.path), quiet=1)
sys.exit(0 if ok else 1)
"""


def as_installed(python: Path | str, package: str) -> None:
    """Byte-compile `package`'s modules for `python`, as `pip install` of a wheel does.
    Editable installs (both tools here) compile at first import and cache the result,
    unless PYTHONDONTWRITEBYTECODE is set, as it is on some machines: then every run
    would compile every module again (0.1-0.15 s of each of this project's starts), a
    cost no installed copy pays. Done for both tools before anything is measured."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([str(python), "-c", _COMPILE, package], check=True, env=env)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
