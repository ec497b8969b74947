"""What the public sees: status pages, their feeds and README badges."""
