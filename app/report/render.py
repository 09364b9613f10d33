"""Writing exhibits: tables as CSV (every value, unrounded), Markdown and LaTeX (the
paper's layout: bold best, DM marks as superscripts), figures as PNG and SVG, and the
HTML fragments of the index page."""

from __future__ import annotations

import csv
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Cell:
    """A displayed value: its text, whether it is bold (best in column), and a DM mark."""

    text: str
    bold: bool = False
    mark: str = ""


@dataclass
class TablePart:
    """One tabular (a table, or one panel of a table)."""

    title: str
    columns: list[str]
    rows: list[list[Cell]]
    data: list[dict[str, Any]]  # machine-readable rows for the CSV
    notes: list[str] = field(default_factory=list)
    rules_after: set[int] = field(default_factory=set)  # row indexes followed by a rule
    groups: list[tuple[str, int, str]] | None = None  # (label, span, short) over columns[1:]

    def flat_columns(self) -> list[str]:
        """Column labels for one-row headers (Markdown, HTML): a group's short name added."""
        if not self.groups:
            return self.columns
        out = [self.columns[0]]
        i = 1
        for _, span, short in self.groups:
            out += [f"{c} ({short})" for c in self.columns[i : i + span]]
            i += span
        return out + self.columns[i:]


def fmt(value: Any, digits: int = 3, pct: bool = False) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    if pct:
        return f"{100 * value:.1f}%"
    return f"{value:.{digits}f}"


def best_in_column(values: list[float | None], higher: bool) -> int | None:
    finite = [(v, i) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if not finite:
        return None
    return (max(finite) if higher else min(finite))[1]


# -- CSV -------------------------------------------------------------------------------
def write_csv(path: Path, parts: list[TablePart]) -> Path:
    keys: list[str] = []
    for part in parts:
        for row in part.data:
            keys += [k for k in row if k not in keys]
    with_part = len(parts) > 1
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow((["part"] if with_part else []) + keys)
        for part in parts:
            for row in part.data:
                w.writerow(
                    ([part.title] if with_part else [])
                    + ["" if row.get(k) is None else row.get(k) for k in keys]
                )
    return path


# -- Markdown --------------------------------------------------------------------------
def _md_cell(c: Cell) -> str:
    text = c.text.replace("|", "\\|")
    text = f"**{text}**" if c.bold and text != "—" else text
    return text + (f"<sup>{c.mark}</sup>" if c.mark else "")


def write_markdown(path: Path, title: str, parts: list[TablePart], notes: list[str]) -> Path:
    lines = [f"# {title}", ""]
    for part in parts:
        if len(parts) > 1 or part.title != title:
            lines += [f"## {part.title}", ""]
        lines.append("| " + " | ".join(part.flat_columns()) + " |")
        lines.append("|" + "|".join([":--"] + ["--:"] * (len(part.columns) - 1)) + "|")
        for row in part.rows:
            lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
        lines += [""] + [f"_{n}_" for n in part.notes] + ([""] if part.notes else [])
    lines += [n for n in notes] + [""]
    path.write_text("\n".join(lines))
    return path


# -- LaTeX -----------------------------------------------------------------------------
_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "²": r"$^2$",
    "—": "---",
    "†": r"$^{\dagger}$",
    "≥": r"$\geq$",
    "−": "-",
}


def tex_escape(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)


def _tex_cell(c: Cell) -> str:
    text = tex_escape(c.text)
    if c.bold and c.text != "—":
        text = rf"\textbf{{{text}}}"
    if c.mark:
        mark = r"\dagger" if c.mark == "†" else c.mark
        text += rf"$^{{{mark}}}$"
    return text


def write_latex(
    path: Path, title: str, label: str, parts: list[TablePart], notes: list[str]
) -> Path:
    out = [
        r"\begin{table}[t]",
        r"\centering\small",
        rf"\caption{{{tex_escape(title)}{(' ' + tex_escape(' '.join(notes))) if notes else ''}}}",
        rf"\label{{{label}}}",
    ]
    for part in parts:
        spec = "l" + "c" * (len(part.columns) - 1)
        out.append(rf"\begin{{tabular}}{{{spec}}}")
        if len(parts) > 1:
            out.append(
                rf"\multicolumn{{{len(part.columns)}}}{{l}}{{\emph{{{tex_escape(part.title)}}}}}\\"
            )
        out.append(r"\toprule")
        if part.groups:
            out.append(
                " & "
                + " & ".join(
                    rf"\multicolumn{{{n}}}{{c}}{{{tex_escape(g)}}}" for g, n, _ in part.groups
                )
                + r" \\"
            )
        out.append(" & ".join(tex_escape(c) for c in part.columns) + r" \\")
        out.append(r"\midrule")
        for i, row in enumerate(part.rows):
            out.append(" & ".join(_tex_cell(c) for c in row) + r" \\")
            if i in part.rules_after and i != len(part.rows) - 1:
                out.append(r"\midrule")
        out.append(r"\bottomrule")
        out.append(r"\end{tabular}")
        if part.notes:
            out.append(r"\par\footnotesize " + tex_escape(" ".join(part.notes)))
        out.append(r"\medskip")
    out.append(r"\end{table}")
    path.write_text("\n".join(out) + "\n")
    return path


# -- HTML (index page) -----------------------------------------------------------------
def html_table(part: TablePart) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in part.flat_columns())
    body = []
    for i, row in enumerate(part.rows):
        cells = []
        for j, c in enumerate(row):
            text = html.escape(c.text)
            if c.bold and c.text != "—":
                text = f"<b>{text}</b>"
            if c.mark:
                text += f"<sup>{html.escape(c.mark)}</sup>"
            cells.append(f'<td class="{"l" if j == 0 else "r"}">{text}</td>')
        rule = ' class="rule"' if i in part.rules_after else ""
        body.append(f"<tr{rule}>{''.join(cells)}</tr>")
    caption = f"<caption>{html.escape(part.title)}</caption>"
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in part.notes)
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{notes}"


def save_figure(fig: Any, folder: Path, stem: str) -> list[Path]:
    """The figure as PNG (150 dpi) and SVG; closes it."""
    import matplotlib.pyplot as plt

    paths = [folder / f"{stem}.png", folder / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths
