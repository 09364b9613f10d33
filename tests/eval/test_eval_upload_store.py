"""The upload store (issue 31): a validated point or single-family density upload is one
immutable, content-addressed parquet file, scanned in place for scoring and rescoring; no
row of it goes into a table. The same bytes reuse the file; a missing or damaged file is a clear
error for its submission alone; a new footprint is scored from the file without
re-upload, with the numbers of the table path."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scoring_fixtures import module_warehouse, upload_file

from proforma.app import scoring
from proforma.app.scoring.submissions.store import store_dir
from proforma.contracts.errors import NothingToScore


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "store")
    yield w
    w.close()


def _file(wh, path: Path, seed: int, *, component: bool = False, sigma: bool = False) -> Path:
    return upload_file(wh, path, seed, component=component, sigma=sigma)


def _record(wh, sid: int) -> tuple | None:
    rows = wh.fetchall(
        "SELECT file, rows, bytes FROM eval.submission_files WHERE submission_id = ?", [sid]
    )
    return tuple(rows[0]) if rows else None


def _stored(wh, sid: int) -> tuple:
    rec = _record(wh, sid)
    assert rec is not None, f"submission {sid} has no stored file"
    return rec


def test_the_same_bytes_reuse_one_file(wh, tmp_path):
    path = _file(wh, tmp_path / "a.parquet", 1)
    first = scoring.ingest_parquet(wh, path, "stored a")
    name, rows, size = _stored(wh, first)
    stored = store_dir(wh) / name
    assert stored.is_file() and stored.stat().st_size == size and rows > 1000
    assert name.startswith(
        wh.scalar("SELECT checksum FROM eval.submissions WHERE submission_id = ?", [first])
    )
    assert not wh.scalar(
        "SELECT count(*) FROM eval.forecast_points WHERE submission_id = ?", [first]
    )
    before = stored.stat().st_mtime_ns
    os.utime(stored, ns=(before - 10**9, before - 10**9))  # any rewrite would change it
    # (the module's other tests may have stored files of their own: compare the folder)
    files = sorted(p.name for p in store_dir(wh).iterdir())
    again = scoring.ingest_parquet(wh, path, "stored a again")
    assert _record(wh, again) == (name, rows, size)
    assert stored.stat().st_mtime_ns == before - 10**9
    assert sorted(p.name for p in store_dir(wh).iterdir()) == files  # nothing new, no temp
    # other bytes, another file
    other = scoring.ingest_parquet(wh, _file(wh, tmp_path / "b.parquet", 2), "stored b")
    assert _stored(wh, other)[0] != name


@pytest.mark.parametrize("sigma", [False, True])
def test_a_rejected_upload_leaves_nothing_in_the_store(wh, tmp_path, sigma):
    """The file is written as it is read and checked there (034); a rejected one is
    removed, and its problems are those the table path reports (030)."""
    from proforma.contracts.errors import ValidationError

    good = pq.read_table(_file(wh, tmp_path / "good.parquet", 7, sigma=sigma))
    before = sorted(p.name for p in store_dir(wh).iterdir()) if store_dir(wh).exists() else []
    repeated = pa.concat_tables([good, good.slice(10, 4)])  # 4 cells twice
    huge = good.set_column(4, "prediction", pa.array([75.0] + good["prediction"].to_pylist()[1:]))
    for bad, expected in ((repeated, "duplicate key"), (huge, "|prediction| > 60")):
        path = tmp_path / "bad.parquet"
        pq.write_table(bad, path)
        with pytest.raises(ValidationError) as info:
            scoring.ingest_parquet(wh, path, f"rejected {sigma}")
        found = [p for p in info.value.problems if p["problem"].startswith(expected)]
        assert found and found[0]["count"] == (4 if expected == "duplicate key" else 1)
        assert sorted(p.name for p in store_dir(wh).iterdir()) == before
    # and the table path (a component column: rows inserted, 030) reports the same count
    table_path = tmp_path / "bad_table.parquet"
    pq.write_table(
        repeated.append_column("component", pa.array([0] * repeated.num_rows)), table_path
    )
    with pytest.raises(ValidationError) as info:
        scoring.ingest_parquet(wh, table_path, f"rejected table {sigma}")
    assert [p["count"] for p in info.value.problems if p["problem"].startswith("duplicate")] == [4]


def test_a_new_footprint_scores_from_the_file_as_from_the_table(wh, tmp_path):
    """Rescoring on a new footprint reads the stored file, no re-upload; the numbers equal
    those of the same forecasts stored in the table (a component column keeps a file on
    the table path)."""
    path = tmp_path / "c.parquet"
    stored = scoring.ingest_parquet(wh, _file(wh, path, 3), "stored c")
    table = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "d.parquet", 3, component=True), "table c"
    )
    assert _record(wh, table) is None
    path.unlink()  # the upload itself is gone: the store keeps what scoring needs
    scoring.create_footprint(wh, "short_horizons", predicate="horizon <= 4")
    metrics = (
        "SELECT level, horizon, item_id, n, r2, mse, mae FROM eval.metrics "
        "WHERE score_run_id = ? AND submission_id = ? ORDER BY ALL"
    )
    for footprint in ("full", "short_horizons"):
        run = scoring.score(wh, footprint, [stored, table], coherence=False)
        got, want = wh.fetchall(metrics, [run, stored]), wh.fetchall(metrics, [run, table])
        assert len(got) == len(want) > 0
        for a, b in zip(got, want, strict=True):
            assert a[:4] == b[:4]
            assert a[4:] == pytest.approx(b[4:], rel=1e-12, abs=1e-15, nan_ok=True)


def test_an_upload_of_under_half_a_footprint_stores_no_gaps(wh, tmp_path):
    """As for forecasts in tables, an upload predicting under half of a footprint keeps no
    gaps (they would be most of the footprint's cells: some 10M at the demo scale, for an
    upload of a few firms); a run intersects its cells, with the numbers of the same
    forecasts in the table."""
    few = {}
    for name, component in (("few stored", False), ("few table", True)):
        path = _file(wh, tmp_path / f"{name}.parquet", 5, component=component)
        table = pq.read_table(path)
        part = table.filter(pa.compute.less_equal(table["horizon"], 4))
        pq.write_table(part, path)
        few[name] = scoring.ingest_parquet(wh, path, name)
    stored, table = few["few stored"], few["few table"]
    assert _record(wh, stored) is not None and _record(wh, table) is None
    run = scoring.score(wh, "full", [stored, table], coherence=False)
    fp = wh.scalar("SELECT footprint_id FROM eval.footprints WHERE name = 'full'")
    gaps_stored, predicted, cells = wh.one(
        "SELECT gaps_stored, predicted_cells, footprint_cells FROM eval.footprint_coverage "
        "WHERE footprint_id = ? AND submission_id = ?",
        [fp, stored],
    )
    assert not gaps_stored and 0 < predicted < cells / 2
    assert not wh.scalar("SELECT count(*) FROM eval.sample_gaps WHERE submission_id = ?", [stored])
    metrics = (
        "SELECT level, horizon, item_id, n, r2, mse, mae FROM eval.metrics "
        "WHERE score_run_id = ? AND submission_id = ? ORDER BY ALL"
    )
    got, want = wh.fetchall(metrics, [run, stored]), wh.fetchall(metrics, [run, table])
    assert len(got) == len(want) > 0 and got[0][3] == predicted
    for a, b in zip(got, want, strict=True):
        assert a[:4] == b[:4]
        assert a[4:] == pytest.approx(b[4:], rel=1e-12, abs=1e-15, nan_ok=True)


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_a_missing_or_damaged_file_fails_its_submission_alone(wh, tmp_path, damage):
    sid = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "e.parquet", 10 + len(damage)), f"e {damage}"
    )
    other = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "f.parquet", 20 + len(damage)), f"f {damage}"
    )
    stored = store_dir(wh) / _stored(wh, sid)[0]
    if damage == "deleted":
        stored.unlink()
    else:
        stored.write_bytes(stored.read_bytes()[: stored.stat().st_size // 2])
    lines: list[str] = []
    run = scoring.score(wh, "full", [sid, other], coherence=False, progress=lines.append)
    ids = wh.scalar("SELECT submission_ids FROM eval.score_runs WHERE score_run_id = ?", [run])
    assert ids == [other]
    failed = [line for line in lines if "FAILED" in line]
    assert len(failed) == 1 and str(stored) in failed[0]
    assert ("missing" if damage == "deleted" else "damaged") in failed[0]
    with pytest.raises(NothingToScore, match="stored upload"):
        scoring.score(wh, "full", [sid], coherence=False)


@pytest.mark.parametrize(
    ("family", "df"), [("gaussian", None), ("laplace", None), ("student_t", 5.0)]
)
def test_a_density_file_is_stored_and_scores_as_from_the_table(wh, tmp_path, family, df):
    """A single-family density file (a sigma, no component column) is kept in the store
    with its sigma, nothing of it in a table; its density scores on the full footprint and
    on a new one (no re-upload) equal those of the same forecasts in eval.forecast_rows."""
    path = tmp_path / "g.parquet"
    kw = {"family": family, "df": df}
    stored = scoring.ingest_parquet(wh, _file(wh, path, 30, sigma=True), f"{family} s", **kw)
    table = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "h.parquet", 30, sigma=True, component=True), f"{family} t", **kw
    )
    name, _, _ = _stored(wh, stored)
    assert _record(wh, table) is None
    assert pq.read_schema(store_dir(wh) / name).names == ["cell", "mu", "sigma"]
    assert not wh.scalar("SELECT count(*) FROM eval.forecasts WHERE submission_id = ?", [stored])
    assert wh.scalar("SELECT has_sigma FROM eval.submissions WHERE submission_id = ?", [stored])
    path.unlink()
    footprint = f"{family}_short"
    scoring.create_footprint(wh, footprint, predicate="horizon <= 3")
    metrics = (
        "SELECT * EXCLUDE (score_run_id, submission_id) FROM eval.metrics "
        "WHERE score_run_id = ? AND submission_id = ? ORDER BY ALL"
    )
    for fp in ("full", footprint):
        run = scoring.score(wh, fp, [stored, table], coherence=False)
        got, want = wh.fetchall(metrics, [run, stored]), wh.fetchall(metrics, [run, table])
        assert len(got) == len(want) > 0
        for a, b in zip(got, want, strict=True):
            assert [v for v in a if not isinstance(v, float)] == [
                v for v in b if not isinstance(v, float)
            ]
            fa = [v for v in a if isinstance(v, float)]
            fb = [v for v in b if isinstance(v, float)]
            assert fa == pytest.approx(fb, rel=1e-12, abs=1e-15, nan_ok=True)
    # the stored upload keeps no per-cell rows (its cells meet the truth by position);
    # its record counts the cells and density terms the table's rows hold
    counts = "SELECT count(*), count(u) FROM eval.cell_density_scores WHERE submission_id = ?"
    assert wh.fetchall(counts, [stored]) == [(0, 0)]
    record = "SELECT cells, density_cells FROM eval.cell_score_sets WHERE submission_id = ?"
    assert wh.fetchall(record, [stored]) == wh.fetchall(counts, [table])
    assert wh.scalar(counts, [table]) > 0


def test_a_footprint_frozen_from_a_stored_upload_holds_its_cells_and_ranks_it(wh, tmp_path):
    """A footprint frozen from an upload kept in the store (whose cells are in no table)
    holds exactly the cells it predicts, and a run on it ranks the upload on all of them,
    as for the same forecasts in a table (the compose check's path)."""
    full = pq.read_table(_file(wh, tmp_path / "p.parquet", 40))
    part = full.slice(0, full.num_rows // 3)  # a partial upload: a third of the cells
    pq.write_table(part, tmp_path / "part.parquet")
    stored = scoring.ingest_parquet(wh, tmp_path / "part.parquet", "partial s")
    pq.write_table(
        part.append_column("component", pa.array(np.zeros(part.num_rows, np.int64))),
        tmp_path / "part_t.parquet",
    )
    table = scoring.ingest_parquet(wh, tmp_path / "part_t.parquet", "partial t")
    assert _record(wh, stored) is not None and _record(wh, table) is None
    sizes = {}
    for sid, name in ((stored, "frozen_s"), (table, "frozen_t")):
        scoring.create_footprint(wh, name, submissions=[sid])
        sizes[name] = wh.scalar("SELECT n_cells FROM eval.footprints WHERE name = ?", [name])
        run = scoring.score(wh, name, coherence=False)
        assert sid in wh.scalar(
            "SELECT submission_ids FROM eval.score_runs WHERE score_run_id = ?", [run]
        )
        assert (
            wh.scalar(
                "SELECT n FROM eval.metrics WHERE score_run_id = ? AND submission_id = ? "
                "AND level = 'global'",
                [run, sid],
            )
            == sizes[name]
        )
    assert sizes["frozen_s"] == sizes["frozen_t"] == part.num_rows


def test_a_run_on_the_whole_split_takes_its_sample_fingerprint_from_the_grid(wh, tmp_path):
    """A run of stored uploads on a footprint that is its whole split reads no truth for
    its common sample: its fingerprint, kept beside the grid, is the one counting the
    cells gives (so results are reused across both ways of making it)."""
    from proforma.app.scoring import positional

    sid = scoring.ingest_parquet(wh, _file(wh, tmp_path / "whole.parquet", 11), "whole split")
    with positional.pinned(wh):
        grid = positional.cell_layout(wh, "test")
    assert grid.folder is not None
    for kept in grid.folder.glob("cells_fingerprint*"):
        kept.unlink()
    counted = "{}:{:016x}".format(
        *wh.one(
            "SELECT count(*), coalesce(bit_xor(hash(eval.cell_key(firm_id, origin_q, item_id, "
            "horizon))), 0) FROM panel.truth WHERE split = 'test' AND isfinite(actual) "
            "AND isfinite(baseline)"
        )
    )
    fingerprints = []
    for _ in range(2):  # computed once, then read from the grid's folder
        run = scoring.score(wh, "full", [sid], coherence=False, full=True)
        fingerprints.append(
            wh.scalar(
                "SELECT sample_fingerprint FROM eval.score_runs WHERE score_run_id = ?", [run]
            )
        )
        assert len(list(grid.folder.glob("cells_fingerprint*"))) == 1
    assert fingerprints == [counted, counted]


@pytest.mark.parametrize("sigma", [False, True])
def test_scores_span_by_span_equal_scores_at_once(wh, tmp_path, monkeypatch, sigma):
    """A run goes over the grid span by span (positional.SPAN positions, whole groups):
    spans of a few positions give the metrics, coverage and PIT of one span."""
    from proforma.app.scoring import positional

    sid = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "spans.parquet", 21 + sigma, sigma=sigma), f"spans {sigma}"
    )

    def results(run: int) -> list[tuple]:
        return wh.fetchall(
            "SELECT level, item_id, horizon, n, r2, mse, mae, nll, crps, z2, cov50, cov95 FROM eval.metrics "
            "WHERE score_run_id = ? AND submission_id = ? ORDER BY ALL",
            [run, sid],
        ) + wh.fetchall(
            "SELECT bin, n FROM eval.pit WHERE score_run_id = ? AND submission_id = ? ORDER BY ALL",
            [run, sid],
        )

    whole = results(scoring.score(wh, "full", [sid], coherence=False, full=True))
    positional._dense.clear()
    monkeypatch.setattr(positional, "SPAN", positional.cell_layout(wh, "test").size // 6)
    spans = len(list(positional.spans(positional.cell_layout(wh, "test"))))
    assert spans >= 5
    by_span = results(scoring.score(wh, "full", [sid], coherence=False, full=True))
    assert len(by_span) == len(whole) > 0
    for a, b in zip(by_span, whole, strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(y, float):
                assert x == pytest.approx(y, rel=1e-12, nan_ok=True), (a, b)
            else:
                assert x == y, (a, b)


@pytest.mark.parametrize("sigma", [False, True])
def test_the_layout_on_several_threads_is_the_layout_on_one(wh, tmp_path, monkeypatch, sigma):
    """An upload's row groups are shared out to threads that lay it out on the grid: any
    number of threads gives the same arrays, NaN exactly where the upload has no cell."""
    from proforma.app.scoring import positional
    from proforma.app.scoring.submissions.store import stored_file

    sid = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "threads.parquet", 31 + sigma, sigma=sigma), f"threads {sigma}"
    )
    # the stored file again in groups of 500 rows (the store writes groups of about
    # 123,000): many groups for the threads to share
    kept = stored_file(wh, sid)
    assert kept is not None
    regrouped = tmp_path / f"regrouped_{sigma}.parquet"
    pq.write_table(pq.read_table(kept["path"]), regrouped, row_group_size=500)
    assert pq.ParquetFile(regrouped).num_row_groups >= 8
    rec = {**kept, "path": str(regrouped)}
    layouts = []
    for workers in (1, 3, 4):
        positional._dense.clear()
        monkeypatch.setattr(positional, "layout_workers", lambda n=workers: n)
        with positional.pinned(wh):
            layouts.append(positional.dense_upload(wh, positional.cell_layout(wh, "test"), rec))
    one = layouts[0]
    assert np.isfinite(one.mu).sum() > 1000 and np.isnan(one.mu).any()
    for other in layouts[1:]:
        np.testing.assert_array_equal(other.mu, one.mu)
        if sigma:
            np.testing.assert_array_equal(other.sigma, one.sigma)
        else:
            assert other.sigma is None and one.sigma is None


def test_shares_cover_every_index_once():
    from proforma.app.scoring.positional import _shares

    for n, workers in ((0, 2), (1, 4), (7, 2), (10, 3), (129, 4), (5, 9)):
        shares = _shares(n, workers)
        assert [i for share in shares for i in share] == list(range(n))
        assert len(shares) == max(1, min(workers, n))
        sizes = [len(share) for share in shares]
        assert max(sizes) - min(sizes) <= 1


def test_a_float32_sigma_layout_gives_the_published_terms_of_a_float64_one(wh, tmp_path):
    """Under the published rules 057 reads sigma as a 32-bit float, so the layout keeps
    it as one: every per-cell term equals the one from a 64-bit layout, exactly."""
    from proforma.app.scoring import positional
    from proforma.app.scoring.cells import (
        register_functions,
        rule_params,
        scoring_context,
        single_params,
        submission_row,
    )
    from proforma.app.scoring.submissions.store import stored_file
    from proforma.contracts.rules import PUBLISHED

    sid = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "f32.parquet", 41, sigma=True), "float32 sigma"
    )
    # this module's panel is built under the paper's rules: the published ones given here
    params = {
        **single_params(submission_row(wh, sid), scoring_context(wh)),
        **rule_params(PUBLISHED),
    }
    assert params["float32_residuals"]
    register_functions(wh)
    rec = stored_file(wh, sid)
    assert rec is not None
    terms = []
    with positional.pinned(wh):
        grid = positional.cell_layout(wh, "test")
        for narrow in (True, False):
            positional._dense.clear()
            dense = positional.dense_upload(wh, grid, rec, float32_sigma=narrow)
            assert dense.sigma is not None
            assert dense.sigma.dtype == (np.float32 if narrow else np.float64)
            frame = positional.frame(grid, dense, with_pos=True)
            with positional.terms(wh, frame, params) as (view, _):
                terms.append(
                    wh.fetchall(
                        f"SELECT pos, r, nll, crps, z, u, in50, in95 FROM {view} ORDER BY pos"
                    )
                )
    assert len(terms[0]) > 1000 and terms[0] == terms[1]

    # a sigma no 32-bit float holds (a file that passed older checks): laid out in 64
    # bits, so that 057 meets it as it is (and fails it, as tests/api/test_api_poison.py
    # shows)
    table = pq.read_table(rec["path"])
    sigma = table["sigma"].to_numpy().copy()
    with positional.pinned(wh):
        placed = positional.cell_layout(wh, "test").positions(table["cell"].to_numpy()) >= 0
    sigma[np.flatnonzero(placed)[0]] = 1e39
    poisoned = tmp_path / "poisoned.parquet"
    at = table.schema.get_field_index("sigma")
    pq.write_table(table.set_column(at, "sigma", pa.array(sigma)), poisoned)
    positional._dense.clear()
    with positional.pinned(wh):
        wide = positional.dense_upload(
            wh,
            positional.cell_layout(wh, "test"),
            {**rec, "path": str(poisoned)},
            float32_sigma=True,
        )
    assert wide.sigma is not None and wide.sigma.dtype == np.float64
    assert np.nanmax(wide.sigma) == 1e39


def test_a_full_disk_while_the_file_is_written_leaves_nothing(wh, tmp_path, monkeypatch):
    """Arrow's writer failing for space (errno 28) mid-file: the temporary file is
    removed, no submission is recorded, and the error is the machine's disk (the CLI and
    the service say so), not the upload's."""
    import errno

    from proforma.app.scoring.submissions import store
    from proforma.app.store.warehouse import out_of_disk

    path = _file(wh, tmp_path / "nospace.parquet", 51)
    before = wh.scalar("SELECT count(*) FROM eval.submissions")
    store_dir(wh).mkdir(parents=True, exist_ok=True)  # (alone, this test's store is new)
    listing = sorted(p.name for p in store_dir(wh).iterdir())

    class FullDisk(pq.ParquetWriter):
        def write_batch(self, *args, **kwargs):
            super().write_batch(*args, **kwargs)
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.pq, "ParquetWriter", FullDisk)
    with pytest.raises(OSError) as caught:
        scoring.ingest_parquet(wh, path, "no space")
    assert out_of_disk(caught.value)
    assert wh.scalar("SELECT count(*) FROM eval.submissions") == before
    assert sorted(p.name for p in store_dir(wh).iterdir()) == listing


def test_the_file_is_on_the_disk_before_it_is_kept(wh, tmp_path, monkeypatch):
    """The written file's fsync runs on a thread beside the checks; `keep` waits for it
    before the rename, then syncs the store's folder (the rename is durable only then);
    a failed fsync (an I/O error) fails the upload: no submission, no file, the error the
    disk's."""
    import errno
    import threading

    from proforma.app.scoring.submissions import store

    synced: list[str] = []
    what: list[str] = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(threading.current_thread().name)
        what.append(os.path.realpath(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(store.os, "fsync", fsync)
    replaced: list[int] = []
    real_replace = os.replace

    def replace(a, b):
        replaced.append(len(synced))  # fsyncs done when the file took its name
        real_replace(a, b)

    monkeypatch.setattr(store.os, "replace", replace)
    sid = scoring.ingest_parquet(wh, _file(wh, tmp_path / "synced.parquet", 61), "synced")
    assert _record(wh, sid) is not None
    assert replaced == [1] and synced[0] != threading.main_thread().name
    # after the rename: the folder holding the new name
    assert what[1:] == [os.path.realpath(store_dir(wh))]

    def failing(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(store.os, "fsync", failing)
    before = wh.scalar("SELECT count(*) FROM eval.submissions")
    listing = sorted(p.name for p in store_dir(wh).iterdir())
    with pytest.raises(OSError, match="Input/output error"):
        scoring.ingest_parquet(wh, _file(wh, tmp_path / "eio.parquet", 62), "eio")
    assert wh.scalar("SELECT count(*) FROM eval.submissions") == before
    assert sorted(p.name for p in store_dir(wh).iterdir()) == listing


def test_a_file_damaged_past_its_first_groups_is_rejected_as_unreadable(wh, tmp_path, monkeypatch):
    """A footer that reads and pages that do not: DuckDB fails while the rows stream to
    the store's writer (Arrow hands its error over as an OSError), and the upload is
    rejected as an unreadable file, the store left as it was."""
    import duckdb

    from proforma.app.scoring.submissions import store
    from proforma.app.store.warehouse import streamed_error
    from proforma.contracts.errors import ValidationError

    translated: list[BaseException] = []

    def spy(exc: OSError) -> BaseException:
        translated.append(streamed_error(exc))
        return translated[-1]

    monkeypatch.setattr(store, "streamed_error", spy)

    table = pq.read_table(_file(wh, tmp_path / "base.parquet", 61))
    while table.num_rows < 400_000:  # groups past the store's first batches
        table = pa.concat_tables([table, table])
    whole = tmp_path / "whole.parquet"
    pq.write_table(table, whole, row_group_size=20_000, compression="snappy")
    meta = pq.ParquetFile(whole).metadata
    last = meta.row_group(meta.num_row_groups - 2).column(4)  # prediction, late in the file
    data = bytearray(whole.read_bytes())
    start = last.data_page_offset + 64
    data[start : start + 4096] = bytes(np.random.default_rng(5).integers(0, 255, 4096, np.uint8))
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(bytes(data))
    before = wh.scalar("SELECT count(*) FROM eval.submissions")
    store_dir(wh).mkdir(parents=True, exist_ok=True)
    listing = sorted(p.name for p in store_dir(wh).iterdir())
    with pytest.raises(ValidationError, match="not a readable parquet file"):
        scoring.ingest_parquet(wh, damaged, "damaged")
    assert len(translated) == 1 and isinstance(translated[0], duckdb.Error)  # mid-stream
    assert wh.scalar("SELECT count(*) FROM eval.submissions") == before
    assert sorted(p.name for p in store_dir(wh).iterdir()) == listing

    # the translation itself: DuckDB's kind by name, an errno kept as the OS's
    streamed = wh.con.sql(
        "SELECT CASE WHEN i > 300000 THEN error('late') ELSE i END FROM range(600000) t(i)"
    ).to_arrow_reader(100_000)
    with pytest.raises(OSError) as caught:
        for _ in streamed:
            pass
    assert isinstance(streamed_error(caught.value), duckdb.InvalidInputException)
    assert isinstance(
        streamed_error(OSError("Out of Memory Error: failed to allocate")),
        duckdb.OutOfMemoryException,
    )
    assert type(streamed_error(OSError("something else"))) is duckdb.Error
    full = OSError(28, "No space left on device")
    assert streamed_error(full) is full
