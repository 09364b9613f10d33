"""The read layer the API and the pages share: queries, public snapshot, formats, errors."""
