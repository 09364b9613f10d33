"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proforma.app.flows.warehouse import prepare
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import Warehouse, connect


def temp_settings(folder: Path, warehouse: str = "wh.duckdb", **overrides: Any) -> Settings:
    """Settings with every path inside `folder` and a test's small resources (1 GB, 2
    threads); the one place tests build a Settings of their own (session-scoped panels
    made once, warehouses beside the `settings` fixture's). `overrides` sets any field."""
    fields: dict[str, Any] = {
        "warehouse": folder / warehouse,
        "temp_directory": folder / "tmp",
        "cache_dir": folder / "cache",
        "memory_limit": "1GB",
        "threads": 2,
    }
    return Settings(**{**fields, **overrides})


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """Settings pointing every path into a temporary folder (also for CLI runs)."""
    monkeypatch.setenv("PROFORMA_WAREHOUSE", str(tmp_path / "warehouse.duckdb"))
    monkeypatch.setenv("PROFORMA_TEMP_DIRECTORY", str(tmp_path / "tmp"))
    monkeypatch.setenv("PROFORMA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("PROFORMA_MEMORY_LIMIT", "2GB")
    monkeypatch.setenv("PROFORMA_THREADS", "2")
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


@pytest.fixture
def wh(settings: Settings) -> Iterator[Warehouse]:
    """A fresh, migrated warehouse file with reference tables loaded."""
    w = connect(settings)
    prepare(w)
    yield w
    w.close()


def _torch_state() -> dict[str, Any] | None:
    """PyTorch's process-wide settings a test could leave changed (None before any test
    imported PyTorch)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return None
    from proforma.models.numerics import _BACKEND_SWITCHES, _switch

    state: dict[str, Any] = {
        "threads": torch.get_num_threads(),
        "default dtype": torch.get_default_dtype(),
        "grad enabled": torch.is_grad_enabled(),
        "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
        "mha fast path": torch.backends.mha.get_fastpath_enabled(),
    }
    try:
        state["float32 matmul precision"] = torch.get_float32_matmul_precision()
    except RuntimeError as exc:  # the legacy and per-backend APIs were mixed
        state["float32 matmul precision"] = f"unreadable ({exc})"
    for path in _BACKEND_SWITCHES:
        found = _switch(torch, path)
        if found is not None:
            state["torch.backends." + ".".join(path)] = getattr(*found)
    return state


def _put_back(torch: Any, before: dict[str, Any]) -> None:
    from proforma.models.numerics import _BACKEND_SWITCHES, _restore

    torch.set_num_threads(before["threads"])
    torch.set_default_dtype(before["default dtype"])
    torch.set_grad_enabled(before["grad enabled"])
    torch.use_deterministic_algorithms(before["deterministic algorithms"])
    torch.backends.mha.set_fastpath_enabled(before["mha fast path"])
    if not str(before["float32 matmul precision"]).startswith("unreadable"):
        torch.set_float32_matmul_precision(before["float32 matmul precision"])
    _restore(
        torch,
        {
            p: before["torch.backends." + ".".join(p)]
            for p in _BACKEND_SWITCHES
            if "torch.backends." + ".".join(p) in before
        },
    )


def _blas_threads() -> dict[str, int] | None:
    """The threads of each BLAS library loaded (None until threadpoolctl is imported: only
    code that imports it limits them, models.numerics.one_blas_thread)."""
    import sys

    threadpoolctl = sys.modules.get("threadpoolctl")
    if threadpoolctl is None:
        return None
    return {
        str(lib["filepath"]): int(lib["num_threads"])
        for lib in threadpoolctl.threadpool_info()
        if lib["user_api"] == "blas"
    }


@pytest.fixture(autouse=True)
def _no_process_state_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails the test that leaves PyTorch's process-wide settings (threads, float32 matmul
    precision, default dtype, grad mode, ...) or the BLAS libraries' threads changed, and
    puts PyTorch's back, so that what one test sets never decides another's numbers or
    speed: the suite passes in any order."""
    import sys

    blas = _blas_threads()
    before = _torch_state()
    yield
    blas_after = _blas_threads()
    if blas is not None and blas_after is not None:
        left = [(p, n, blas_after[p]) for p, n in blas.items() if blas_after.get(p, n) != n]
        if left:
            pytest.fail(
                f"{request.node.nodeid} left BLAS threads changed: "
                + "; ".join(f"{p} {b} -> {a}" for p, b, a in left)
                + " (use proforma.models.numerics.one_blas_thread as a context)",
                pytrace=False,
            )
    after = _torch_state()
    if after is None:
        return
    if before is None:  # the test imported PyTorch: compare with a fresh import's state
        before = _FRESH_TORCH_STATE.setdefault("state", _fresh_state(after))
    changed = {k: (before[k], after[k]) for k in before if after.get(k) != before[k]}
    if changed:
        _put_back(sys.modules["torch"], before)
        pytest.fail(
            f"{request.node.nodeid} left PyTorch's process state changed: "
            + "; ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in changed.items())
            + " (use proforma.models.numerics' contexts, or restore it in the test)",
            pytrace=False,
        )


_FRESH_TORCH_STATE: dict[str, dict[str, Any]] = {}


def _fresh_state(after: dict[str, Any]) -> dict[str, Any]:
    """The settings PyTorch starts with in a new process of this machine (read in a child
    process once: the test that first imported PyTorch may already have changed them)."""
    import json
    import subprocess
    import sys

    code = (
        "import json, torch; from tests.conftest import _torch_state; "
        "s = _torch_state(); s['default dtype'] = str(s['default dtype']); print(json.dumps(s))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout
    state = json.loads(out)
    import torch

    state["default dtype"] = getattr(torch, state["default dtype"].removeprefix("torch."))
    return state
