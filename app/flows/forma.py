"""Forma's flows: load the tuple windows, train seeds, forecast a split, and the shipped
checkpoint of the default synthetic panel (docs/forma.md, "Shipped checkpoint").

The CLI (app/cli/forma.py) parses arguments and prints; everything here takes plain
values, reports progress through `log`, and returns a summary. Models never open the
database: this layer reads `proforma.app.model_inputs.views.tuple_windows` as Arrow and writes forecasts
through `proforma.app.scoring.ingest_forecasts`.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import Warehouse, connect
from proforma.contracts import ROOT
from proforma.contracts.errors import UserError
from proforma.models.numerics import numerics_record, torch_threads

Log = Callable[[str], None]
#: Checkpoints that ship with the package (package data), trained by the command in
#: docs/forma.md.
SHIPPED_DIR = ROOT / "models" / "forma" / "checkpoints"


def _quiet(_: str) -> None:
    return None


# -- places --------------------------------------------------------------------------
def run_dir(preset: str, family: str) -> Path:
    return get_settings().models_dir / "forma" / f"{preset}-{family}"


def checkpoint_path(preset: str, family: str, seed: int) -> Path:
    return run_dir(preset, family) / f"seed{seed}.pt"


def kept_path(preset: str, family: str, seed: int, epoch: int) -> Path:
    """The copy of a seed's checkpoint taken after `epoch` (train(..., keep_epochs=))."""
    return run_dir(preset, family) / f"seed{seed}.epoch{epoch}.pt"


def shipped_path(preset: str, family: str, seed: int) -> Path:
    return SHIPPED_DIR / f"{preset}-{family}-seed{seed}.pt"


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError("--device cuda asked for, but PyTorch sees no CUDA device")
    return device


# -- reading the panel ---------------------------------------------------------------
def read_only() -> Warehouse:
    return connect(read_only=get_settings().warehouse.exists())


@contextlib.contextmanager
def writer() -> Iterator[Warehouse]:
    """The warehouse opened for writing, migrated and with current reference data."""
    from proforma.app.store.migrations import migrate
    from proforma.app.store.reference import load_reference

    wh = connect()
    try:
        migrate(wh)
        load_reference(wh)
        yield wh
    finally:
        wh.close()


def require_panel(wh: Warehouse) -> None:
    if not wh.table_exists("panel.origins"):
        raise UserError("The panel is not built. Run `proforma build` first.")


def _views():
    try:
        from proforma.app.model_inputs import views
    except ImportError as exc:
        raise UserError(
            "proforma.app.model_inputs.views is missing: the panel build (issue 'build') is not installed"
        ) from exc
    return views


def tuple_reader(
    wh: Warehouse, split: str, batch_size: int = 2048, future: bool = True, **filters
) -> pa.RecordBatchReader:
    """proforma.app.model_inputs.views.tuple_windows, passing firm/origin filters when the view supports them."""
    fn = _views().tuple_windows
    accepted = inspect.signature(fn).parameters
    kwargs = {k: v for k, v in filters.items() if k in accepted}
    reader = fn(wh, split, batch_size, future=future, **kwargs)
    rest = {k: v for k, v in filters.items() if k not in accepted}
    if not rest:
        return reader
    return pa.RecordBatchReader.from_batches(reader.schema, _filtered(reader, rest))


def _filtered(reader: pa.RecordBatchReader, filters: dict) -> Iterator[pa.RecordBatch]:
    import pyarrow.compute as pc

    for batch in reader:
        mask = None
        for col, val in filters.items():
            m = pc.equal(batch.column(col), pa.scalar(val, batch.schema.field(col).type))
            mask = m if mask is None else pc.and_(mask, m)
        out = batch.filter(mask)
        if out.num_rows:
            yield out


def identities_table(wh: Warehouse) -> pa.Table:
    return wh.arrow("SELECT identity, item_id, sign FROM ref.identities ORDER BY identity, item_id")


def load_store(wh: Warehouse, splits: list[str], future: bool, **filters):
    from proforma.models.forma.batching import WindowStore

    require_panel(wh)
    # 1,000 origins per SQL chunk: the sorted long rows of 5,000 (the view's default) held
    # the demo's test load at 1.6 GB peak; 1,000 take 0.8 GB and no longer
    filters.setdefault("chunk_origins", 1000)
    readers = [tuple_reader(wh, s, future=future, **filters) for s in splits]
    return WindowStore.from_batches(itertools.chain.from_iterable(readers))


def hold_out_for_calibration(store, n: int) -> tuple[Any, dict[str, list[int]]]:
    """(the training windows, the held-out origins' keys): n seeded validation origins
    leave training so the predictions can calibrate their intervals on them
    (models/forma/calibration.py); the keys go into every checkpoint."""
    from proforma.models.forma.calibration import holdout

    if n <= 0:
        return store, {}
    keep, held = holdout(store, n)
    keys = {
        "firm_id": store.firm_id[held].astype(int).tolist(),
        "origin_q": store.origin_q[held].astype(int).tolist(),
    }
    return store.take(keep), keys


def panel_signature(store) -> str:
    """The training windows' data signature (WindowStore.data_signature): what a shipped
    checkpoint must match to be installed."""
    return store.data_signature()


def load_models(preset: str, family: str, seeds: list[int], device: str):
    from proforma.models.forma.train import load_checkpoint

    models, ckpts = [], []
    for s in seeds:
        path = checkpoint_path(preset, family, s)
        model, ck = load_checkpoint(path, device)
        if not ck.get("complete"):
            raise UserError(
                f"{path} stopped after epoch {ck['epoch']}; finish it with "
                f"`proforma train forma --preset {preset} --seeds {s} --resume`"
            )
        models.append(model)
        ckpts.append((path, ck))
    return models, ckpts


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


# -- train ---------------------------------------------------------------------------
@dataclass
class TrainReport:
    preset: str
    family: str
    origins: int
    signature: str
    seconds: float
    checkpoints: dict[int, Path] = field(default_factory=dict)
    final_losses: dict[int, float] = field(default_factory=dict)
    shipped: list[int] = field(default_factory=list)  # seeds taken from a shipped checkpoint


def _fit_in_processes(
    one_seed: Callable[..., tuple[float, int]], seeds: list[int], jobs: int, threads: int
) -> dict[int, tuple[float, int]]:
    """Run one_seed(seed) for every seed in forked processes, `jobs` at a time. Forked, so
    the windows already in memory are shared, not copied or pickled."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    queue = ctx.Queue()

    def child(s: int) -> None:
        import torch

        torch.set_num_threads(threads)
        try:
            queue.put((s, one_seed(s, progress=False), None))
        except BaseException as exc:  # noqa: BLE001 - reported by the parent
            queue.put((s, None, f"{type(exc).__name__}: {exc}"))

    results: dict[int, tuple[float, int]] = {}
    pending = list(seeds)
    while pending:
        batch, pending = pending[:jobs], pending[jobs:]
        procs = [ctx.Process(target=child, args=(s,)) for s in batch]
        for p in procs:
            p.start()
        errors = []
        for _ in procs:
            s, result, error = queue.get()
            if error:
                errors.append(f"seed {s}: {error}")
            else:
                results[s] = result
        for p in procs:
            p.join()
        if errors:
            raise UserError("Forma training failed: " + "; ".join(errors))
    return results


def _load_checkpoint_meta(path: Path) -> dict[str, Any]:
    """A checkpoint's contents (read once per check: panel signature, config, seed)."""
    import torch

    return torch.load(path, map_location="cpu", weights_only=False)


def _same_setup(ck: dict[str, Any], cfg: object, seed: int) -> bool:
    """Whether a checkpoint was trained with this configuration and seed (a preset that
    changed since, or other overrides, make its weights another model's)."""
    from proforma.models.forma.presets import FormaConfig

    return FormaConfig.from_dict(ck["config"]) == cfg and ck.get("seed") == seed


def install_shipped(preset: str, family: str, seed: int, signature: str, log: Log = _quiet) -> bool:
    """Copy the repository's checkpoint for (preset, family, seed) into the models folder
    when it was trained on a panel with this signature; False (nothing copied) otherwise."""
    import torch

    src = shipped_path(preset, family, seed)
    if not src.exists():
        log(f"no shipped checkpoint {src.name}")
        return False
    meta = torch.load(src, map_location="cpu", weights_only=False)
    if meta.get("panel_signature") != signature:
        log(
            f"shipped checkpoint {src.name} was trained on panel {meta.get('panel_signature')}, "
            f"this panel is {signature}: not used"
        )
        return False
    dest = checkpoint_path(preset, family, seed)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    log(f"shipped checkpoint {src.name} matches this panel ({signature}) -> {dest}")
    return True


#: How a fresh clone's default panel is made, and how the shipped checkpoints are remade
#: on it (named by the guard test and docs/forma.md, "Shipped checkpoint").
DEFAULT_PANEL_COMMANDS = "proforma ingest synthetic --scale demo && proforma build"
RETRAIN_SHIPPED = "proforma train forma --preset mid --seeds 60,61 --jobs 2 --ship"
#: How the shipped calibration is remade after them (the demo's seed, and the mixture).
SHIP_CALIBRATION = (
    "proforma predict forma --preset mid --seeds 60 --ship-calibration && "
    "proforma predict forma --preset mid --seeds 60,61 --ship-calibration"
)


def shipped_checkpoint_problems(signature: str) -> list[str]:
    """Why each shipped checkpoint would not be installed on a panel with this signature,
    or trains another model than its preset now defines (empty: every one matches)."""
    from proforma.models.forma.presets import FormaConfig
    from proforma.models.forma.presets import preset as get_preset

    problems = []
    shipped = sorted(SHIPPED_DIR.glob("*.pt"))
    if not shipped:
        problems.append(f"no checkpoint is shipped in {SHIPPED_DIR}")
    for path in shipped:
        ck = _load_checkpoint_meta(path)
        trained_on = ck.get("panel_signature")
        if trained_on != signature:
            problems.append(
                f"{path.name} was trained on panel {trained_on}, the default panel is {signature}"
            )
        name = ck["config"]["name"]
        family = ck["config"].get("family", "gaussian")
        if FormaConfig.from_dict(ck["config"]) != get_preset(name, family=family):
            problems.append(f"{path.name} was trained with another configuration of `{name}`")
        if not ck.get("complete"):
            problems.append(f"{path.name} is not a finished run")
    return problems


#: How the shipped checkpoints were made (command, seeds, time, machine) and their files'
#: SHA-256: written by `train --ship`, checked by tests/forma/test_forma_shipped_guard.py.
TRAINING_RECORD = "training.json"


def _machine() -> dict[str, Any]:
    import os
    import platform

    model = ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    return {
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "system": platform.platform(),
    }


def write_training_record(
    shipped: dict[int, Path], command: str, seconds: float, cpu_seconds: float | None = None
) -> Path:
    """The record of the shipped checkpoints `shipped` ({seed: file}) beside them."""
    import json

    import torch

    seeds = {}
    for seed, path in sorted(shipped.items()):
        ck = _load_checkpoint_meta(path)
        seeds[str(seed)] = {
            "file": path.name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "preset": ck["config"]["name"],
            "family": ck["config"].get("family"),
            "panel_signature": ck.get("panel_signature"),
            "epochs": len(ck.get("history", [])),
            "final_loss": (ck.get("history") or [{}])[-1].get("loss"),
            "epoch_seconds": [h.get("seconds") for h in ck.get("history", [])],
            "numerics": ck.get("numerics"),
            "saved_at": ck.get("saved_at"),
        }
    record = {
        "command": command,
        "wall_seconds": round(seconds, 1),
        "cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 1),
        "machine": _machine(),
        "torch": torch.__version__,
        "seeds": seeds,
    }
    out = SHIPPED_DIR / TRAINING_RECORD
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return out


def ship_checkpoint(path: Path, dest: Path) -> Path:
    """The inference part of a finished checkpoint (no optimizer state), for the repository."""
    import torch

    from proforma.models.forma.train import inference_weights, save_checkpoint

    ck = torch.load(path, map_location="cpu", weights_only=False)
    if not ck.get("complete"):
        raise UserError(f"{path} is not finished; only a complete checkpoint ships")
    ck.pop("optimizer", None)
    ck["state_dict"] = inference_weights(ck)  # the averaged weights, when the run kept them
    ck["ema"] = None
    save_checkpoint(dest, ck)
    return dest


def train(
    preset: str,
    seeds: list[int],
    family: str = "gaussian",
    *,
    resume: bool = False,
    device: str = "auto",
    threads: int = 0,
    workers: int = 0,
    overrides: dict | None = None,
    use_shipped: bool = False,
    shipped_only: bool = False,
    ship: bool = False,
    jobs: int = 1,
    keep_epochs: tuple[int, ...] = (),
    log: Log = _quiet,
    command: str | None = None,
) -> TrainReport:
    """Train Forma seeds on the train + validation windows (each origin once). With
    `use_shipped`, a shipped checkpoint trained on this very panel is installed instead of
    training (`shipped_only`: installed if there is one, nothing trained otherwise); with `ship`, each finished checkpoint is also written to the repository.
    `jobs` > 1 trains that many seeds at once, each in its own process with `threads`
    (default 1) PyTorch threads: on a CPU, seeds side by side use the cores better than
    one seed's threads waiting on each other (the same weights either way). After each
    epoch in `keep_epochs` a copy of the checkpoint stays beside it as
    `seed{N}.epoch{E}.pt`: one run then gives a learning curve (bench/forma_curve.py
    --checkpoints). With `ship`, the record of the run (`command`, time, machine, the
    files' SHA-256) is written beside the shipped files (TRAINING_RECORD)."""
    from proforma.models.forma.presets import preset as get_preset

    cfg = get_preset(preset, family=family, **(overrides or {}))
    with torch_threads(threads):
        dev = resolve_device(device)
        t0 = time.perf_counter()
        store, ids, held_out, report = _training_windows(cfg, family, dev, log)
        todo = _seeds_to_train(
            preset,
            family,
            seeds,
            cfg,
            report.signature,
            report,
            resume=resume,
            use_shipped=use_shipped,
            shipped_only=shipped_only,
            log=log,
        )
        extra = {"panel_signature": report.signature, "calibration_holdout": held_out}
        one_seed = _seed_fitter(
            store, ids, cfg, preset, family, dev, extra, resume, workers, keep_epochs, log
        )
        results = _fit_seeds(one_seed, todo, jobs, threads)
        shipped = _record_trained(preset, family, todo, results, report, ship=ship, log=log)
        report.seconds = time.perf_counter() - t0
        if shipped:
            _record_shipped(shipped, command, report.seconds, log)
        return report


def _training_windows(
    cfg: Any, family: str, dev: Any, log: Log
) -> tuple[Any, Any, dict, TrainReport]:
    """The train + validation windows (less the validation origins held out to calibrate,
    also returned), the firms' identities and the run's report, the run described in the
    log."""
    from proforma.models.forma.masking import Identities

    with read_only() as wh:
        store = load_store(wh, ["train", "val"], future=True)
        ids = Identities.from_arrow(identities_table(wh))
    signature = panel_signature(store)
    report = TrainReport(cfg.name, family, len(store), signature, 0.0)
    store, held_out = hold_out_for_calibration(store, cfg.calibration_origins)
    log(
        f"forma: {len(store):,} train+val origins, {len(store.rel_q):,} tuples, panel {signature}; "
        f"preset {cfg.name}, {cfg.epochs} epochs x {cfg.origins_per_epoch or len(store):,} origins, "
        f"family {family}, device {dev}"
        + (f"; {len(held_out['firm_id']):,} val origins held out to calibrate" if held_out else "")
    )
    return store, ids, held_out, report


def _seed_fitter(
    store: Any,
    ids: Any,
    cfg: Any,
    preset: str,
    family: str,
    dev: Any,
    extra: dict[str, Any],
    resume: bool,
    workers: int,
    keep_epochs: tuple[int, ...],
    log: Log,
) -> Callable[..., tuple[float, int]]:
    """The function that trains one seed to its checkpoint (returning its final loss and
    parameter count), leaving a copy of the checkpoint after each epoch in `keep_epochs`."""
    from proforma.models.forma.train import fit

    def one_seed(s: int, progress: bool = True) -> tuple[float, int]:
        path = checkpoint_path(preset, family, s)

        def keep(row: dict, _model: object) -> None:
            if row["epoch"] in keep_epochs:
                shutil.copyfile(path, kept_path(preset, family, s, row["epoch"]))

        res = fit(
            store,
            ids,
            cfg,
            seed=s,
            checkpoint=checkpoint_path(preset, family, s),
            resume=resume,
            device=dev,
            log=log,
            workers=workers,
            extra=extra,
            progress=progress,
            on_epoch=keep if keep_epochs else None,
        )
        return res.final_loss, res.parameters

    return one_seed


def _fit_seeds(
    one_seed: Callable[..., tuple[float, int]], todo: list[int], jobs: int, threads: int
) -> dict[int, tuple[float, int]]:
    """Train the seeds to train: side by side in `jobs` processes when there are several,
    else one after the other here."""
    if jobs > 1 and len(todo) > 1:
        return _fit_in_processes(one_seed, todo, jobs, threads or 1)
    return {s: one_seed(s) for s in todo}


def _seeds_to_train(
    preset: str,
    family: str,
    seeds: list[int],
    cfg: Any,
    signature: str,
    report: TrainReport,
    *,
    resume: bool,
    use_shipped: bool,
    shipped_only: bool,
    log: Log,
) -> list[int]:
    """The seeds that train: a shipped checkpoint of this panel is installed instead
    (recorded in `report`) when asked for; an existing checkpoint is continued only with
    `resume`, and only when it was trained on this panel with this configuration."""
    todo = []
    for s in seeds:
        path = checkpoint_path(preset, family, s)
        if (use_shipped or shipped_only) and install_shipped(preset, family, s, signature, log):
            report.checkpoints[s], report.shipped = path, [*report.shipped, s]
            continue
        if shipped_only:
            log(f"seed {s}: no shipped checkpoint for this panel; not trained (--shipped-only)")
            continue
        if path.exists() and not resume:
            raise UserError(f"{path} exists; pass --resume to continue it or delete it to retrain")
        _start_afresh_if_foreign(path, preset, cfg, s, signature, log)
        todo.append(s)
    return todo


def _start_afresh_if_foreign(
    path: Path, preset: str, cfg: Any, seed: int, signature: str, log: Log
) -> None:
    """A checkpoint of another panel is deleted, one of another configuration set aside:
    the seed then trains from the start."""
    ck = _load_checkpoint_meta(path) if path.exists() else None
    trained_on = ck.get("panel_signature") if ck else None
    if ck and trained_on not in (None, signature):
        # continuing weights of another panel would mix two panels in one model
        log(f"{path} was trained on panel {trained_on}, this panel is {signature}: training afresh")
        path.unlink()
    elif ck and not _same_setup(ck, cfg, seed):
        # e.g. a models folder kept from before the preset changed: its weights belong
        # to another model, so they are set aside (not deleted: they may be someone's
        # long run with other options) and this one trains from the start
        aside = path.with_name(f"{path.stem}.other-config-{int(time.time())}.pt")
        path.rename(aside)
        log(
            f"{path} was trained with another configuration of preset {preset} (an "
            f"earlier version of it, or other options): kept as {aside.name}, "
            f"training afresh"
        )


def _record_trained(
    preset: str,
    family: str,
    todo: list[int],
    results: dict[int, tuple[float, int]],
    report: TrainReport,
    *,
    ship: bool,
    log: Log,
) -> dict[int, Path]:
    """The trained seeds into `report`; with `ship`, each copied to the shipped folder
    (returned: seed -> shipped file)."""
    shipped: dict[int, Path] = {}
    for s in todo:
        path = checkpoint_path(preset, family, s)
        loss, parameters = results[s]
        report.checkpoints[s], report.final_losses[s] = path, loss
        log(f"seed {s}: {parameters:,} parameters, final loss {loss:.4f} -> {path}")
        if ship:
            dest = ship_checkpoint(path, shipped_path(preset, family, s))
            shipped[s] = dest
            log(f"seed {s}: shipped as {dest} ({dest.stat().st_size / 1e6:.2f} MB)")
    return shipped


def _record_shipped(
    shipped: dict[int, Path], command: str | None, seconds: float, log: Log
) -> None:
    """The training record beside the shipped files: the command, its time and CPU
    (this process's and its children's), the machine."""
    import resource

    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)
    record = write_training_record(shipped, command or "", seconds, cpu)
    log(f"training record -> {record}")


# -- predict -------------------------------------------------------------------------
def release_memory() -> None:
    """Collect garbage and return glibc's free heap pages to the system."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    name = ctypes.util.find_library("c")
    if name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).malloc_trim(0)


@dataclass
class PredictReport:
    submission_id: int
    name: str
    origins: int
    seconds: float
    score_run_id: int | None = None
    board: list[dict] = field(default_factory=list)


#: The shipped checkpoints' interval calibrations (written by `predict forma
#: --ship-calibration`: ship_interval_calibration; read by every later forecast with the same weights on the same
#: held-out validation windows: the demo skips its single-threaded calibration pass).
SHIPPED_CALIBRATION = "calibration.json"


def calibration_key(ckpts, family: str, held_out: Any) -> dict[str, Any]:
    """What a calibration is a function of: the checkpoints' files, the family and the
    held-out validation windows (their data signature)."""
    return {
        "family": family,
        "checkpoints": {str(ck.get("seed")): file_sha(Path(p)) for p, ck in ckpts},
        "held_out": held_out.data_signature(),
    }


def shipped_calibration(key: dict[str, Any]) -> dict[str, Any] | None:
    """The shipped calibration made under exactly this key, if any."""
    import json

    path = SHIPPED_DIR / SHIPPED_CALIBRATION
    if not path.exists():
        return None
    for entry in json.loads(path.read_text(encoding="utf-8")).get("entries", []):
        if entry.get("key") == key:
            return dict(entry["result"])
    return None


def ship_calibration(key: dict[str, Any], result: dict[str, Any]) -> Path:
    """Record `result` under `key` beside the shipped checkpoints (replacing one of the
    same key)."""
    import json

    path = SHIPPED_DIR / SHIPPED_CALIBRATION
    entries = (
        json.loads(path.read_text(encoding="utf-8")).get("entries", []) if path.exists() else []
    )
    entries = [e for e in entries if e.get("key") != key] + [{"key": key, "result": result}]
    path.write_text(json.dumps({"entries": entries}, indent=2) + "\n", encoding="utf-8")
    return path


def held_out_windows(wh: Warehouse, held: dict[str, list[int]]) -> Any:
    """The validation windows a checkpoint held out of training (its calibration_holdout
    keys), with their futures."""
    keys = np.asarray(held["firm_id"], np.int64) * 100_000 + np.asarray(held["origin_q"], np.int64)
    val = load_store(wh, ["val"], future=True)
    have = val.firm_id.astype(np.int64) * 100_000 + val.origin_q
    rows = np.flatnonzero(np.isin(have, keys))
    if len(rows) != len(keys):
        raise UserError(
            f"{len(keys) - len(rows):,} of the {len(keys):,} held-out validation origins "
            "are not in this panel: the checkpoints were trained on another build; "
            "retrain, or pass --no-calibrate"
        )
    return val.take(rows)


def calibrate_intervals(
    wh: Warehouse,
    models,
    ckpts,
    family: str,
    device: str,
    batch_size: int,
    log: Log = _quiet,
    *,
    ship: bool = False,
) -> dict | None:
    """Per-horizon sigma factors from the validation origins the checkpoints held out of
    training, or None (with a line in the log) when they held none out. A calibration
    shipped for the same checkpoints and held-out windows is taken as it is; with `ship`,
    the one computed here is recorded beside the shipped checkpoints."""
    from proforma.models.forma.calibration import calibrate

    held = [ck.get("calibration_holdout") or {} for _, ck in ckpts]
    if not any(held):
        log("forma: no validation origins were held out of training; sigma as the head gives it")
        return None
    if any(h != held[0] for h in held[1:]):
        raise UserError(
            "The seeds held out different validation origins (trained with different "
            "calibration_origins or on another panel), so no origins are unseen by all of "
            "them: retrain them alike, or pass --no-calibrate"
        )
    truth = held_out_windows(wh, held[0])
    key = calibration_key(ckpts, family, truth)
    shipped = None if ship else shipped_calibration(key)
    if shipped is not None:
        log(
            f"forma: intervals calibrated as shipped with the checkpoints (the same weights, "
            f"the same {shipped['origins']:,} held-out validation origins: "
            f"models/forma/checkpoints/{SHIPPED_CALIBRATION}): sigma x "
            f"{min(shipped['scale_by_horizon']):.3f} to {max(shipped['scale_by_horizon']):.3f} "
            "by horizon"
        )
        return {**shipped, "applied": True, "shipped": True}
    t0 = time.perf_counter()
    result = calibrate(models, truth, family, batch_size=batch_size, device=device)
    scales = result["scale_by_horizon"]
    log(
        f"forma: intervals calibrated on {result['origins']:,} held-out validation origins "
        f"({result['firms']} firms, {result['cells']:,} cells) in {time.perf_counter() - t0:.0f}s: "
        f"coverage 50/80/90/95 "
        + " / ".join(f"{c:.3f}" for c in result["coverage_before"])
        + " -> "
        + " / ".join(f"{c:.3f}" for c in result["coverage_after"])
        + f"; sigma x {min(scales):.3f} to {max(scales):.3f} by horizon"
        + (
            f" (fitted {min(result['fitted_scale_by_horizon']):.3f} to "
            f"{max(result['fitted_scale_by_horizon']):.3f}; factors below 1 are not applied)"
            if result["widen_only"]
            else ""
        )
    )
    result["applied"] = True
    if ship:
        log(f"forma: calibration recorded in {ship_calibration(key, result)}")
    return result


def _forecast_part(
    checkpoints: list[str], part: str, out: str, batch_size: int, threads: int
) -> None:
    """One forecasting process (spawned): the seeds' checkpoints, one part of the
    origins (an .npz of WindowStore arrays), its forecast batches to an Arrow IPC file."""
    import torch

    from proforma.models import FORECAST_SCHEMA
    from proforma.models.forma.batching import WindowStore
    from proforma.models.forma.predict import predict as forecast
    from proforma.models.forma.train import load_checkpoint

    torch.set_num_threads(threads)
    models = [load_checkpoint(path, "cpu")[0] for path in checkpoints]
    with np.load(part, allow_pickle=True) as arrays:
        store = WindowStore(**{k: arrays[k] for k in arrays.files})
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_stream(sink, FORECAST_SCHEMA) as writer:
        for batch in forecast(models, store, batch_size=batch_size, device="cpu"):
            writer.write_batch(batch)


@dataclass
class ForecastProcesses:
    """Spawned forecasting processes at work (start_forecast_processes); `batches` waits
    for them and yields their forecasts part by part."""

    procs: list[Any]
    outs: list[Path]

    def batches(self) -> Iterator[pa.RecordBatch]:
        for proc in self.procs:
            proc.join()
        failed = [p.name for p in self.procs if p.exitcode != 0]
        if failed:
            raise UserError(
                f"Forma forecasting failed in process(es) {', '.join(failed)} (see the log "
                "above); run with --jobs 1 to see the error in this process"
            )
        for out in self.outs:
            with pa.OSFile(str(out), "rb") as source, pa.ipc.open_stream(source) as reader:
                yield from reader

    def stop(self) -> None:
        """End processes still at work (a caller that gives up on their forecasts)."""
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join()


def start_forecast_processes(
    checkpoints: list[Path],
    store: Any,
    *,
    jobs: int,
    threads: int = 1,
    batch_size: int = 0,
    folder: Path,
) -> ForecastProcesses:
    """Start `jobs` spawned processes of `threads` PyTorch threads each, forecasting
    contiguous parts of the origins of `store` into `folder`; returns at once. On a CPU,
    processes side by side keep the cores busy where one process's threads wait on each
    other (most of all on a machine shared with other work); spawned, not forked, so the
    parent's PyTorch and DuckDB threads are not copied into them. The processes never
    open the warehouse, so others may use it meanwhile."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    folder.mkdir(parents=True, exist_ok=True)
    parts = [idx for idx in np.array_split(np.arange(len(store)), jobs) if len(idx)]
    procs, outs = [], []
    for k, idx in enumerate(parts):
        piece = store.take(idx)
        part = folder / f"part{k}.npz"
        np.savez(part, **{f: getattr(piece, f) for f in piece.__dataclass_fields__})
        out = folder / f"part{k}.arrow"
        outs.append(out)
        procs.append(
            ctx.Process(
                target=_forecast_part,
                args=([str(c) for c in checkpoints], str(part), str(out), batch_size, threads),
                name=f"forma-forecast-{k}",
            )
        )
    for proc in procs:
        proc.start()
    return ForecastProcesses(procs, outs)


def ship_interval_calibration(
    preset: str,
    seeds: list[int],
    family: str = "gaussian",
    *,
    device: str = "auto",
    batch_size: int = 0,
    threads: int = 0,
    log: Log = _quiet,
) -> dict | None:
    """Calibrate the intervals of these checkpoints afresh on the validation windows they
    held out and record the result beside the shipped checkpoints (SHIPPED_CALIBRATION),
    where every later forecast with the same weights and windows takes it; no forecast."""
    with torch_threads(threads):
        dev = resolve_device(device)
        models, ckpts = load_models(preset, family, seeds, dev)
        with writer() as wh:
            return calibrate_intervals(wh, models, ckpts, family, dev, batch_size, log, ship=True)


def _forecast_metadata(
    preset: str,
    family: str,
    split: str,
    seeds: list[int],
    models: list[Any],
    ckpts: list[tuple[Path, dict]],
    device: str,
    calibration: dict[str, Any] | None,
    jobs: int,
) -> dict[str, Any]:
    """The submission's metadata: the preset, the seeds as components, the checkpoints'
    hashes, panels and configuration, the numerics, the calibration."""
    return {
        "model": "forma",
        "preset": preset,
        "family": family,
        "split": split,
        "seeds": seeds,
        "components": {str(k): s for k, s in enumerate(seeds)},
        "parameters": int(ckpts[0][1]["parameters"]),
        "checkpoints": {str(s): file_sha(p) for s, (p, _) in zip(seeds, ckpts)},
        "panel_signatures": {str(s): ck.get("panel_signature") for s, (_, ck) in zip(seeds, ckpts)},
        "config": ckpts[0][1]["config"],
        # what the forecasts' matmuls computed in on this machine (and the
        # checkpoints' own training record, seed by seed)
        "numerics": numerics_record(models[0].matmul_precision, device),
        "trained_numerics": {str(s): ck.get("numerics") for s, (_, ck) in zip(seeds, ckpts)},
        "calibration": calibration or {"applied": False},
        "forecast_processes": jobs if jobs > 1 and device == "cpu" else 1,
    }


@dataclass
class PendingForecast:
    """A split's forecasts, started (start_predict) and not yet stored (finish_predict).
    On a CPU with `jobs` > 1 the forecasting processes work meanwhile without the
    warehouse; otherwise the forecasts are made in this process when finished."""

    name: str
    family: str
    origins: int
    metadata: dict[str, Any]
    calibration: dict[str, Any] | None
    started: float
    threads: int
    batch_size: int
    device: str
    progress: bool
    #: the spawned processes and their spool folder (removed when finished)
    processes: ForecastProcesses | None = None
    spool: Any = None
    #: what this process forecasts with when there are no processes
    models: list[Any] = field(default_factory=list)
    store: Any = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The forecasts' batches, with a calibration their sigmas scaled by its factors
        per horizon."""
        from proforma.models.forma.calibration import scaled
        from proforma.models.forma.predict import predict as forecast

        if self.processes is not None:
            forecasts = self.processes.batches()
        else:
            forecasts = forecast(
                self.models,
                self.store,
                batch_size=self.batch_size,
                device=self.device,
                progress=self.progress,
            )
        if self.calibration:
            forecasts = scaled(forecasts, self.calibration["scale_by_horizon"])
        return forecasts

    def close(self) -> None:
        """Stop the processes if they still work and remove their spool."""
        if self.processes is not None:
            self.processes.stop()
        if self.spool is not None:
            self.spool.cleanup()
            self.spool = None
        self.models, self.store = [], None


def start_predict(
    preset: str,
    seeds: list[int],
    family: str = "gaussian",
    *,
    split: str = "test",
    name: str = "",
    device: str = "auto",
    batch_size: int = 0,
    calibrate: bool = True,
    threads: int = 0,
    jobs: int = 1,
    progress: bool = True,
    log: Log = _quiet,
) -> PendingForecast:
    """The first half of `predict`: the calibration, the split's windows and the
    submission's metadata read from the warehouse, which is closed again; on a CPU with
    `jobs` > 1 the forecasting processes started on them. The warehouse is free until
    finish_predict, so other work can use it while the processes forecast."""
    import tempfile

    from proforma.models.forma.predict import default_batch_size

    with torch_threads(threads):
        dev = resolve_device(device)
        batch_size = batch_size or default_batch_size(dev)
        models, ckpts = load_models(preset, family, seeds, dev)
        t0 = time.perf_counter()
        with writer() as wh:
            calibration = (
                calibrate_intervals(wh, models, ckpts, family, dev, batch_size, log)
                if calibrate
                else None
            )
            store = _split_windows(wh, split)
        metadata = {
            **_forecast_metadata(
                preset, family, split, seeds, models, ckpts, dev, calibration, jobs
            ),
            # the forecasts move with it at float32 rounding (padding differs)
            "batch_size": batch_size,
        }
        pending = PendingForecast(
            name or f"forma-{preset}-{family}",
            family,
            len(store),
            metadata,
            calibration,
            t0,
            threads,
            batch_size,
            dev,
            progress,
        )
        if not (jobs > 1 and dev == "cpu"):
            pending.models, pending.store = models, store
            return pending
        pending.spool = tempfile.TemporaryDirectory(prefix="forma-forecast-")
        try:
            pending.processes = start_forecast_processes(
                [p for p, _ in ckpts],
                store,
                jobs=jobs,
                threads=threads or 1,
                batch_size=batch_size,
                folder=Path(pending.spool.name),
            )
        except BaseException:
            pending.close()
            raise
        # the processes hold their parts: the windows and networks go back here
        del store, models, ckpts
        release_memory()
        return pending


def finish_predict(pending: PendingForecast, *, score: bool = True) -> PredictReport:
    """The second half of `predict`: the forecasts (waited for, or made here) written as
    one submission through the common forecast path and, with `score`, every current
    submission scored on the full footprint."""
    scoring = _scoring_package()
    try:
        with torch_threads(pending.threads), writer() as wh:
            # ingest_forecasts spools the generator in this thread: PyTorch never runs
            # inside DuckDB's scan threads.
            sub_id = scoring.ingest_forecasts(
                wh,
                pending.name,
                pending.batches(),
                family=pending.family,
                source="model",
                metadata=pending.metadata,
            )
            report = PredictReport(sub_id, pending.name, pending.origins, 0.0)
            # scoring runs DuckDB up to its memory limit in this same process: give the
            # windows, the networks and their freed heap back first, so the peak is the
            # larger of the two phases, not their sum
            pending.close()
            release_memory()
            if score:
                report.score_run_id = scoring.score(wh)
                report.board = scoring.leaderboard(wh, score_run_id=report.score_run_id).to_pylist()
    finally:
        pending.close()
    report.seconds = time.perf_counter() - pending.started
    return report


def predict(
    preset: str,
    seeds: list[int],
    family: str = "gaussian",
    *,
    split: str = "test",
    name: str = "",
    device: str = "auto",
    batch_size: int = 0,
    score: bool = True,
    calibrate: bool = True,
    threads: int = 0,
    jobs: int = 1,
    progress: bool = True,
    log: Log = _quiet,
) -> PredictReport:
    """Forecast every origin of a split (all future hidden, one pass), write the seeds as
    mixture components through the common forecast path and, with `score`, score every
    current submission on the full footprint. With `calibrate`, checkpoints that held
    validation origins out of training have their sigmas scaled per horizon so the
    mixture's central intervals cover those origins' realized cells at least nominally
    (models/forma/calibration.py); the factors go into the submission's metadata.
    `jobs` > 1 forecasts in that many processes of `threads` (default 1) threads each
    (start_forecast_processes): the same forecasts, the cores kept busy. `batch_size` 0
    takes the device's default (models/forma/predict.default_batch_size)."""
    pending = start_predict(
        preset,
        seeds,
        family,
        split=split,
        name=name,
        device=device,
        batch_size=batch_size,
        calibrate=calibrate,
        threads=threads,
        jobs=jobs,
        progress=progress,
        log=log,
    )
    return finish_predict(pending, score=score)


def _scoring_package() -> Any:
    """proforma.app.scoring, or a UserError saying it is not installed."""
    try:
        from proforma.app import scoring
    except ImportError as exc:
        raise UserError(
            "proforma.app.scoring is missing: scoring (issue 'scoring') is not installed"
        ) from exc
    return scoring


def _split_windows(wh: Warehouse, split: str) -> Any:
    """The windows of every origin of `split`, future hidden; a split without origins is
    refused."""
    store = load_store(wh, [split], future=False)
    if not len(store):
        raise UserError(f"No {split} origins in the panel")
    return store
