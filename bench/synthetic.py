"""Generation time and peak memory of the synthetic panel at demo and full scale.

    .venv/bin/python bench/synthetic.py            # demo and full
    .venv/bin/python bench/synthetic.py demo       # one scale

Each scale runs in its own process (clean peak RSS). "generate" consumes every table
the source produces (raw.fundq batches, company_industry, ccm_link, oracle paths)
without a database; "ingest" writes them into a fresh DuckDB warehouse file through
proforma.app.sources.ingest (one transaction), as `proforma ingest synthetic` does.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(scale: str, mode: str) -> dict:
    import pyarrow as pa

    from proforma.app.sources.synthetic import SyntheticConfig, SyntheticSource

    cfg = SyntheticConfig.for_scale(scale)
    source = SyntheticSource(cfg)
    t0 = time.perf_counter()
    if mode == "generate":
        raw = source.tables()
        rows = {"fundq": sum(b.num_rows for b in raw.fundq)}
        t_hist = time.perf_counter() - t0
        assert isinstance(raw.company_industry, pa.Table) and isinstance(raw.ccm_link, pa.Table)
        rows["company_industry"] = raw.company_industry.num_rows
        rows["ccm_link"] = raw.ccm_link.num_rows
        for name, (_, data) in raw.extras.items():
            batches = (
                data
                if isinstance(data, pa.RecordBatchReader)
                else (data.to_batches() if isinstance(data, pa.Table) else data)
            )
            rows[name] = sum(b.num_rows for b in batches)
        seconds = time.perf_counter() - t0
        extra = {"history_seconds": round(t_hist, 2)}
    else:
        from proforma.app.flows.warehouse import prepare
        from proforma.app.sources import ingest
        from proforma.app.store.settings import Settings
        from proforma.app.store.warehouse import connect

        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings(
                warehouse=Path(tmp) / "w.duckdb",
                temp_directory=Path(tmp) / "t",
                threads=int(os.environ.get("PROFORMA_THREADS", "2")),
            )
            wh = connect(settings)
            prepare(wh)
            t0 = time.perf_counter()
            result = ingest(wh, source)
            seconds = time.perf_counter() - t0
            rows = result.rows
            extra = {"warehouse_mib": round((Path(tmp) / "w.duckdb").stat().st_size / 2**20, 1)}
            wh.close()
    return {
        "scale": scale,
        "mode": mode,
        "firms": cfg.firms,
        "seconds": round(seconds, 2),
        "peak_rss_mib": round(_peak_mib(), 1),
        "rows": rows,
        **extra,
    }


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(run_one(sys.argv[2], sys.argv[3])))
        return
    scales = sys.argv[1:] or ["demo", "full"]
    print(f"synthetic panel benchmark on {os.cpu_count()} CPU(s)")
    for scale in scales:
        for mode in ("generate", "ingest"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", scale, mode],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows = ", ".join(f"{k} {v:,}" for k, v in r["rows"].items())
            more = {k: v for k, v in r.items() if k in ("history_seconds", "warehouse_mib")}
            print(
                f"{scale:>4} {mode:<8} firms {r['firms']:>6,}: {r['seconds']:7.2f} s, "
                f"peak RSS {r['peak_rss_mib']:8.1f} MiB  {more}  [{rows}]",
                flush=True,
            )


if __name__ == "__main__":
    main()
