"""ProForma-20Q benchmark service: warehouse, build, scoring, API."""

from pathlib import Path

__version__ = "0.1.0"

#: Repository root: migrations/, sql/ and reference/ live beside the packages.
ROOT = Path(__file__).resolve().parent.parent
