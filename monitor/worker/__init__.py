"""``monitor worker``: the process that runs heavy checks, taken from a Redis stream per kind."""
