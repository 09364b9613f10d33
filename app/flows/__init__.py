"""Flows: the work behind a command, below the CLI, so the API can call it too. A flow
opens the warehouse, hands models Arrow readers, writes what they return, and reports
through a `log` callable and a returned summary; it never parses arguments or prints."""
