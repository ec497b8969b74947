"""The ping check's pure parts as tables: its settings, the timing plan, the verdict and its
cause, the figures kept, and the choice of socket (with a fake ``socket.socket``)."""

from __future__ import annotations

import errno
import os
import socket
from typing import Any

import pytest
from pydantic import ValidationError

from monitor.checks import REGISTRY
from monitor.checks.ping import (
    INTERVAL_SECONDS,
    WAIT_SHARE,
    Echoes,
    IcmpUnavailable,
    PingCheck,
    PingOptions,
    PingSettings,
    details,
    icmp_mode,
    judge,
    not_permitted,
    plan,
)
from monitor.net.policy import normal_host


@pytest.mark.parametrize(
    ("given", "host"),
    [
        ("example.com", "example.com"),
        ("  Example.COM.  ", "example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("192.0.2.1", "192.0.2.1"),
        ("2001:db8::1", "2001:db8::1"),
        ("[2001:DB8::1]", "2001:db8::1"),
        ("::ffff:192.0.2.1", "::ffff:c000:201"),
        ("router_1.lan", "router_1.lan"),
    ],
)
def test_hosts_are_normalised(given: str, host: str) -> None:
    assert normal_host(given) == host


NOT_A_HOST = "expected a host name or an IP address (not a URL, no port)"


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("", NOT_A_HOST),
        ("https://example.com", NOT_A_HOST),
        ("example.com/x", NOT_A_HOST),
        ("example.com:80", NOT_A_HOST),
        ("192.0.2.1:80", NOT_A_HOST),
        ("[2001:db8::1]:80", NOT_A_HOST),
        ("user@example.com", NOT_A_HOST),
        ("2001:db8::zz", NOT_A_HOST),
        ("exa mple.com", "URL contains whitespace or control characters"),
        ("bad\x00host", "URL contains whitespace or control characters"),
        ("-bad-.example", "invalid host name '-bad-.example'"),
        ("127.1", "non-canonical numeric host '127.1': only a dotted quad like 192.0.2.1 is accepted"),
        (
            "0x7f000001",
            "non-canonical numeric host '0x7f000001': only a dotted quad like 192.0.2.1 is accepted",
        ),
    ],
)
def test_what_is_not_a_host(given: str, reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        normal_host(given)
    assert str(caught.value) == reason


def test_settings_defaults_and_normal_host() -> None:
    settings = PingSettings.model_validate({"host": "Router.Example."})
    assert settings.model_dump() == {"host": "router.example", "count": 3, "max_loss_percent": 50.0}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "host"),
        ({"host": ""}, "host"),
        ({"host": "http://example.com/"}, "host"),
        ({"host": "a" * 261}, "host"),
        ({"host": "example.com", "count": 0}, "count"),
        ({"host": "example.com", "count": 11}, "count"),
        ({"host": "example.com", "count": "3"}, "count"),
        ({"host": "example.com", "count": 2.0}, "count"),
        ({"host": "example.com", "max_loss_percent": 100}, "max_loss_percent"),
        ({"host": "example.com", "max_loss_percent": -1}, "max_loss_percent"),
        ({"host": "example.com", "max_loss_percent": "50"}, "max_loss_percent"),
        ({"host": "example.com", "max_loss_percent": float("nan")}, "max_loss_percent"),
        ({"host": "example.com", "interval": 1}, "interval"),
    ],
)
def test_settings_refuse(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PingSettings.model_validate(body)
    assert [e["loc"][0] for e in caught.value.errors()] == [field]


@pytest.mark.parametrize(
    ("host", "target"),
    [
        ("example.com", "ping://example.com"),
        ("192.0.2.1", "ping://192.0.2.1"),
        ("2001:db8::1", "ping://[2001:db8::1]"),
    ],
)
def test_target_and_hosts(host: str, target: str) -> None:
    check = PingCheck()
    settings = PingSettings.model_validate({"host": host})
    assert (check.target(settings), check.hosts(settings)) == (target, (host,))


@pytest.mark.parametrize(
    ("stored", "options"),
    [
        ({"host": "example.com"}, PingOptions("example.com", 3, 50.0, named=True)),
        (
            {"host": "192.0.2.1", "count": 10, "max_loss_percent": 0},
            PingOptions("192.0.2.1", 10, 0.0, named=False),
        ),
        ({"host": "2001:db8::1", "count": 1}, PingOptions("2001:db8::1", 1, 50.0, named=False)),
    ],
)
def test_options_from_stored_settings(stored: dict[str, Any], options: PingOptions) -> None:
    assert PingCheck().options(stored, None) == options


@pytest.mark.parametrize("stored", [None, {}, {"count": 3}, {"host": "example.com", "count": 99}])
def test_options_refuse_what_cannot_run(stored: dict[str, Any] | None) -> None:
    with pytest.raises(ValueError):
        PingCheck().options(stored, None)


def test_registered() -> None:
    assert isinstance(REGISTRY.get("ping"), PingCheck)
    assert REGISTRY.get("ping").Settings is PingSettings


# -- the timing plan ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "count", "spacing", "wait"),
    [
        (10.0, 3, INTERVAL_SECONDS, (9.0 - 0.4) / 3),
        (10.0, 1, INTERVAL_SECONDS, 9.0),
        (10.0, 10, INTERVAL_SECONDS, (9.0 - 1.8) / 10),
        (2.0, 10, 0.05, (1.8 - 0.45) / 10),  # a short timeout shortens the spacing too
        (0.5, 3, 0.5 / 12, (0.45 - 2 * 0.5 / 12) / 3),
    ],
)
def test_plan_fits_the_timeout(budget: float, count: int, spacing: float, wait: float) -> None:
    got = plan(budget, count)
    assert got == pytest.approx((spacing, wait))
    # Every echo lost, each after its whole wait: still within the timeout's share.
    assert count * got[1] + (count - 1) * got[0] == pytest.approx(budget * WAIT_SHARE)
    assert got[1] > 0


# -- the verdict --------------------------------------------------------------------------

A = "10.1.2.3"


def echoes(count: int, sent: int, rtts: list[float], problem: str | None = None) -> Echoes:
    seen = Echoes(A, count, sent, list(rtts))
    if problem:
        seen.note(problem)
    return seen


@pytest.mark.parametrize(
    ("seen", "max_loss", "cause"),
    [
        (echoes(3, 3, [1.0, 2.0, 3.0]), 50, None),
        (echoes(3, 3, [1.0, 2.0]), 50, None),  # one in three lost: routine
        (echoes(3, 3, [1.0]), 50, f"66.7 % packet loss from {A} (above 50 %)"),
        (echoes(3, 3, []), 50, f"no reply from {A} (3 of 3 packets lost)"),
        (echoes(2, 2, [1.0]), 50, None),  # 50 % is not above 50 %
        (echoes(10, 10, [1.0] * 9), 0, f"10 % packet loss from {A} (above 0 %)"),
        (echoes(10, 10, [1.0] * 9), 10, None),
        (echoes(3, 3, [1.0, 2.0]), 33.3, None),  # judged on the loss as shown: 33.3 %
        (echoes(3, 3, [1.0, 2.0]), 33.2, f"33.3 % packet loss from {A} (above 33.2 %)"),
        (echoes(1, 1, []), 99.5, f"no reply from {A} (1 of 1 packets lost)"),  # none at all: always down
        (
            echoes(3, 3, [], "Destination host unreachable"),
            50,
            f"no reply from {A} (3 of 3 packets lost): Destination host unreachable",
        ),
        (
            echoes(3, 0, [], "[Errno 101] Network is unreachable"),
            50,
            f"cannot send to {A}: Network is unreachable (3 of 3 packets not sent)",
        ),
        (echoes(3, 2, [1.0, 1.0], "[Errno 101] Network is unreachable"), 50, None),  # one not sent
        (echoes(3, 1, [], None), 50, f"no reply from {A} (3 of 3 packets lost)"),  # cut by the timeout
    ],
)
def test_judge(seen: Echoes, max_loss: float, cause: str | None) -> None:
    assert judge(seen, max_loss) == cause


FIGURES = ("sent", "received", "loss_percent", "rtt_min_ms", "rtt_avg_ms", "rtt_max_ms")


@pytest.mark.parametrize(
    ("seen", "figures"),
    [
        (echoes(3, 3, [1.0, 2.5, 3.0004]), (3, 3, 0.0, 1.0, 2.167, 3.0)),
        (echoes(3, 3, [4.0]), (3, 1, 66.7, 4.0, 4.0, 4.0)),
        (echoes(3, 0, []), (0, 0, 100.0, None, None, None)),
    ],
)
def test_details(seen: Echoes, figures: tuple[Any, ...]) -> None:
    assert details(seen) == {"address": A, **dict(zip(FIGURES, figures, strict=True))}


def test_the_first_problem_is_kept() -> None:
    seen = echoes(3, 0, [], "[Errno 113] No route to host")
    seen.note("Destination host unreachable")
    assert seen.problem == "No route to host"


# -- which socket -------------------------------------------------------------------------


def opener(**outcomes: int | None) -> Any:
    """A fake ``socket.socket``: ``dgram``/``raw`` name the errno it fails with (None: opens)."""

    class Fake:
        def close(self) -> None:
            pass

    def open_socket(family: int, kind: int, proto: int) -> Fake:
        code = outcomes.get("dgram" if kind == socket.SOCK_DGRAM else "raw")
        if code is not None:
            raise OSError(code, os.strerror(code))  # EACCES and EPERM make a PermissionError
        return Fake()

    return open_socket


@pytest.mark.parametrize(
    ("family", "outcomes", "privileged"),
    [
        (4, {}, False),  # ping_group_range covers us: unprivileged first
        (6, {}, False),
        (4, {"dgram": errno.EACCES}, True),  # outside the range, but CAP_NET_RAW
        (6, {"dgram": errno.EACCES}, True),
    ],
)
def test_icmp_mode(family: int, outcomes: dict[str, int], privileged: bool) -> None:
    assert icmp_mode(family, opener(**outcomes)) is privileged


@pytest.mark.parametrize(
    ("family", "outcomes", "cause"),
    [
        (4, {"dgram": errno.EACCES, "raw": errno.EPERM}, "ping not permitted: group "),
        (6, {"dgram": errno.EAFNOSUPPORT}, "cannot ping: IPv6 is not available on this host"),
        (4, {"dgram": errno.EMFILE}, "cannot open an ICMP socket: Too many open files"),
    ],
)
def test_icmp_unavailable(family: int, outcomes: dict[str, int], cause: str) -> None:
    with pytest.raises(IcmpUnavailable) as caught:
        icmp_mode(family, opener(**outcomes))
    assert str(caught.value).startswith(cause)


def test_not_permitted_says_what_to_configure() -> None:
    text = not_permitted(998, "1 0")
    assert text == (
        "ping not permitted: group 998 is outside net.ipv4.ping_group_range (1 0) and the process lacks "
        'CAP_NET_RAW; set sysctl net.ipv4.ping_group_range="0 2147483647" (see docs/check-types.md, ping)'
    )
    assert len(text) < 300  # never clipped in an alert


def test_the_decision_is_kept_per_family() -> None:
    calls: list[int] = []

    def decide(family: int) -> bool:
        calls.append(family)
        return family == 6

    check = PingCheck(decide=decide)
    assert [check.privileged(4), check.privileged(4), check.privileged(6), check.privileged(6)] == [
        False,
        False,
        True,
        True,
    ]
    assert calls == [4, 6]
