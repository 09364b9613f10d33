"""The latest `proforma report` at /report/: its index page and files, straight from the
report folder (PROFORMA_REPORT_DIR). The report holds aggregates only (scores, counts,
hyperparameters), never firm-level values.

The index links its figures and files relatively (`figure1_r2_by_horizon.png`), so it reads
the same opened from disk: served, it must be the folder's URL /report/ (with the slash)
for those links to resolve to /report/<name>; /report redirects there."""

from __future__ import annotations

import re

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from proforma.app.read.deps import SettingsDep
from proforma.app.read.errors import NotFound

router = APIRouter(include_in_schema=False)

#: Files the report writes: a plain name (no folder) with one of its extensions.
_FILE = re.compile(r"^[A-Za-z0-9_.-]+\.(html|json|csv|md|tex|png|svg)$")
_NO_REPORT = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>No report yet · ProForma-20Q</title><link rel="stylesheet" href="/static/style.css"></head>
<body><main><h1>No report yet</h1><p>Write one with <code>proforma report</code> (after
<code>proforma score</code>); <code>make demo</code> writes it at the end.</p>
<p><a href="/">Back to the leaderboard</a></p></main></body></html>"""


@router.get("/report")
def report_folder() -> RedirectResponse:
    """The folder's URL, so the index's relative links resolve under /report/."""
    return RedirectResponse("/report/", status_code=308)


@router.get("/report/", response_class=HTMLResponse)
def report_index(settings: SettingsDep) -> Response:
    index = settings.report_dir / "index.html"
    if not index.is_file():
        return HTMLResponse(_NO_REPORT, status_code=404)
    return FileResponse(index, headers={"Cache-Control": "no-cache"})


@router.get("/report/{name}")
def report_file(name: str, settings: SettingsDep) -> FileResponse:
    path = settings.report_dir / name
    if not _FILE.match(name) or not path.is_file():
        raise NotFound(f"No file {name!r} in the report; /report lists them.")
    return FileResponse(path, headers={"Cache-Control": "no-cache"})
