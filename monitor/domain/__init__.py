"""The domain layer: what a user may do with each resource, for every face.

One module per resource (monitors, channels, maintenance windows, status pages, keys,
accounts; members, posts and reports as they come) holds its operations: validate the input,
authorise the caller (``roles.authorize``, the one table of who may do what), read, write, and
what a write must also do (NOTIFY the scheduler, seal secrets, audit). The JSON API's handlers
parse a request, call an operation and render its answer; the dashboard, ``monitor apply`` and
the CLI call the same operations, so no rule is written twice and no face holds SQL of its own.

Nothing here imports aiohttp or a process (``scheduler/``, ``alerter/``, ``api/``, ``status/``):
``tests/unit/test_layers.py`` keeps it so. An operation takes its dependencies (``Deps``: the pool,
the settings, the secret box, the vetted resolver) and the caller (``Actor``) as arguments, and
raises ``DomainError`` (a status, a code, a message and the field it is about) for anything the
caller should be told.
"""
