"""The warehouse layer: connection, SQL files, migrations, reference data, settings."""
