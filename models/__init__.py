"""Forecasters. Each reads the warehouse's Arrow views (handed to it by the flows in app/)
and returns forecasts as Arrow batches in the contract's schema (docs/contracts.md).
Models never open the database themselves, and import nothing from `app`: what they share
with it lives in `contracts`."""

from proforma.contracts.forecasts import FORECAST_SCHEMA

__all__ = ["FORECAST_SCHEMA"]
