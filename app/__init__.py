"""ProForma-20Q benchmark service: warehouse, build, scoring, API."""

from proforma.contracts import ROOT

__version__ = "0.1.0"

__all__ = ["ROOT", "__version__"]
