"""`proforma report`: every paper exhibit the warehouse supports, written as files in one
run (docs/report.md). Tables as CSV, Markdown and LaTeX; figures as PNG and SVG; an
index page (index.html) and a manifest (manifest.json) list them with the score runs
they come from. The warehouse is only read; Figure 2 runs Forma's forward passes (the
oracle experiment of app/flows/scenario.py) when its checkpoints are on disk.

An exhibit the warehouse cannot support (no reconciled submissions, no Forma checkpoint,
no density forecasts) is left out with its reason in the index, the manifest and the
command's summary line, never with a traceback.

writer.py runs the report (`write_report`), exhibits.py makes each exhibit from the
numbers data.py reads, tables.py, figures.py and appendix.py shape them, render.py and
index.py write them.
"""

from __future__ import annotations

from proforma.app.report.exhibits import Exhibit
from proforma.app.report.writer import MANIFEST, ReportResult, write_report

__all__ = ["MANIFEST", "Exhibit", "ReportResult", "write_report"]
