"""Flows: the work that commands start and the service can start too (docs/architecture.md,
"Where each job lives"). A flow takes an open Warehouse and plain arguments, reports
progress through callbacks, raises proforma.contracts.errors.UserError for what a user can fix,
and never prints; app/cli parses arguments and prints what a flow returns."""
