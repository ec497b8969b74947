"""Configuration as code: an account's monitors, channels, maintenance windows and status pages
as YAML or JSON files (docs/config-as-code.md), made true by ``monitor apply``, written back by
``monitor export`` and from other tools' configurations by ``monitor import``.

Every object is validated by the same models the API validates with and written through the
same domain operations (``monitor/domain/``); this package only reads files, plans what would
change, and orders the operations of a plan in one transaction.
"""
