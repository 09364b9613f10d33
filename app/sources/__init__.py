"""Sources write the raw.* tables. See app/sources/base.py for the interface."""

from proforma.app.sources.base import IngestSummary, RawTables, Source, ingest

__all__ = ["IngestSummary", "RawTables", "Source", "ingest"]
