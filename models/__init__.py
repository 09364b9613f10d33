"""Forecasters. Each reads the warehouse's Arrow views (handed to it by the CLI layer)
and returns forecasts as Arrow batches in the contract's schema (docs/contracts.md).
Models never open the database themselves."""
