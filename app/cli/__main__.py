"""`python -m proforma.app.cli` runs the `proforma` command line."""

from proforma.app.cli import entry

entry()
