"""What ``MONITOR_DATABASE_URL`` and ``MONITOR_REDIS_URL`` may name, read without any I/O.

Both services can have a standby that takes over (docs/architecture.md, "Failover of
PostgreSQL and Redis"):

- PostgreSQL: a DSN may list several hosts, ``postgresql://user@h1:5432,h2:5432/db`` (asyncpg
  tries them in order, as libpq does). With more than one host it must say
  ``target_session_attrs=read-write`` (or ``primary``): without it a connection may land on a
  standby, where every write of the scheduler and the alerter fails.
- Redis: a plain ``redis://``, ``rediss://`` or ``unix://`` URL, or
  ``redis+sentinel://[[user]:password@]sentinel1[:port][,sentinel2[:port]...]/<service>[/<db>]``:
  the sentinels (port 26379 by default) say which server is the master of ``<service>``; the
  user and password are the Redis servers' (``MONITOR_REDIS_SENTINEL_PASSWORD`` is the
  sentinels' own, when they have one).

Errors are ``ValueError`` whose text names the hosts and never the password: config.py turns
them into a message naming the variable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

PG_SCHEMES = ("postgres", "postgresql")
REDIS_SCHEMES = ("redis", "rediss", "unix")
SENTINEL_SCHEME = "redis+sentinel"
SENTINEL_PORT = 26379
PG_PORT = 5432
# asyncpg's values (its SessionAttribute); the monitor writes, so only these two (or, with a
# single host, any value but the ones that ask for a standby) make sense.
_WRITABLE_ATTRS = ("read-write", "primary")
_ALL_ATTRS = ("any", "primary", "standby", "prefer-standby", "read-write", "read-only")


@dataclass(frozen=True)
class PostgresTarget:
    """The hosts of a PostgreSQL DSN, in the order asyncpg tries them."""

    hosts: tuple[tuple[str, int], ...]
    target_session_attrs: str | None

    @property
    def several(self) -> bool:
        return len(self.hosts) > 1


@dataclass(frozen=True)
class SentinelTarget:
    """A Redis reached through Sentinel: where the sentinels are, which service, which db."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        """For log lines: no password."""
        where = ",".join(f"{h}:{p}" for h, p in self.sentinels)
        return f"{SENTINEL_SCHEME}://{where}/{self.service}/{self.db}"


def _netloc_hosts(netloc: str, default_port: int, what: str) -> tuple[tuple[str, int], ...]:
    """``host[:port],host[:port]...`` (IPv6 in brackets) after any user info."""
    hostlist = netloc.rsplit("@", 1)[-1]
    hosts: list[tuple[str, int]] = []
    for number, part in enumerate(hostlist.split(","), start=1):
        part = part.strip()
        if part.startswith("["):
            end = part.find("]")
            if end == -1:
                raise ValueError(f"{what} {number} ({part!r}) has an unclosed '['")
            host, rest = part[1:end], part[end + 1 :]
            if rest and not rest.startswith(":"):
                raise ValueError(f"{what} {number} ({part!r}) is not [address]:port")
            port_text = rest[1:]
        else:
            host, _, port_text = part.partition(":")
        if not host and what == "sentinel":
            raise ValueError(f"{what} {number} has no host")
        port = default_port
        if port_text:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise ValueError(f"{what} {number} ({host or '?'}) has port {port_text!r}, not 1-65535")
            port = int(port_text)
        hosts.append((host, port))
    return tuple(hosts)


def parse_postgres(dsn: str) -> PostgresTarget:
    """The hosts and ``target_session_attrs`` of a ``postgresql://`` DSN; ValueError when the
    DSN is no such URL, a port is wrong, or several hosts come without read-write."""
    parts = urlsplit(dsn)
    if parts.scheme not in PG_SCHEMES:
        raise ValueError("must be a postgresql:// URL")
    hosts = _netloc_hosts(parts.netloc, PG_PORT, "host")
    attrs_given = parse_qs(parts.query).get("target_session_attrs")
    attrs = attrs_given[-1] if attrs_given else None
    if attrs is not None and attrs not in _ALL_ATTRS:
        raise ValueError(f"target_session_attrs={attrs!r} is not one of {', '.join(_ALL_ATTRS)}")
    if attrs is not None and attrs not in (*_WRITABLE_ATTRS, "any"):
        raise ValueError(
            f"target_session_attrs={attrs} would connect to a standby, where the monitor cannot "
            "write: use read-write"
        )
    target = PostgresTarget(hosts, attrs)
    if target.several and attrs not in _WRITABLE_ATTRS:
        listed = ", ".join(f"{h or 'localhost'}:{p}" for h, p in hosts)
        raise ValueError(
            f"names {len(hosts)} hosts ({listed}) but not target_session_attrs=read-write: "
            "without it a connection may land on a standby, where every write fails; "
            "add ?target_session_attrs=read-write"
        )
    return target


def parse_redis(url: str) -> SentinelTarget | None:
    """None for a plain Redis URL (redis-py's ``from_url`` reads it), the sentinels for a
    ``redis+sentinel://`` one; ValueError for anything else."""
    parts = urlsplit(url)
    if parts.scheme in REDIS_SCHEMES:
        return None
    if parts.scheme != SENTINEL_SCHEME:
        raise ValueError(f"must be a redis://, rediss://, unix:// or {SENTINEL_SCHEME}:// URL")
    if parts.query or parts.fragment:
        raise ValueError(f"a {SENTINEL_SCHEME}:// URL takes no ?query or #fragment")
    if not parts.netloc.rsplit("@", 1)[-1]:
        raise ValueError(f"a {SENTINEL_SCHEME}:// URL needs at least one sentinel host")
    sentinels = _netloc_hosts(parts.netloc, SENTINEL_PORT, "sentinel")
    path = [p for p in parts.path.split("/") if p]
    if not path:
        raise ValueError(
            f"a {SENTINEL_SCHEME}:// URL needs the master's service name: "
            f"{SENTINEL_SCHEME}://host:26379/<service>[/<db>]"
        )
    if len(path) > 2:
        raise ValueError(f"a {SENTINEL_SCHEME}:// URL's path is /<service>[/<db>], not more")
    db = 0
    if len(path) == 2:
        if not path[1].isdigit():
            raise ValueError(f"the database after the service name must be a number, not {path[1]!r}")
        db = int(path[1])
    userinfo = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
    user, has_password, password = userinfo.partition(":")
    return SentinelTarget(
        sentinels=sentinels,
        service=unquote(path[0]),
        db=db,
        username=unquote(user) or None,
        password=unquote(password) if has_password and password else None,
    )
