"""The differencing probe over a whole week (issue 47, item 2; docs/service.md, "The truth:
threat model"): a user with a daily limit of LIMIT uploads spends seven days of it on
pairs of uploads that differ in a few target cells, and every public channel of them is
attacked at once (tests/api/differencing_probe.py, the probe the tests run over two days).
Prints the RMS error of the best weighted estimate of the targets' truths from the public
numbers and from the exact ones, and the sigmas the week's uploads were granted.

    .venv/bin/python bench/differencing.py [--limit 4] [--days 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "api"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=4, help="uploads a day")
    parser.add_argument("--days", type=int, default=7)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="differencing-"))
    os.environ.update(
        {
            "PROFORMA_WAREHOUSE": str(folder / "warehouse.duckdb"),
            "PROFORMA_UPLOAD_DIR": str(folder / "uploads"),
            "PROFORMA_PUBLIC_SNAPSHOT": str(folder / "public.duckdb"),
            "PROFORMA_REPORT_DIR": str(folder / "report"),
            "PROFORMA_CACHE_DIR": str(folder / "cache"),
            "PROFORMA_UPLOADS_PER_DAY": str(args.limit),
            "PROFORMA_PUBLIC_MIN_CELLS": "5",
            # the attacker reads the console once per upload and level: as the tests do,
            # leave the console's rate limit out of the figure
            "PROFORMA_QUERY_RATE_PER_MIN": "1000000",
            "PROFORMA_QUERY_BURST": "1000000",
        }
    )
    from differencing_probe import run_probe
    from fastapi.testclient import TestClient
    from service_helpers import Api, make_panel_warehouse

    from proforma.app.read import noise_budget
    from proforma.app.server.main import create_app
    from proforma.app.store.settings import get_settings

    get_settings.cache_clear()
    settings = get_settings()
    make_panel_warehouse(settings)
    started = time.perf_counter()
    with TestClient(create_app(settings)) as client:
        got = run_probe(
            Api(client), days=args.days, pairs_a_day=args.limit // 2, daily_limit=args.limit
        )
    print(
        f"uploads {got.uploads} over {args.days} days (limit {args.limit} a day), "
        f"{got.targets} targets, {time.perf_counter() - started:.0f} s"
    )
    print(f"sigmas granted: {got.sigmas[0]:.1f} .. {got.sigmas[-1]:.1f}")
    print(f"RMS error, exact numbers:  {got.exact_rms:.2e}")
    print(
        f"RMS error, public numbers: {got.public_rms:.3f} "
        f"(stated tolerance {noise_budget.TOLERANCE})"
    )


if __name__ == "__main__":
    main()
