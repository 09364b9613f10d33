"""`python -m app.cli` runs the `proforma` command line."""

from app.cli import main

main()
