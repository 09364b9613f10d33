"""The report's index page: every exhibit with its figure or tables inline, links to its
files, what was left out and why, and the score runs the numbers come from. Plain HTML
with relative links, so the folder reads the same from disk and from /report."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from proforma.app.report.render import html_table

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}caption{text-align:left;font-weight:600;padding:.3em 0}
th,td{padding:2px 8px;border-bottom:1px solid #eee}td.l{white-space:nowrap}td.r{text-align:right;font-variant-numeric:tabular-nums}
tr.rule td{border-bottom:1px solid #888}th{border-bottom:2px solid #888}
img{max-width:100%;border:1px solid #eee}.files a{margin-right:.8em}.note{color:#555;font-size:12px}
.skipped li{color:#7a4b00}code{background:#f4f4f4;padding:0 3px}
"""


def write_index(
    folder: Path, exhibits: list[Any], skipped: list[str], provenance: dict[str, Any]
) -> Path:
    out = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        "<title>ProForma-20Q report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>ProForma-20Q: the paper's exhibits from this warehouse</h1>",
        f'<p class="note">Generated {html.escape(str(provenance.get("generated_at")))} from '
        f"build {html.escape(str(provenance.get('build_id')))}. Score runs: "
        + ", ".join(
            f"{html.escape(k)} #{v['score_run_id']} (v{v['version']}, {v['n_cells']:,} cells)"
            for k, v in provenance.get("score_runs", {}).items()
        )
        + ". Compare models within a footprint, never across footprints.</p>",
        "<ul>"
        + "".join(f'<li><a href="#{e.key}">{html.escape(e.title)}</a></li>' for e in exhibits)
        + "</ul>",
    ]
    if skipped:
        out.append(
            '<h2>Left out</h2><ul class="skipped">'
            + "".join(f"<li>{html.escape(s)}</li>" for s in skipped)
            + "</ul>"
        )
    for e in exhibits:
        out.append(f'<h2 id="{e.key}">{html.escape(e.title)}</h2>')
        out.append(
            '<p class="files">'
            + "".join(f'<a href="{html.escape(p.name)}">{html.escape(p.name)}</a>' for p in e.files)
            + "</p>"
        )
        for img in e.images:
            out.append(f'<img src="{html.escape(img.name)}" alt="{html.escape(e.title)}">')
        for part in e.parts:
            out.append(html_table(part))
        out += [f'<p class="note">{html.escape(n)}</p>' for n in e.notes]
    out.append(
        '<p class="note">How each exhibit is computed: docs/report.md. '
        "Regenerate with <code>proforma report</code>.</p></body></html>"
    )
    path = folder / "index.html"
    path.write_text("\n".join(out))
    return path
