"""The web dashboard served by ``monitor api`` (issue 29)."""
