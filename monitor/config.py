"""Settings from ``MONITOR_*`` environment variables, validated once at start.

One frozen object, built in one place (:func:`load`). Secrets (the bot token, the
password inside a DSN, the key that seals stored secrets) are ``SecretStr`` so they never
reach ``repr`` or a log line.
An unknown ``MONITOR_*`` variable or an invalid value stops the process with a
message that names the variable (:class:`ConfigError`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from monitor import dsn, secrets
from monitor.net.policy import InvalidTarget, parse_target_url

PREFIX = "MONITOR_"
# Read by scripts/services.sh, scripts/system-test.sh and the Makefile, not by the processes.
TOOL_VARIABLES = frozenset(
    {
        "MONITOR_PG_PORT",
        "MONITOR_REDIS_PORT",
        "MONITOR_ROOTFS",
        "MONITOR_DEBIAN_MIRROR",
        "MONITOR_STATE_DIR",
        # scripts/system-test.sh
        "MONITOR_SYSTEM_ROOTFS",
        "MONITOR_SYSTEM_LOGS",
    }
)


class ConfigError(Exception):
    """A setting is missing, unknown or invalid; the message names the variable."""


# What ``require`` adds to "is required but not set", where there is more to say.
_HOW_TO_SET = {
    "secret_key": f"it seals the secrets stored in the database; {secrets.HOW_TO_MAKE_ONE} "
    "and keep it apart from the database's backups",
}


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


# A Telegram chat id: a number (negative for groups) or an @channel name. The operator's chat
# is a setting, and the telegram channel kind (monitor/channels/telegram.py) takes its chats by
# the same rule; it lives here, at the bottom, so that the settings import no channel.
TELEGRAM_CHAT_ID = re.compile(r"^-?\d{1,20}$|^@[A-Za-z][A-Za-z0-9_]{4,31}$")


def parse_chat_id(value: Any) -> Any:
    """A chat id as Telegram takes it: a number (negative for groups) or an @channel name."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is not None and (not isinstance(value, str) or not TELEGRAM_CHAT_ID.match(value)):
        raise ValueError("must be a numeric Telegram chat id or an @channel username")
    return value


@dataclass(frozen=True, slots=True)
class Reference:
    """A reference target of the connectivity guard (``MONITOR_CONNECTIVITY_TARGETS``,
    monitor/scheduler/connectivity.py): an http(s) ``url`` (any HTTP answer counts), or, with
    ``url`` None, a TCP connection to ``host`` (IDNA, IPv6 without brackets) and ``port``."""

    text: str
    url: str | None
    host: str
    port: int


RoleName = Literal["owner", "admin", "editor", "viewer", "notify"]  # monitor/domain/context.py's ROLES


def _https_or_loopback(url: str) -> bool:
    """Whether ``url`` is https, or http to this machine (a provider in tests, or beside us)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return True
    host = parts.hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_group_roles(text: str) -> dict[str, str]:
    """``"ops=editor, sre=admin"`` -> ``{"ops": "editor", "sre": "admin"}`` (a group's name may
    hold ``=``: the last one splits); the roles are checked by the field's type."""
    pairs: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        group, sep, role = item.strip().rpartition("=")
        if not sep or not group.strip():
            raise ValueError(f"{item.strip()!r} is not group=role")
        pairs[group.strip()] = role.strip()
    return pairs


def parse_reference(text: str) -> Reference:
    """``http(s)://...`` or ``host:port`` (``[v6]:port``); ValueError saying what is wrong."""
    value = text.strip()
    if "://" in value:
        try:
            url = parse_target_url(value)
        except InvalidTarget as exc:
            raise ValueError(f"{text!r}: {exc}") from None
        return Reference(value, str(url), url.raw_host or "", url.port or 0)
    _, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or any(ch in value for ch in "/?#@"):
        raise ValueError(f"{text!r} is neither an http(s):// URL nor host:port")
    try:
        url = parse_target_url(f"http://{value}/")
    except InvalidTarget as exc:
        raise ValueError(f"{text!r}: {exc}") from None
    return Reference(value, None, url.raw_host or "", url.port or 0)


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    database_url: SecretStr | None = None
    redis_url: SecretStr | None = None
    # The sentinels' own password (their requirepass), for a redis+sentinel:// URL whose
    # sentinels have one; the URL's password is the Redis servers'.
    redis_sentinel_password: SecretStr | None = None
    telegram_bot_token: SecretStr | None = None
    telegram_api_base: str = "https://api.telegram.org"
    # Comma-separated Fernet keys: the first seals stored secrets, every one opens them
    # (monitor/secrets.py; rotation: `monitor secrets rotate`).
    secret_key: SecretStr | None = None
    api_host: str = "127.0.0.1"
    api_port: int = Field(8080, ge=0, le=65535)
    # Where users reach the api (https://monitor.example.com), for the URLs it hands out (a
    # heartbeat's ping_url); unset, each answer uses the address its request was sent to.
    public_url: str | None = Field(None, pattern=r"^https?://[^/?#\s]+(/[^?#\s]*)?$")
    dns_servers: list[str] = Field(default_factory=list)
    allow_cidrs: list[str] = Field(default_factory=list)
    min_interval_seconds: float = Field(30.0, gt=0)
    retention_days: int = Field(90, ge=1)
    # Rows of the audit log older than this are swept by the scheduler, hourly.
    audit_retention_days: int = Field(365, ge=1)
    # Browser checks' screenshots (monitor/visual/store.py): the one of each outage's start is
    # deleted after this many days (a monitor's latest and its baseline stay); the largest PNG
    # kept (a larger one is not stored; sql/026 caps a row at 8 MiB).
    screenshot_retention_days: int = Field(30, ge=1)
    screenshot_max_bytes: int = Field(2 * 1024 * 1024, ge=64 * 1024, le=8 * 1024 * 1024)
    log_format: Literal["json", "console"] = "json"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    shutdown_timeout_seconds: float = Field(10.0, gt=0)
    uvloop: bool = True
    # API limits
    api_rate_per_second: float = Field(20.0, gt=0)
    api_rate_burst: int = Field(100, ge=1)
    account_monitor_quota: int = Field(10_000, ge=1)
    # Status pages and badges: each built about once per this many seconds, whatever the
    # traffic, never shown older than this plus one build (monitor/status/cache.py), and sent
    # with a Cache-Control max-age of what is left of it.
    status_cache_seconds: float = Field(10.0, ge=1, le=300)
    # Whether search engines may index status pages (robots.txt, X-Robots-Tag): the JSON API,
    # badges and ping URLs are kept from crawlers either way.
    status_pages_indexed: bool = True
    # Dashboard sessions (monitor/domain/session_ids.py): each ends this long after its last
    # request, and at the latest this long after sign-in.
    session_idle_seconds: float = Field(12 * 3600.0, ge=1, le=30 * 86400)
    session_absolute_seconds: float = Field(7 * 86400.0, ge=1, le=365 * 86400)
    # Failed sign-ins (monitor/domain/throttle.py): this many free per e-mail and per client
    # address, then a delay doubling from the first to the longest.
    signin_free_attempts: int = Field(5, ge=1, le=1000)
    signin_address_free_attempts: int = Field(20, ge=1, le=100_000)
    signin_delay_seconds: float = Field(1.0, gt=0, le=3600)
    signin_delay_max_seconds: float = Field(900.0, gt=0, le=86400)
    # Invitations and password resets by e-mail: how long a link works (once).
    invitation_hours: float = Field(72.0, gt=0, le=30 * 24)
    password_reset_minutes: float = Field(60.0, gt=0, le=7 * 24 * 60)
    # The SMTP server the api sends invitations and resets through (not the alert channels',
    # which each name their own); unset: `monitor users invite` prints the link instead.
    smtp_host: str | None = None
    smtp_port: int | None = Field(None, ge=1, le=65535)
    smtp_security: Literal["starttls", "tls", "none"] = "starttls"
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    smtp_from: str | None = Field(None, pattern=r"^[^@\s<>]{1,64}@[^@\s<>]+$")
    # Single sign-on (monitor/oidc.py, monitor/domain/sso.py; README "Single sign-on"): an
    # OpenID Connect provider by its issuer URL (discovery at /.well-known/openid-configuration),
    # the client registered there, and the redirect URI registered with it (default: the public
    # URL's /api/v1/sso/callback). Discovery and keys are cached this many seconds.
    oidc_issuer: str | None = Field(None, pattern=r"^https?://[^?#\s]+$")
    oidc_client_id: str | None = Field(None, min_length=1, max_length=255)
    oidc_client_secret: SecretStr | None = None
    oidc_redirect_url: str | None = Field(None, pattern=r"^https?://[^?#\s]+$")
    oidc_scopes: list[str] = Field(default_factory=lambda: ["openid", "email", "profile"])
    oidc_cache_seconds: float = Field(3600.0, ge=1, le=86400)
    # The claim that lists the user's groups, and groups mapped to roles ("ops=editor,sre=admin"):
    # when set, the role in MONITOR_SSO_ACCOUNT follows the groups at every sign-in.
    oidc_groups_claim: str = Field("groups", min_length=1, max_length=100)
    oidc_group_roles: dict[str, RoleName] = Field(default_factory=dict)
    # Where a person signing in by SSO or the proxy header whom no user matches (by e-mail) is
    # created, and with which role (unset: nobody is created, only existing users sign in).
    sso_account: int | None = Field(None, ge=1)
    sso_role: RoleName = "viewer"
    # A header set by an authenticating reverse proxy with the user's e-mail (Remote-Email,
    # X-Forwarded-Email), honoured only from peers in these networks.
    trusted_proxy_header: str | None = Field(None, pattern=r"^[A-Za-z0-9-]{1,64}$")
    trusted_proxy_cidrs: list[str] = Field(default_factory=list)
    # Health, readiness and metrics listeners of the scheduler, alerter and worker (0 turns one off).
    probe_host: str = "127.0.0.1"
    scheduler_http_port: int = Field(8081, ge=0, le=65535)
    alerter_http_port: int = Field(8082, ge=0, le=65535)
    worker_http_port: int = Field(8083, ge=0, le=65535)
    # Scheduler
    check_concurrency: int = Field(500, ge=1)
    # HTTP checks: a response head as large as browsers take (Chrome: 256 KiB in all), and the
    # upper bound of a monitor's max_body_bytes (the body read for its assertions).
    http_max_head_bytes: int = Field(256 * 1024, ge=16 * 1024, le=16 * 1024 * 1024)
    http_max_headers: int = Field(1000, ge=100, le=100_000)
    http_max_body_bytes: int = Field(10 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    # A PEM file of CAs trusted in addition to the system's (a private CA of internal sites).
    ca_file: str | None = None
    # Lets monitors set tls_verify false (their results then say the certificate was not checked).
    allow_insecure_tls: bool = False
    tick_slot_ms: float = Field(100.0, ge=0, le=60_000)
    # What waits between a monitor's ticks (monitor/scheduler/tickers.py): one task per monitor,
    # or a chain of loop timers; same due times, skips and checks, measured in bench/README.md.
    ticker: Literal["task", "timer"] = "task"
    write_batch_rows: int = Field(1000, ge=1)
    write_interval_seconds: float = Field(1.0, gt=0)
    write_buffer_max_rows: int = Field(1_000_000, ge=1)
    # The local spool of results not yet written (monitor/scheduler/spool.py), replayed at start
    # so that a SIGKILL loses none: its directory (default: systemd's StateDirectory, else
    # ~/.local/state/monitor, each with spool/), its bound (0 turns it off), and how often at
    # most it is fdatasynced (what an operating-system crash may lose; a killed process loses none).
    spool_dir: str | None = None
    spool_max_mb: int = Field(256, ge=0, le=1_000_000)
    spool_sync_ms: int = Field(1000, ge=10, le=60_000)
    reconcile_interval_seconds: float = Field(30.0, gt=0)
    # Several schedulers (monitor/scheduler/membership.py): each holds a lease of this many
    # seconds in the database, renewed four times per lease; the monitors of one that stops
    # renewing move to the others once it lapsed. Its name (default host:pid) must be unique
    # among the running schedulers; its location labels the results it writes.
    lease_seconds: float = Field(10.0, ge=1, le=300)
    scheduler_name: str | None = Field(None, pattern=r"^[\w.:@-]{1,100}$")
    location: str = Field("default", pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")
    # Alerter
    alert_claim_idle_seconds: float = Field(60.0, gt=0)
    alert_max_attempts: int = Field(10, ge=1, le=100)
    alert_backoff_base_seconds: float = Field(1.0, gt=0)
    alert_backoff_max_seconds: float = Field(60.0, gt=0)
    # Alerts older than this (seconds) when they can first be sent (no bot token for a while,
    # Telegram down for hours) arrive as one summary per chat, not one by one.
    alert_max_age: float = Field(3600.0, gt=0)
    # Heavy-check workers (monitor/worker/): the jobs one runs at once, the memory one run may
    # use (its browser is killed past it), and how long a job may sit unrenewed in a worker's
    # hands before another takes it over (a dead worker's: monitor/keys.py).
    worker_concurrency: int = Field(2, ge=1, le=64)
    worker_memory_mb: int = Field(1024, ge=128, le=65536)
    worker_claim_idle_seconds: float = Field(15.0, ge=1, le=3600)
    # The Lighthouse CLI of page-speed checks (checks/pagespeed.py): its path (cli/index.js, or
    # npm's `lighthouse` link); unset, the pinned install of `make browser-tools`
    # (tools/lighthouse), else `lighthouse` on PATH (`npm i -g -E lighthouse@12.2.3`).
    lighthouse_path: str | None = Field(None, min_length=1, max_length=4096)
    # Whether the checker itself is cut off (monitor/scheduler/connectivity.py): reference targets
    # (http(s) URLs, or host:port for a TCP connect); without them, the share of monitors failing
    # in the window, judged once at least min_monitors were checked in it.
    connectivity_targets: list[str] = Field(default_factory=list)
    connectivity_window_seconds: float = Field(60.0, gt=0)
    connectivity_min_monitors: int = Field(5, ge=1)
    connectivity_failing_share: float = Field(0.8, gt=0, le=1)
    # Where the operator hears that the checker lost its network and got it back: a Telegram
    # chat (with MONITOR_TELEGRAM_BOT_TOKEN) and/or an alert channel by id.
    operator_chat: str | None = None
    operator_channel: int | None = Field(None, ge=1)

    @field_validator(
        "dns_servers", "allow_cidrs", "connectivity_targets", "trusted_proxy_cidrs", mode="before"
    )
    @classmethod
    def _csv(cls, value: object) -> object:
        return _split_csv(value)

    @field_validator("allow_cidrs", "trusted_proxy_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError as exc:
                raise ValueError(f"{item!r} is not a network in CIDR notation") from exc
        return value

    @field_validator("connectivity_targets")
    @classmethod
    def _references(cls, value: list[str]) -> list[str]:
        return [parse_reference(item).text for item in value]  # a ValueError that names the item

    @field_validator("operator_chat", mode="before")
    @classmethod
    def _operator_chat(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return parse_chat_id(value.strip() if isinstance(value, str) else value)

    @field_validator("ca_file")
    @classmethod
    def _ca_file(cls, value: str | None) -> str | None:
        if not value:
            return None
        try:
            ssl.create_default_context().load_verify_locations(cafile=value)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot load CA certificates from {value!r}: {exc}") from exc
        return value

    @field_validator("telegram_api_base")
    @classmethod
    def _base(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @field_validator("database_url")
    @classmethod
    def _dsn(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            dsn.parse_postgres(value.get_secret_value())  # several hosts need read-write (monitor/dsn.py)
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            dsn.parse_redis(value.get_secret_value())  # plain, or redis+sentinel:// (monitor/dsn.py)
        return value

    @field_validator("secret_key")
    @classmethod
    def _secret_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        secrets.parse_keys(value.get_secret_value())  # a ValueError that never quotes a key
        return value

    @field_validator("oidc_scopes", mode="before")
    @classmethod
    def _scopes(cls, value: object) -> object:
        return value.replace(",", " ").split() if isinstance(value, str) else value

    @field_validator("oidc_group_roles", mode="before")
    @classmethod
    def _group_roles(cls, value: object) -> object:
        return parse_group_roles(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _sso(self) -> Settings:
        if self.oidc_issuer is not None:
            if self.oidc_client_id is None:
                raise ValueError("MONITOR_OIDC_ISSUER needs MONITOR_OIDC_CLIENT_ID")
            if self.oidc_redirect_url is None and self.public_url is None:
                raise ValueError("MONITOR_OIDC_ISSUER needs MONITOR_OIDC_REDIRECT_URL or MONITOR_PUBLIC_URL")
            if not _https_or_loopback(self.oidc_issuer):
                raise ValueError("MONITOR_OIDC_ISSUER must be https:// (http only on loopback)")
            if "openid" not in self.oidc_scopes:
                raise ValueError("MONITOR_OIDC_SCOPES must include openid")
        if self.trusted_proxy_header is not None and not self.trusted_proxy_cidrs:
            raise ValueError("MONITOR_TRUSTED_PROXY_HEADER needs MONITOR_TRUSTED_PROXY_CIDRS")
        return self

    @property
    def oidc_redirect(self) -> str:
        """The redirect URI to register with the provider."""
        if self.oidc_redirect_url is not None:
            return self.oidc_redirect_url
        assert self.public_url is not None
        return self.public_url.rstrip("/") + "/api/v1/sso/callback"

    def require(self, *names: str) -> None:
        """Fail fast when a process needs a setting that is not set."""
        for name in names:
            if getattr(self, name) is None:
                hint = f" ({_HOW_TO_SET[name]})" if name in _HOW_TO_SET else ""
                raise ConfigError(f"{PREFIX}{name.upper()} is required but not set{hint}")

    @property
    def dsn(self) -> str:
        assert self.database_url is not None
        return self.database_url.get_secret_value()

    @property
    def redis_dsn(self) -> str:
        assert self.redis_url is not None
        return self.redis_url.get_secret_value()

    def secret_box(self) -> secrets.SecretBox:
        """The box of ``MONITOR_SECRET_KEY``; a ConfigError when it is not set."""
        self.require("secret_key")
        assert self.secret_key is not None
        return secrets.SecretBox.from_setting(self.secret_key.get_secret_value())


def redact_url(url: str) -> str:
    """The URL with any password replaced, for log lines."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def load(environ: Mapping[str, str] | None = None) -> Settings:
    env = dict(os.environ if environ is None else environ)
    known = {PREFIX + name.upper() for name in Settings.model_fields}
    # Variables the settings do not read but that other tools of ours use.
    known |= TOOL_VARIABLES
    unknown = sorted(k for k in env if k.startswith(PREFIX) and k not in known)
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]} (known: {', '.join(sorted(known))})")
    try:
        return Settings.model_validate(
            {k[len(PREFIX) :].lower(): v for k, v in env.items() if k in known and k not in TOOL_VARIABLES}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        if not first["loc"]:  # a rule across settings, whose message names them
            raise ConfigError(str(first["msg"]).removeprefix("Value error, ")) from None
        name = PREFIX + str(first["loc"][0]).upper() if first["loc"] else PREFIX
        raise ConfigError(f"{name}: {first['msg']}") from None
