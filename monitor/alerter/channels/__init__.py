"""Alert channels, one module each."""
