"""The README's demo images, retaken from a finished demo (issue 48).

    .venv/bin/python bench/demo_stages.py --workdir /tmp/demo-bench      # the demo first
    .venv/bin/python bench/demo_screenshots.py --workdir /tmp/demo-bench [--port 8765]

Serves the demo warehouse in --workdir (every path as bench/demo_stages.py set it),
checks that the leaderboard page and the round page name every entry the demo puts on
them (the reference baselines, the competitors, Forma and its reconciliation: the names
the README shows), then photographs both pages with headless Chromium into
docs/img/demo-leaderboard.png and docs/img/demo-round.png. A page that lost an entry, or
names it differently, stops the bench before any image is replaced, so the README never
shows a page the code no longer makes. Needs the `chromium` package.
"""

from __future__ import annotations

import argparse
import html
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compose_check import screenshot
from demo_stages import ROOT, demo_env

#: What each page must show: (path, names that must appear in its HTML, image).
PAGES = (
    (
        "/",
        ("Seasonal random walk", "Fade / AR(1)", "enet (demo)", "forma-mid-gaussian"),
        "demo-leaderboard.png",
    ),
    (
        "/rounds/demo",
        ("Seasonal random walk", "Fade / AR(1)", "enet (demo)", "forma-mid-gaussian"),
        "demo-round.png",
    ),
)


def wait_healthy(base: str, timeout_s: float = 120) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            if httpx.get(base + "/api/v1/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise TimeoutError(f"no server at {base} after {timeout_s:.0f}s")


def missing_names(page: str, names: tuple[str, ...]) -> list[str]:
    """The names a page's HTML does not hold (its text unescaped, as a reader sees it)."""
    text = html.unescape(page)
    return [n for n in names if n not in text]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = ap.parse_args()
    if shutil.which("chromium") is None:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "proforma"), "serve", "--port", str(args.port)],
        env={**os.environ, **demo_env(args.workdir.resolve())},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(base)
        for path, names, _ in PAGES:
            lost = missing_names(httpx.get(base + path, timeout=60).text, names)
            if lost:
                print(f"{path}: the page does not name {', '.join(lost)}", file=sys.stderr)
                return 1
            print(f"{path}: names every entry ({', '.join(names)})")
        with tempfile.TemporaryDirectory() as shots:
            taken = []
            for path, _, image in PAGES:
                shot = Path(shots) / image
                screenshot(base + path, shot, window="1400,1500", budget_ms=10000)
                taken.append((shot, args.out / image))
            for shot, dest in taken:
                shutil.copyfile(shot, dest)
                print(f"{dest}: {dest.stat().st_size:,} bytes")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
