"""Secrets encrypted at rest: monitor credentials and alert channels' secrets.

Why: the database is copied far more often than it is guarded. Backups, ``pg_dump`` files
handed around for a bug report, replicas and read-only SQL users all see every table; a
monitor's basic-auth password or a Slack webhook URL in clear there is a credential leaked
to each of them. Sealed with a key that lives apart from the database (the processes'
environment, ``MONITOR_SECRET_KEY``), a copy of the database alone gives none away.

How: ``cryptography``'s Fernet (AES-128-CBC with an HMAC-SHA256 over it: authenticated, so a
changed or truncated value is refused, never misread). A sealed value is ``MARK`` followed
by a Fernet token, so it is recognisable without any key: ``monitor migrate`` finds the
plaintext left by a version before this one, and ``monitor secrets rotate`` finds the
sealed values in channel configs. A value without the mark is such legacy plaintext and
reads as it is.

Rotation: ``MONITOR_SECRET_KEY`` holds one or more comma-separated keys (MultiFernet); the
first seals, every one opens. To change keys, put the new one first (``new,old``) in every
process, restart them, run ``monitor secrets rotate`` (re-seals everything with the first
key), then drop the old key.

What is sealed in ``monitor_secrets.secrets`` (sql/006): ``auth.password``, ``auth.token``, the
value of each ``headers`` pair and of each ``fills`` pair (a browser journey's secret form
values, by step index); ``auth.type``, ``auth.username`` and the header names stay readable,
since the API shows them (``SECRET_VIEW``). A check type whose fields hold secrets
(``Check.secrets``) keeps them in that shape (``checks/http_stored.py`` for http's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import asyncpg
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

MARK: Final = "enc:v1:"
# What a secret reads as in any answer. Sent back in a change where a secret is stored, it keeps it.
MASK: Final = "********"
SETTING: Final = "MONITOR_SECRET_KEY"
HOW_TO_MAKE_ONE: Final = "make one with `monitor secrets generate-key`"
# 32 bytes in url-safe base64, as Fernet.generate_key() writes them. Fernet itself takes more
# (characters after the padding are ignored), so a key with a stray character would pass.
_KEY = re.compile(r"[A-Za-z0-9_-]{43}=")
# Serialises ``reseal`` runs (the three units' `monitor migrate`, a `monitor secrets rotate`).
_RESEAL_LOCK: Final = 7_302_002


class SecretKeyError(Exception):
    """A sealed value that none of the keys opens: a key is missing from the setting, or the
    value was changed. Never carries a key or a value."""


def generate_key() -> str:
    """A new random Fernet key (32 bytes, url-safe base64: 44 characters)."""
    return Fernet.generate_key().decode()


def parse_keys(setting: str) -> list[str]:
    """The keys of a ``MONITOR_SECRET_KEY`` value, the sealing one first; a ``ValueError`` that
    says which part is not a key (by position: it never quotes one)."""
    parts = [part.strip() for part in setting.split(",") if part.strip()]
    if not parts:
        raise ValueError(f"no key given; {HOW_TO_MAKE_ONE}")
    for position, part in enumerate(parts, start=1):
        try:
            if not _KEY.fullmatch(part):
                raise ValueError
            Fernet(part)
        except (ValueError, TypeError):
            which = f"key {position} of {len(parts)}" if len(parts) > 1 else "the value"
            raise ValueError(
                f"{which} is not a Fernet key (32 random bytes in url-safe base64, 44 characters); "
                f"{HOW_TO_MAKE_ONE}"
            ) from None
    return parts


def is_sealed(value: object) -> bool:
    """Whether ``value`` is a sealed secret (a string with ``MARK``)."""
    return isinstance(value, str) and value.startswith(MARK)


class SecretBox:
    """Seals with the first of its keys, opens with any. Its ``repr`` shows no key."""

    __slots__ = ("_all", "_first", "key_count")

    def __init__(self, keys: Sequence[str | bytes]) -> None:
        if not keys:
            raise ValueError(f"no key given; {HOW_TO_MAKE_ONE}")
        fernets = [Fernet(key) for key in keys]
        self._first = fernets[0]
        self._all = MultiFernet(fernets)
        self.key_count = len(fernets)

    @classmethod
    def from_setting(cls, value: str) -> SecretBox:
        """The box of a ``MONITOR_SECRET_KEY`` value (comma-separated keys, the first seals)."""
        return cls(parse_keys(value))

    def __repr__(self) -> str:
        return f"<SecretBox keys={self.key_count}>"

    def seal(self, text: str) -> str:
        """``text`` encrypted with the first key, marked. Always seals, even a value that
        looks sealed already (a password may be anything)."""
        return MARK + self._all.encrypt(text.encode()).decode("ascii")

    def open(self, value: str) -> str:
        """The text of a sealed ``value``; a value without the mark (legacy plaintext) as it is."""
        if not is_sealed(value):
            return value
        try:
            return self._all.decrypt(_token(value)).decode()
        except InvalidToken:
            raise SecretKeyError(_CANNOT_OPEN) from None

    def is_current(self, value: str) -> bool:
        """Whether ``value`` is sealed with the first key (what ``rotate`` leaves as it is)."""
        if not is_sealed(value):
            return False
        try:
            self._first.decrypt(_token(value))
        except InvalidToken:
            return False
        return True

    def rotate(self, value: str) -> str:
        """``value`` sealed with the first key: plaintext sealed, a value sealed with another key
        re-sealed, one sealed with the first key already returned as it is."""
        if not is_sealed(value):
            return self.seal(value)
        if self.is_current(value):
            return value
        try:
            return MARK + self._all.rotate(_token(value)).decode("ascii")
        except InvalidToken:
            raise SecretKeyError(_CANNOT_OPEN) from None

    def seal_fields(self, data: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
        """A copy of ``data`` with the string value of each of ``names`` sealed (for a channel's
        config: its secret fields); absent names and other values are left alone."""
        return _map_fields(data, names, self.seal)

    def open_fields(self, data: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
        """A copy of ``data`` with the string value of each of ``names`` opened (plaintext stays)."""
        return _map_fields(data, names, self.open)


class NoSecretBox(SecretBox):
    """The box of a command run without ``MONITOR_SECRET_KEY`` that seals and opens nothing
    (``monitor accounts``, ``monitor keys``): whatever would seal or open raises ``error``,
    the one that names the setting."""

    __slots__ = ("_error",)

    def __init__(self, error: Exception) -> None:
        self._error = error
        self.key_count = 0

    def __repr__(self) -> str:
        return "<NoSecretBox>"

    def seal(self, text: str) -> str:
        raise self._error

    def open(self, value: str) -> str:
        raise self._error

    def is_current(self, value: str) -> bool:
        raise self._error

    def rotate(self, value: str) -> str:
        raise self._error


_CANNOT_OPEN = (
    f"a sealed secret opens with none of the keys in {SETTING}: the key that sealed it is "
    "missing from the setting (keep the old key after the new one until `monitor secrets rotate` "
    "has run), or the stored value was changed"
)


def _token(value: str) -> bytes:
    return value[len(MARK) :].encode("ascii", errors="replace")


def _map_fields(
    data: Mapping[str, Any], names: Iterable[str], change: Callable[[str], str]
) -> dict[str, Any]:
    copy = dict(data)
    for name in names:
        if isinstance(copy.get(name), str):
            copy[name] = change(copy[name])
    return copy


# -- monitor_secrets.secrets ------------------------------------------------------------------

# The readable part of a monitor's secrets, for a query over ``monitors m``: what no key opens
# and the API may show (auth's type and username, the secret headers' names).
SECRET_VIEW = """(SELECT jsonb_build_object(
        'auth', (x.secrets -> 'auth') - 'password' - 'token',
        'header_names', coalesce(
            (SELECT jsonb_agg(h -> 0) FROM jsonb_array_elements(x.secrets -> 'headers') h), '[]'::jsonb))
    FROM monitor_secrets x WHERE x.monitor_id = m.id) AS secret_view"""


def map_monitor_secrets(secrets: Mapping[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    """A copy of a ``monitor_secrets.secrets`` value with ``change`` applied to each secret
    string in it: ``auth.password``, ``auth.token``, each header's value, each fill's value."""
    copy = dict(secrets)
    auth = copy.get("auth")
    if isinstance(auth, Mapping):
        copy["auth"] = _map_fields(auth, ("password", "token"), change)
    for key in ("headers", "fills"):
        pairs = copy.get(key)
        if isinstance(pairs, list):
            copy[key] = [_map_header(pair, change) for pair in pairs]
    return copy


def monitor_secret_strings(secrets: Mapping[str, Any] | None) -> frozenset[str]:
    """The secret strings of a monitor's secrets (what sealing seals: a password, a token, a
    header's or a fill's value), not the readable parts beside them (auth's type, a username,
    a header's name): what a plan masks and an export writes as a reference."""
    found: set[str] = set()

    def keep(value: str) -> str:
        if value:
            found.add(value)
        return value

    if secrets is not None:
        map_monitor_secrets(secrets, keep)
    return frozenset(found)


def _map_header(pair: Any, change: Callable[[str], str]) -> Any:
    if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str):
        return [pair[0], change(pair[1])]
    return pair


def seal_monitor_secrets(box: SecretBox, secrets: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The stored form of a monitor's secrets (plaintext, as its type's ``Check.to_stored``
    makes them), every secret string sealed."""
    return None if secrets is None else map_monitor_secrets(secrets, box.seal)


def open_monitor_secrets(box: SecretBox, secrets: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A monitor's stored secrets, every sealed string opened (plaintext of old rows as it is)."""
    return None if secrets is None else map_monitor_secrets(secrets, box.open)


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (JSON) with ``change`` applied to every string in it, however deep."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {k: _map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, change) for v in value]
    return value


# -- re-sealing what is stored (monitor migrate, monitor secrets rotate) ------------------------


@dataclass
class Resealed:
    """What a ``reseal`` did, in values (one secret string each) and rows."""

    sealed: int = 0  # plaintext values sealed (monitor_secrets)
    rotated: int = 0  # values sealed with another key, re-sealed with the first
    current: int = 0  # values already sealed with the first key, left as they were
    monitor_rows: int = 0  # monitor_secrets rows written
    channel_rows: int = 0  # channels rows written
    totp_rows: int = 0  # user_totp rows written (their secrets are sealed from the start)

    def summary(self) -> str:
        return (
            f"{self.rotated} re-sealed with the first key, {self.sealed} plaintext sealed, "
            f"{self.current} already sealed with it ({self.monitor_rows} monitor, "
            f"{self.channel_rows} channel and {self.totp_rows} two-factor row(s) written)"
        )


async def reseal(conn: asyncpg.Connection, box: SecretBox, *, rotate: bool) -> Resealed:
    """Seal the plaintext left in ``monitor_secrets`` and, with ``rotate``, re-seal every sealed
    value there, in ``channels.config`` and in ``user_totp`` with the first key; in one
    transaction, serialised with other runs. Idempotent. A value no key opens raises
    :class:`SecretKeyError` naming its row, and nothing is written."""
    done = Resealed()

    def change(value: str) -> str:
        if not is_sealed(value):
            done.sealed += 1
            return box.seal(value)
        if not rotate or box.is_current(value):
            done.current += 1
            return value
        done.rotated += 1
        return box.rotate(value)

    def sealed_only(value: str) -> str:
        return change(value) if is_sealed(value) else value

    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _RESEAL_LOCK)
        rows = await conn.fetch(
            "SELECT monitor_id, secrets FROM monitor_secrets ORDER BY monitor_id FOR UPDATE"
        )
        updates = []
        for row in rows:
            try:
                new = map_monitor_secrets(row["secrets"], change)
            except SecretKeyError as exc:
                raise SecretKeyError(f"monitor {row['monitor_id']}: {exc}") from None
            if new != row["secrets"]:
                updates.append((row["monitor_id"], new))
        await conn.executemany("UPDATE monitor_secrets SET secrets = $2 WHERE monitor_id = $1", updates)
        done.monitor_rows = len(updates)
        if not rotate:
            return done
        rows = await conn.fetch("SELECT id, config FROM channels ORDER BY id FOR UPDATE")
        updates = []
        for row in rows:
            try:
                new = _map_strings(row["config"], sealed_only)
            except SecretKeyError as exc:
                raise SecretKeyError(f"channel {row['id']}: {exc}") from None
            if new != row["config"]:
                updates.append((row["id"], new))
        await conn.executemany("UPDATE channels SET config = $2 WHERE id = $1", updates)
        done.channel_rows = len(updates)
        rows = await conn.fetch("SELECT user_id, secret FROM user_totp ORDER BY user_id FOR UPDATE")
        totp: list[tuple[int, str]] = []
        for row in rows:
            try:
                secret = change(row["secret"])
            except SecretKeyError as exc:
                raise SecretKeyError(f"two factors of user {row['user_id']}: {exc}") from None
            if secret != row["secret"]:
                totp.append((row["user_id"], secret))
        await conn.executemany("UPDATE user_totp SET secret = $2 WHERE user_id = $1", totp)
        done.totp_rows = len(totp)
    return done


async def count_plaintext(conn: asyncpg.Connection) -> int:
    """How many secret values in ``monitor_secrets`` are stored in clear."""
    found = 0

    def count(value: str) -> str:
        nonlocal found
        found += not is_sealed(value)
        return value

    for row in await conn.fetch("SELECT secrets FROM monitor_secrets"):
        map_monitor_secrets(row["secrets"], count)
    return found
