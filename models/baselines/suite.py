"""The competitor suite: one `ModelSpec` per learned competitor (docs/models.md).

A spec is everything the rest of the project knows about a model: its one name (the
`--which` choice, the submission's name, its fit cache folder and its key in a preset),
the forecast family its submission declares, its configuration per preset, the
footprints it is scored on, the view it reads, whether `proforma demo` fits it by
default, and how it fits and forecasts. The CLI's choices, the competitor flow
(app/flows/baselines.py), the presets, the demo and the suite's scoring all read these
specs; adding a model is adding one (docs/models.md, "Adding a model").

Importing this module is cheap (no scikit-learn, LightGBM or PyTorch): each `fit`
imports its model's module when called, so the command line starts fast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from proforma.contracts.errors import UserError
from proforma.models.baselines import presets as P

if TYPE_CHECKING:
    from proforma.models.baselines.base import Forecast
    from proforma.models.baselines.data import TabularData
    from proforma.models.baselines.fanout import FanOut, Tracker

#: The views a competitor can read (the flow maps each to its reader).
DATA = ("tabular_imputed", "tabular")
#: Every footprint the suite scores on: `full` (78 items), `geert` (the chain's 25) and
#: `llm` (the LLM subset, app/flows/llm.py).
ALL_FOOTPRINTS = ("full", "geert", "llm")


@dataclass(frozen=True)
class FitRequest:
    """What a model's `fit` gets: the three splits of its view as numpy arrays, its
    configuration (one preset's), where finished fits are kept (resumable runs), the
    fan-out engine and progress tracker, and optional restrictions for quick checks."""

    train: TabularData
    val: TabularData
    test: TabularData
    config: dict[str, Any]
    root: Any
    fan: FanOut
    tracker: Tracker
    items: tuple[str, ...] | None = None
    horizons: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ModelSpec:
    """One learned competitor."""

    name: str
    #: Fits on the request's train and val splits, forecasts its test split.
    fit: Callable[[FitRequest], Forecast]
    #: {preset name: configuration}; every spec has the same preset names.
    presets: Mapping[str, dict[str, Any]]
    #: The forecast family of its submissions (proforma.contracts.forecasts).
    family: str = "gaussian"
    #: The footprints its submissions join; a model that forecasts only some items
    #: leaves out those whose common sample it would shrink.
    footprints: tuple[str, ...] = ALL_FOOTPRINTS
    #: The view it reads (one of DATA).
    data: str = "tabular_imputed"
    #: Fit by `proforma demo` unless `--competitors` says otherwise.
    demo: bool = False
    #: What the `demo` preset shrinks, printed by `proforma run baselines --preset demo`.
    demo_note: str = ""
    #: Uses PyTorch (`--threads` applies).
    torch: bool = False
    #: Forecasts given origins from a fit on the request's train and val splits (a
    #: prospective round's frozen origins, app/rounds/entries.py); None: the static fit's
    #: forecasts of those rows (`forecast_at_origins`).
    at_origins: Callable[[FitRequest, TabularData], Forecast] | None = None


def forecast_at_origins(spec: ModelSpec, request: FitRequest, origins: TabularData) -> Forecast:
    """The spec's forecasts for `origins` (rows of its view: features, futures unknown)
    from a model fit on `request.train` and `request.val` only, as its static fit is:
    the forecast-at-origins entry point through which the learned competitors enter a
    prospective round (docs/rounds.md, "Entries").

    A spec with its own `at_origins` answers. Otherwise, when every origin is a row of
    the request's test split (a round's origins are the last quarter of the test split
    of the build it opens on), the model's static fit on the request forecasts them: a
    model that keeps its finished fits in the fit cache (every model of the suite) then
    reuses the static run's fits instead of fitting again. Else `fit` gets the origins
    as its test split."""
    from proforma.models.baselines.base import Forecast

    if origins.n == 0:
        raise UserError(f"{spec.name}: no origin to forecast")
    if spec.at_origins is not None:
        return spec.at_origins(request, origins)
    index = {
        (int(f), int(q)): i
        for i, (f, q) in enumerate(zip(request.test.firm_id, request.test.origin_q, strict=True))
    }
    rows = [
        index.get((int(f), int(q))) for f, q in zip(origins.firm_id, origins.origin_q, strict=True)
    ]
    if any(r is None for r in rows):
        return spec.fit(replace(request, test=origins))
    whole = spec.fit(request)
    take = [int(r) for r in rows if r is not None]
    return Forecast(
        origins,
        [(mu[take], None if sigma is None else sigma[take]) for mu, sigma in whole.components],
        whole.info,
    )


def _grid_fit(fit_predict: Callable[..., Forecast], r: FitRequest) -> Forecast:
    """A GridModel's fit_predict (elastic net, random forest) on the request."""
    return fit_predict(
        r.train,
        r.val,
        r.test,
        r.root,
        r.config,
        fan=r.fan,
        tracker=r.tracker,
        items=r.items,
        horizons=r.horizons,
    )


# The model modules are imported on use: they load scikit-learn, which a CLI that only
# lists the models should not pay for.
def _enet(r: FitRequest) -> Forecast:
    from proforma.models.baselines.elastic_net import fit_predict

    return _grid_fit(fit_predict, r)


def _rf(r: FitRequest) -> Forecast:
    from proforma.models.baselines.random_forest import fit_predict

    return _grid_fit(fit_predict, r)


def _ffnn(variant: str) -> Callable[[FitRequest], Forecast]:
    def fit(r: FitRequest) -> Forecast:
        """The FFNNs always forecast every cell (`items`/`horizons` do not apply)."""
        from proforma.models.baselines import ffnn

        return ffnn.fit_predict(
            r.train, r.val, r.test, r.root, variant, r.config, tracker=r.tracker
        )

    return fit


def _gbm(arm: str) -> Callable[[FitRequest], Forecast]:
    def fit(r: FitRequest) -> Forecast:
        from proforma.models.baselines import chained_gbm

        return chained_gbm.fit_predict(
            r.train,
            r.val,
            r.test,
            r.root,
            arm,
            r.config,
            fan=r.fan,
            tracker=r.tracker,
            items=r.items,
            horizons=r.horizons,
        )

    return fit


_FFNN = {"paper": P.FFNN_PAPER, "demo": P.FFNN_DEMO}
_GBM = {"paper": P.GBM_PAPER, "demo": P.GBM_DEMO}
#: The chained GBM forecasts only the 25 chained items: it joins `geert`, not `full`
#: (a common sample with it would shrink the full footprint to its items) nor `llm`.
_GBM_FOOTPRINTS = ("geert",)

SUITE: dict[str, ModelSpec] = {
    s.name: s
    for s in (
        ModelSpec(
            "enet",
            _enet,
            {"paper": P.ENET_PAPER, "demo": P.ENET_DEMO},
            demo=True,
            demo_note=P.DEMO_CHANGES["enet"],
        ),
        ModelSpec(
            "rf", _rf, {"paper": P.RF_PAPER, "demo": P.RF_DEMO}, demo_note=P.DEMO_CHANGES["rf"]
        ),
        ModelSpec(
            "ffnn-linear",
            _ffnn("linear"),
            _FFNN,
            demo=True,
            demo_note=P.DEMO_CHANGES["ffnn"],
            torch=True,
        ),
        ModelSpec(
            "ffnn-large",
            _ffnn("large"),
            _FFNN,
            demo=True,
            demo_note=P.DEMO_CHANGES["ffnn"],
            torch=True,
        ),
        # The L1 arm targets the median (absolute-error track); point models carry no sigma.
        ModelSpec(
            "gbm-l1",
            _gbm("l1"),
            _GBM,
            family="laplace",
            footprints=_GBM_FOOTPRINTS,
            demo_note=P.DEMO_CHANGES["gbm"],
        ),
        ModelSpec(
            "gbm-l2",
            _gbm("l2"),
            _GBM,
            footprints=_GBM_FOOTPRINTS,
            demo_note=P.DEMO_CHANGES["gbm"],
        ),
    )
}


def names() -> tuple[str, ...]:
    """Every competitor, in the suite's order (the `--which` default)."""
    return tuple(SUITE)


def demo_names() -> tuple[str, ...]:
    return tuple(n for n, s in SUITE.items() if s.demo)


def get(name: str) -> ModelSpec:
    try:
        return SUITE[name]
    except KeyError:
        raise UserError(f"Unknown model {name!r}; choose from {', '.join(SUITE)}") from None


def register(spec: ModelSpec) -> ModelSpec:
    """Add a competitor (docs/models.md, "Adding a model"); a spec must name a known
    view and fill every preset."""
    if spec.name in SUITE:
        raise ValueError(f"model {spec.name!r} is already in the suite")
    if spec.data not in DATA:
        raise ValueError(f"model {spec.name!r}: data must be one of {', '.join(DATA)}")
    if set(spec.presets) != set(P.PRESETS):
        raise ValueError(f"model {spec.name!r}: presets must be exactly {', '.join(P.PRESETS)}")
    unknown = set(spec.footprints) - set(ALL_FOOTPRINTS)
    if unknown or not spec.footprints:
        raise ValueError(f"model {spec.name!r}: footprints among {', '.join(ALL_FOOTPRINTS)}")
    SUITE[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    SUITE.pop(name, None)


def submission_name(model: str, preset_name: str) -> str:
    """A competitor's name on every board, static or round: "enet", "enet (demo)"."""
    return model if preset_name == "paper" else f"{model} ({preset_name})"


def model_of(submission_name: str) -> ModelSpec | None:
    """The spec behind a submission the suite wrote ("enet", "gbm-l1 (demo)"), else None."""
    return SUITE.get(submission_name.split(" (", 1)[0])


def preset(name: str) -> dict[str, dict[str, Any]]:
    """{model: configuration} of one preset."""
    if name not in P.PRESETS:
        raise UserError(f"Unknown preset {name!r}; choose one of {', '.join(P.PRESETS)}")
    return {n: s.presets[name] for n, s in SUITE.items()}
