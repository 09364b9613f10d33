"""The figures, drawn with matplotlib's Agg backend (no display needed): Figure 1 (R2 by
horizon per footprint with DM markers), Figure 2 (the oracle experiment), calibration
(z2 and coverage by horizon, PIT)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: files only, also on machines without a display

import matplotlib.pyplot as plt
import pyarrow as pa

from proforma.app.report.data import Run, Submission, figure_marker
from proforma.app.report.render import save_figure
from proforma.app.report.tables import footprint_label

HORIZONS = list(range(1, 21))


def _series(run: Run, sid: int, metric: str) -> list[float]:
    out = []
    for h in HORIZONS:
        v = run.metric(sid, metric, "horizon", h)
        out.append(math.nan if v is None else v)
    return out


def _colors(names: list[str]) -> dict[str, Any]:
    """One colour per model on every panel and figure."""
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(dict.fromkeys(names))}


def figure1(
    folder: Path,
    runs: list[Run],
    subs: dict[int, Submission],
    refs: dict[int, Submission | None],
    comps: dict[int, Submission | None],
) -> tuple[list[Path], list[dict[str, Any]]]:
    """R2 by horizon, one panel per footprint; markers atop each panel: DM at 5% of the
    reference against the panel's comparator (* reference better, † comparator better)."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(7.5, 2.7 * len(runs) + 0.8), squeeze=False)
    shown = {
        r.score_run_id: [s for s in r.submission_ids if s in subs and not subs[s].is_auxiliary]
        for r in runs
    }
    colors = _colors([subs[s].name for r in runs for s in shown[r.score_run_id]])
    data = []
    for ax, run, letter in zip(axes[:, 0], runs, "abcdefghij"):
        ref, comp = refs.get(run.score_run_id), comps.get(run.score_run_id)
        for sid in shown[run.score_run_id]:
            y = _series(run, sid, "r2")
            is_ref = ref is not None and sid == ref.submission_id
            strong = is_ref or (comp is not None and sid == comp.submission_id)
            ax.plot(
                HORIZONS,
                y,
                marker="o" if strong else None,
                markersize=3,
                linewidth=2.4 if is_ref else 1.1,
                alpha=1.0 if strong else 0.6,
                color=colors[subs[sid].name],
                label=subs[sid].name,
            )
            data += [
                {"footprint": run.footprint, "model": subs[sid].name, "horizon": h, "r2": v}
                for h, v in zip(HORIZONS, y)
            ]
        title = f"({letter}) {footprint_label(run)}"
        if ref is not None and comp is not None:
            title += f": {ref.name} vs {comp.name}"
            for h in HORIZONS:
                stat, p = run.compare(ref.submission_id, comp.submission_id, "squared", h)
                mark = figure_marker(stat, p)
                if mark:
                    ax.annotate(
                        mark,
                        (h, 1.0),
                        xycoords=("data", "axes fraction"),
                        ha="center",
                        va="bottom",
                        fontsize=9,
                        color="tab:red" if mark == "†" else "black",
                    )
                data.append(
                    {
                        "footprint": run.footprint,
                        "model": f"DM {ref.name} vs {comp.name}",
                        "horizon": h,
                        "dm_stat": stat,
                        "p_value": p,
                        "mark": mark,
                    }
                )
        ax.set_title(title, fontsize=9, loc="left", pad=12)
        ax.axhline(0, color="grey", linewidth=0.6)
        ax.set_xticks([1, 4, 8, 12, 16, 20])
        ax.set_ylabel("R² (changes)")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("horizon (quarters)")
    handles = [plt.Line2D([], [], color=c, label=n) for n, c in colors.items()]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, (0.25 + 0.18 * ((len(colors) + 2) // 3)) / fig.get_figheight(), 1, 1))
    return save_figure(fig, folder, "figure1_r2_by_horizon"), data


def figure2(folder: Path, breakdown: pa.Table, item: str) -> list[Path]:
    """Change in MAE (a) and R2 (b) by horizon from pinning the realized `item` path,
    overall and by statement class."""
    rows = breakdown.to_pylist()
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    for stmt in ["all", *sorted({r["statement"] for r in rows} - {"all"})]:
        sel = sorted((r for r in rows if r["statement"] == stmt), key=lambda r: r["horizon"])
        hs = [r["horizon"] for r in sel]
        style = {"linewidth": 2.2, "color": "black"} if stmt == "all" else {"linewidth": 1.2}
        a.plot(hs, [r["d_mae"] for r in sel], label=stmt, **style)
        b.plot(hs, [100 * r["d_r2"] for r in sel], label=stmt, **style)
    a.set_title(f"(a) ΔMAE, pinned {item} path", fontsize=9, loc="left")
    b.set_title(f"(b) ΔR² (pp), pinned {item} path", fontsize=9, loc="left")
    for ax in (a, b):
        ax.axhline(0, color="grey", linewidth=0.6)
        ax.set_xticks([1, 4, 8, 12, 16, 20])
        ax.set_xlabel("horizon (quarters)")
        ax.grid(alpha=0.3)
    b.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return save_figure(fig, folder, "figure2_oracle_scenario")


def calibration(
    folder: Path, run: Run, subs: dict[int, Submission], pit: dict[int, list[float]]
) -> list[Path]:
    """(a) z2 by horizon, (b) 50% and 90% coverage by horizon, (c) PIT histograms."""
    dens = [s for s in run.submission_ids if s in subs and subs[s].has_sigma]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(11, 3.3))
    colors = _colors(
        [subs[s].name for s in run.submission_ids if s in subs and not subs[s].is_auxiliary]
    )
    for sid in dens:
        name = subs[sid].name
        (line,) = a.plot(HORIZONS, _series(run, sid, "z2"), label=name, color=colors.get(name))
        b.plot(HORIZONS, _series(run, sid, "cov50"), color=line.get_color(), label=f"{name} 50%")
        b.plot(HORIZONS, _series(run, sid, "cov90"), color=line.get_color(), linestyle="--")
        shares = pit.get(sid)
        if shares:
            n = len(shares)
            c.step(
                [i / n for i in range(n + 1)],
                [shares[0] * n] + [s * n for s in shares],
                where="pre",
                color=line.get_color(),
                label=name,
            )
    a.axhline(1, color="grey", linewidth=0.8)
    b.axhline(0.5, color="grey", linewidth=0.8)
    b.axhline(0.9, color="grey", linewidth=0.8, linestyle="--")
    c.axhline(1, color="grey", linewidth=0.8)
    a.set_title("(a) z² by horizon (1 = calibrated)", fontsize=9, loc="left")
    b.set_title("(b) coverage by horizon: 50% solid, 90% dashed", fontsize=9, loc="left")
    c.set_title(f"(c) PIT histogram, {footprint_label(run)}", fontsize=9, loc="left")
    for ax in (a, b):
        ax.set_xlabel("horizon (quarters)")
        ax.set_xticks([1, 4, 8, 12, 16, 20])
        ax.grid(alpha=0.3)
    c.set_xlabel("PIT")
    c.set_ylabel("density")
    a.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return save_figure(fig, folder, "calibration")
