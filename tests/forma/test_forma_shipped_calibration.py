"""The shipped interval calibration (issue 48, item 5): recorded under the checkpoint
files' SHA-256, the family and the held-out windows' signature, taken back only under
exactly that key, replaced when shipped again."""

from __future__ import annotations

from pathlib import Path

import pytest

from proforma.app.flows import forma as flows


class _Windows:
    def __init__(self, signature: str):
        self.signature = signature

    def data_signature(self) -> str:
        return self.signature


def test_a_calibration_is_taken_back_under_its_own_key_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flows, "SHIPPED_DIR", tmp_path)
    ckpt = tmp_path / "mid-gaussian-seed60.pt"
    ckpt.write_bytes(b"weights")
    ckpts = [(ckpt, {"seed": 60})]
    key = flows.calibration_key(ckpts, "gaussian", _Windows("abc"))
    assert flows.shipped_calibration(key) is None  # nothing shipped yet
    result = {"scale_by_horizon": [1.1] * 20, "origins": 7}
    flows.ship_calibration(key, result)
    assert flows.shipped_calibration(key) == result
    # other windows, another family or other weights: not this calibration
    assert (
        flows.shipped_calibration(flows.calibration_key(ckpts, "gaussian", _Windows("x"))) is None
    )
    assert (
        flows.shipped_calibration(flows.calibration_key(ckpts, "laplace", _Windows("abc"))) is None
    )
    ckpt.write_bytes(b"other weights")
    assert (
        flows.shipped_calibration(flows.calibration_key(ckpts, "gaussian", _Windows("abc"))) is None
    )
    # shipped again under the same key: replaced, not added
    flows.ship_calibration(key, {**result, "origins": 8})
    again = flows.shipped_calibration(key)
    assert again is not None and again["origins"] == 8
    import json

    assert len(json.loads((tmp_path / flows.SHIPPED_CALIBRATION).read_text())["entries"]) == 1
