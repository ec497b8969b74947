"""The scheduler (``monitor scheduler``): one task per monitor, batched writes, outbox relay."""
