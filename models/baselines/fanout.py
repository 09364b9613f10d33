"""Fan many independent fits out: joblib on one machine, Dask on a cluster.

The per-(item, horizon) fits of the elastic net and random forest (1,560 each) and the
per-horizon GBM chains are independent tasks over shared, read-only arrays. `fan_out`
runs `fn(task, **shared)` for every task and hands each result to `on_result` as soon as
it finishes (the fit cache saves it there, which makes a run resumable).

- engine="joblib" (default): loky worker processes; joblib memory-maps the large shared
  numpy arrays so each worker reads them without a copy.
- engine="dask": a `dask.distributed.Client` (pass `client=`, or `scheduler=` an
  address such as "tcp://head:8786"; nothing given starts a LocalCluster). The shared
  arrays are scattered to every worker once (broadcast) and tasks are submitted against
  those futures, so each task ships only its small description.
- engine="serial": in this process (debugging, and n_jobs=1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from proforma.contracts.errors import UserError

ENGINES = ("joblib", "dask", "serial")


def fan_out(
    fn: Callable[..., Any],
    tasks: Sequence[Any],
    shared: dict[str, Any] | None = None,
    *,
    engine: str = "joblib",
    n_jobs: int = 1,
    client: Any = None,
    scheduler: str | None = None,
    on_result: Callable[[Any, Any], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Any]:
    """Run fn(task, **shared) for each task; results come back in task order."""
    shared = shared or {}
    tasks = list(tasks)
    if not tasks:
        return []
    if engine not in ENGINES:
        raise UserError(f"Unknown fan-out engine {engine!r}; choose one of {', '.join(ENGINES)}")
    results: list[Any] = [None] * len(tasks)

    def done(i: int, result: Any) -> None:
        results[i] = result
        if on_result is not None:
            on_result(tasks[i], result)
        if progress is not None:
            progress(1)

    if engine == "serial" or (engine == "joblib" and n_jobs == 1):
        for i, t in enumerate(tasks):
            done(i, fn(t, **shared))
    elif engine == "joblib":
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=n_jobs, return_as="generator", max_nbytes="1M")
        for i, r in enumerate(parallel(delayed(fn)(t, **shared) for t in tasks)):
            done(i, r)
    else:
        _run_dask(fn, tasks, shared, client, scheduler, n_jobs, done)
    return results


def _run_dask(
    fn: Callable[..., Any],
    tasks: list[Any],
    shared: dict[str, Any],
    client: Any,
    scheduler: str | None,
    n_jobs: int,
    done: Callable[[int, Any], None],
) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover - dask is a dev/cluster extra
        raise UserError(
            "engine='dask' needs dask[distributed]: pip install 'proforma[cluster]'"
        ) from exc
    own: list[Any] = []
    if client is None:
        if scheduler:
            client = Client(scheduler)
        else:
            cluster = LocalCluster(n_workers=max(n_jobs, 1), threads_per_worker=1, processes=True)
            own.append(cluster)
            client = Client(cluster)
        own.insert(0, client)
    try:
        scattered = {k: client.scatter(v, broadcast=True) for k, v in shared.items()}
        futures = [client.submit(fn, t, pure=False, **scattered) for t in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in as_completed(futures):
            done(index[fut.key], fut.result())
    finally:
        for obj in own:
            obj.close()


def chunked(items: Iterable[Any], size: int) -> list[list[Any]]:
    """Split tasks into groups (fewer, larger tasks amortize scheduling overhead)."""
    items = list(items)
    return [items[i : i + size] for i in range(0, len(items), size)]


class Tracker:
    """Progress reporting for long stages; the default reports nothing.

    The CLI passes a subclass backed by a rich progress bar. `stage` returns the
    callable that advances that stage's bar by n finished tasks.
    """

    def stage(self, label: str, total: int) -> Callable[[int], None]:
        return lambda n: None

    def note(self, text: str) -> None:
        pass


class FanOut:
    """How to fan tasks out: engine, workers, and an optional Dask client or address."""

    def __init__(
        self,
        engine: str = "joblib",
        n_jobs: int = 1,
        client: Any = None,
        scheduler: str | None = None,
    ):
        if engine not in ENGINES:
            raise UserError(
                f"Unknown fan-out engine {engine!r}; choose one of {', '.join(ENGINES)}"
            )
        self.engine, self.n_jobs, self.client, self.scheduler = engine, n_jobs, client, scheduler

    def map(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[Any],
        shared: dict[str, Any] | None = None,
        *,
        on_result: Callable[[Any, Any], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[Any]:
        return fan_out(
            fn,
            tasks,
            shared,
            engine=self.engine,
            n_jobs=self.n_jobs,
            client=self.client,
            scheduler=self.scheduler,
            on_result=on_result,
            progress=progress,
        )
