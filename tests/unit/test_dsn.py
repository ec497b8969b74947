"""What MONITOR_DATABASE_URL and MONITOR_REDIS_URL accept (monitor/dsn.py), as tables, and that no
error or description ever shows the password."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from redis.asyncio.sentinel import SentinelConnectionPool

from monitor import config, dsn, redisconn

PASSWORD = "hunter2-secret"


@pytest.mark.parametrize(
    ("url", "hosts", "attrs"),
    [
        ("postgresql://u@db/x", (("db", 5432),), None),
        ("postgres://u:p@db:6432/x", (("db", 6432),), None),
        ("postgresql:///x", (("", 5432),), None),
        ("postgresql://u@db/x?target_session_attrs=any", (("db", 5432),), "any"),
        (
            "postgresql://u@h1:5432,h2:5433/x?target_session_attrs=read-write",
            (("h1", 5432), ("h2", 5433)),
            "read-write",
        ),
        (
            "postgresql://u@h1,h2,h3/x?sslmode=require&target_session_attrs=primary",
            (("h1", 5432), ("h2", 5432), ("h3", 5432)),
            "primary",
        ),
        (
            "postgresql://u@[::1]:5432,[fd00::2]/x?target_session_attrs=read-write",
            (("::1", 5432), ("fd00::2", 5432)),
            "read-write",
        ),
    ],
)
def test_postgres_accepted(url: str, hosts: tuple[tuple[str, int], ...], attrs: str | None) -> None:
    target = dsn.parse_postgres(url)
    assert target.hosts == hosts
    assert target.target_session_attrs == attrs


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://u@db/x", "must be a postgresql:// URL"),
        (
            f"postgresql://u:{PASSWORD}@h1,h2/x",
            "names 2 hosts (h1:5432, h2:5432) but not target_session_attrs",
        ),
        (
            f"postgresql://u:{PASSWORD}@h1,h2/x?target_session_attrs=any",
            "add ?target_session_attrs=read-write",
        ),
        ("postgresql://u@h1/x?target_session_attrs=standby", "would connect to a standby"),
        ("postgresql://u@h1,h2/x?target_session_attrs=prefer-standby", "would connect to a standby"),
        ("postgresql://u@h1/x?target_session_attrs=readwrite", "is not one of"),
        (f"postgresql://u:{PASSWORD}@h1:5432,h2:99999/x?target_session_attrs=read-write", "host 2 (h2)"),
        ("postgresql://u@h1:x/db", "has port 'x'"),
        ("postgresql://u@[::1/db", "Invalid IPv6 URL"),
    ],
)
def test_postgres_refused(url: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        dsn.parse_postgres(url)
    assert says in str(caught.value)
    assert PASSWORD not in str(caught.value)


@pytest.mark.parametrize("url", ["redis://h:6379/0", "rediss://:p@h:6380/2", "unix:///run/redis.sock?db=1"])
def test_redis_plain(url: str) -> None:
    assert dsn.parse_redis(url) is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "redis+sentinel://s1:26379,s2:26380,s3/mymaster",
            dsn.SentinelTarget((("s1", 26379), ("s2", 26380), ("s3", 26379)), "mymaster", 0),
        ),
        (
            f"redis+sentinel://:{PASSWORD}@s1/mymaster/3",
            dsn.SentinelTarget((("s1", 26379),), "mymaster", 3, None, PASSWORD),
        ),
        (
            "redis+sentinel://app:p%40ss@[::1]:26379/svc%2Da/1",
            dsn.SentinelTarget((("::1", 26379),), "svc-a", 1, "app", "p@ss"),
        ),
    ],
)
def test_redis_sentinel(url: str, expected: dsn.SentinelTarget) -> None:
    target = dsn.parse_redis(url)
    assert target == expected
    assert target is not None and PASSWORD not in repr(target) and PASSWORD not in target.describe()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://h/0", "must be a redis://, rediss://, unix:// or redis+sentinel:// URL"),
        (f"redis+sentinel://:{PASSWORD}@s1:26379", "needs the master's service name"),
        (f"redis+sentinel://:{PASSWORD}@/mymaster", "at least one sentinel host"),
        ("redis+sentinel://s1,/mymaster", "sentinel 2 has no host"),
        ("redis+sentinel://s1:0/mymaster", "sentinel 1 (s1) has port '0'"),
        (f"redis+sentinel://:{PASSWORD}@s1/mymaster/zero", "must be a number"),
        ("redis+sentinel://s1/mymaster/0/extra", "not more"),
        (f"redis+sentinel://:{PASSWORD}@s1/mymaster?password={PASSWORD}", "no ?query"),
    ],
)
def test_redis_refused(url: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        dsn.parse_redis(url)
    assert says in str(caught.value)
    assert PASSWORD not in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("MONITOR_DATABASE_URL", f"postgresql://u:{PASSWORD}@h1,h2/x", "target_session_attrs=read-write"),
        ("MONITOR_REDIS_URL", f"redis+sentinel://:{PASSWORD}@s1", "service name"),
        ("MONITOR_REDIS_URL", "memcached://h", "redis+sentinel://"),
    ],
)
def test_config_errors_name_the_variable_and_hide_the_password(variable: str, value: str, says: str) -> None:
    with pytest.raises(config.ConfigError) as caught:
        config.load({variable: value})
    message = str(caught.value)
    assert message.startswith(f"{variable}: ") and says in message
    assert PASSWORD not in message


def test_settings_with_failover_urls_hide_their_passwords() -> None:
    settings = config.load(
        {
            "MONITOR_DATABASE_URL": f"postgresql://u:{PASSWORD}@h1,h2/x?target_session_attrs=read-write",
            "MONITOR_REDIS_URL": f"redis+sentinel://:{PASSWORD}@s1,s2/mymaster/2",
            "MONITOR_REDIS_SENTINEL_PASSWORD": "sentinel-" + PASSWORD,
        }
    )
    assert PASSWORD not in repr(settings)
    assert config.redact_url(settings.dsn) == "postgresql://u:***@h1,h2/x?target_session_attrs=read-write"
    target = dsn.parse_redis(settings.redis_dsn)
    assert target is not None and target.describe() == "redis+sentinel://s1:26379,s2:26379/mymaster/2"


async def test_factory_builds_a_sentinel_client_without_io() -> None:
    sentinel = redisconn.client(
        f"redis+sentinel://:{PASSWORD}@127.0.0.1:1,127.0.0.1:2/mymaster/4",
        socket_timeout=1,
        socket_connect_timeout=1,
        sentinel_password="s-" + PASSWORD,
    )
    plain = redisconn.client("redis://127.0.0.1:1/3", socket_timeout=1, socket_connect_timeout=1)
    try:
        pool = sentinel.connection_pool
        assert isinstance(pool, SentinelConnectionPool) and pool.service_name == "mymaster"
        assert pool.connection_kwargs["db"] == 4 and pool.connection_kwargs["password"] == PASSWORD
        kwargs = [s.connection_pool.connection_kwargs for s in pool.sentinel_manager.sentinels]
        assert [(k["host"], k["port"], k["password"]) for k in kwargs] == [
            ("127.0.0.1", 1, "s-" + PASSWORD),
            ("127.0.0.1", 2, "s-" + PASSWORD),
        ]
        assert PASSWORD not in repr(sentinel) and PASSWORD not in repr(pool)
        assert type(plain) is aioredis.Redis and plain.connection_pool.connection_kwargs["db"] == 3
    finally:
        await sentinel.aclose()
        await plain.aclose()
