"""The HTTP check against real-world server behaviours (issue 10, point 5)."""
