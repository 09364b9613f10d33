"""The benchmark service: FastAPI app (main.create_app), routers per resource, job queue,
public snapshot and the guarded public SQL endpoint."""
