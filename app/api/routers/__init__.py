"""One router per resource, mounted under /api/v1 by proforma.app.server.main."""
