"""The JSON HTTP API (``monitor api``)."""
