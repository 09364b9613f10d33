"""Helpers for the service tests: the tiny panel, an API client with tokens, submission files."""

from __future__ import annotations

import importlib.util
import io
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from fastapi import FastAPI
from fastapi.testclient import TestClient

from proforma.app.api.auth import add_user
from proforma.app.flows.warehouse import prepare
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, connect

_FIXTURES = Path(__file__).resolve().parents[1] / "eval" / "scoring_fixtures.py"


def _scoring_fixtures() -> Any:
    """The scoring tests' hand-made panel (docs/contracts.md columns), shared, not copied."""
    spec = importlib.util.spec_from_file_location("scoring_fixtures_for_api", _FIXTURES)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_panel_warehouse(settings: Settings, n_firms: int = 6) -> None:
    """Migrate the warehouse and write the tiny panel into it (then release the file)."""
    wh = connect(settings)
    try:
        prepare(wh)
        _scoring_fixtures().make_panel(wh, n_firms=n_firms, seed=3)
    finally:
        wh.close()


class Api:
    """A running app with an admin and a user token."""

    def __init__(self, client: TestClient):
        self.client = client
        wh = self.wh
        _, self.admin_token = add_user(wh, "admin", admin=True)
        _, self.token = add_user(wh, "alice")
        wh.close()
        # The server starts before its first publication (the worker's first task).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if client.get("/api/v1/health").json()["snapshot"]["status"] != "missing":
                break
            time.sleep(0.05)

    @property
    def wh(self) -> Warehouse:
        app = self.client.app
        assert isinstance(app, FastAPI)
        return app.state.wh.cursor()

    def auth(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}

    def upload(self, data: bytes, token: str | None = None, **fields: str) -> Any:
        form = {
            "name": "model-a",
            "training_cutoff": "2009Q4",
            "leakage_statement": "none",
            **fields,
        }
        return self.client.post(
            "/api/v1/submissions",
            headers=self.auth(token),
            data=form,
            files={"file": ("forecast.parquet", data, "application/octet-stream")},
        )

    def wait(self, job_id: int, timeout: float = 60.0, token: str | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.client.get(f"/api/v1/jobs/{job_id}", headers=self.auth(token)).json()
            if job["status"] in ("done", "failed"):
                return job
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not finish in {timeout} s: {job}")


def submission_bytes(
    wh: Warehouse,
    *,
    noise: float = 0.3,
    seed: int = 0,
    sigma: bool = True,
    limit: int | None = None,
    mutate: dict[str, Any] | None = None,
) -> bytes:
    """A valid submission parquet built from the panel's test cells (baseline + noise)."""
    cells = wh.arrow(
        """
        SELECT f.gvkey AS firm, i.item AS target, qlabel(t.origin_q) AS origin,
               CAST(t.horizon AS INTEGER) AS horizon, t.baseline, t.actual
        FROM panel.truth t JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id)
        WHERE t.split = 'test' ORDER BY 1, 2, 3, 4
        """
    )
    if limit is not None:
        cells = cells.slice(0, limit)
    rng = np.random.default_rng(seed)
    n = cells.num_rows
    base = np.asarray(cells["baseline"].to_numpy(zero_copy_only=False), float)
    actual = np.asarray(cells["actual"].to_numpy(zero_copy_only=False), float)
    pred = base + 0.5 * (actual - base) + rng.normal(0, noise, n)
    columns: dict[str, Any] = {
        "firm": cells["firm"],
        "target": cells["target"],
        "origin": cells["origin"],
        "horizon": cells["horizon"],
        "prediction": pa.array(pred),
    }
    if sigma:
        columns["sigma"] = pa.array(np.full(n, 0.5 + noise))
    for key, value in (mutate or {}).items():
        if value is None:
            columns.pop(key, None)
        else:
            columns[key] = value
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()
