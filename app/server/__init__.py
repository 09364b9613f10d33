"""The service process: mounts the API (app/api) and the pages (app/web)."""
