"""One router per resource, mounted under /api/v1 by app.api.main."""
