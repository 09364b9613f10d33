"""ProForma-20Q, installed as one top-level package so its names never clash with a
user's own `app` or `models` (docs/architecture.md, "Layout").

In the repository this folder holds only this file and relative links to the top-level
folders (app, models, contracts, sql, migrations, reference); the wheel holds their
copies. Everything the project reads at run time is found through this package
(contracts.ROOT), never through the working directory.
"""
