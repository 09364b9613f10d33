"""`write_report`: read the score runs, make every exhibit the warehouse supports (each
left out with its reason when it cannot be made), then the index page and the manifest
(docs/report.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proforma.app.report import exhibits as make
from proforma.app.report.appendix import Unavailable
from proforma.app.report.exhibits import Exhibit, Inputs, read_inputs
from proforma.app.report.index import write_index
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.provenance import utcnow

MANIFEST = "manifest.json"

Log = Callable[[str], None]


@dataclass
class ReportResult:
    folder: Path
    exhibits: list[Exhibit]
    skipped: list[str]
    files: list[Path]
    provenance: dict[str, Any]


def write_report(
    wh: Warehouse,
    folder: Path,
    *,
    against: str | None = None,
    oracle_origins: int = 768,
    figure2: bool = True,
    log: Log = print,
) -> ReportResult:
    """Write every exhibit to `folder`; returns what was written and what was left out."""
    t0 = time.perf_counter()
    inp = read_inputs(wh, folder, against)
    folder.mkdir(parents=True, exist_ok=True)
    clear_previous(folder)
    made, skipped = make_exhibits(inp, oracle_origins=oracle_origins, figure2=figure2, log=log)
    provenance = report_provenance(inp, elapsed_s=time.perf_counter() - t0)
    index = write_index(folder, made, skipped, provenance)
    files = [p for ex in made for p in ex.files] + [index]
    manifest = write_manifest(folder, made, skipped, files, provenance)
    return ReportResult(folder, made, skipped, files + [manifest], provenance)


def clear_previous(folder: Path) -> None:
    """Files of the previous report in `folder` (its manifest lists them) go first, so
    the index never links an exhibit this run left out."""
    old = folder / MANIFEST
    if not old.exists():
        return
    try:
        listed = json.loads(old.read_text()).get("files", [])
    except (OSError, ValueError):
        return
    for name in listed:
        path = folder / name
        if path.parent == folder and path.is_file():
            path.unlink()


def make_exhibits(
    inp: Inputs, *, oracle_origins: int, figure2: bool, log: Log
) -> tuple[list[Exhibit], list[str]]:
    """(the exhibits made, in the paper's order; what was left out, with why)."""
    plan: list[tuple[str, Callable[[], Exhibit] | None]] = [
        ("Table 1 (headline)", lambda: make.headline(inp)),
        ("Figure 1 (R² by horizon)", lambda: make.figure1(inp)),
        (
            "Figure 2 (oracle scenario)",
            (lambda: make.figure2(inp, oracle_origins, log)) if figure2 else None,
        ),
        ("Table 2 (coherence)", lambda: make.table2(inp)),
        ("Table A1 (waterfall)", lambda: make.table_a1(inp)),
        ("Table A2 (item dictionary)", lambda: make.table_a2(inp)),
        ("Table A3 (joint availability)", lambda: make.table_a3(inp)),
        ("Table A4 (Forma hyperparameters)", lambda: make.table_a4(inp)),
        ("Calibration", lambda: make.calibration(inp)),
    ]
    made: list[Exhibit] = []
    skipped: list[str] = []
    for title, maker in plan:
        if maker is None:
            skipped.append(f"{title}: --no-figure2")
            continue
        started = time.perf_counter()
        try:
            ex = maker()
        except Unavailable as why:
            skipped.append(f"{title}: {why}")
            log(f"[yellow]{title}: left out ({why})[/]")
            continue
        made.append(ex)
        log(f"{title}: {len(ex.files)} files, {time.perf_counter() - started:.1f}s")
    return made, skipped


def report_provenance(inp: Inputs, *, elapsed_s: float) -> dict[str, Any]:
    """Where the numbers come from: the build, each footprint's score run, the DM
    reference per footprint, when, and how long the report took."""
    wh = inp.wh
    return {
        "generated_at": utcnow().isoformat(timespec="seconds"),
        "warehouse": str(wh.path),
        "build_id": wh.scalar("SELECT max(build_id) FROM meta.builds WHERE status = 'succeeded'")
        if wh.table_exists("meta.builds")
        else None,
        "score_runs": {
            r.footprint: {
                "score_run_id": r.score_run_id,
                "version": r.version,
                "n_cells": r.n_cells,
                "finished_at": str(r.finished_at),
            }
            for r in inp.runs
        },
        "dm_reference": {r.footprint: make.name(inp.refs[r.score_run_id], None) for r in inp.runs},
        "elapsed_s": round(elapsed_s, 1),
    }


def write_manifest(
    folder: Path,
    made: list[Exhibit],
    skipped: list[str],
    files: list[Path],
    provenance: dict[str, Any],
) -> Path:
    manifest = folder / MANIFEST
    manifest.write_text(
        json.dumps(
            {
                "provenance": provenance,
                "skipped": skipped,
                "exhibits": [
                    {"key": e.key, "title": e.title, "files": [p.name for p in e.files]}
                    for e in made
                ],
                "files": [p.name for p in files],
            },
            indent=1,
            default=str,
        )
    )
    return manifest
