"""Chromium's command line for a browser run (``chromium.chromium_args``): what keeps every
connection on the run's proxy is there, whatever else is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.browser.chromium import chromium_args

GUARDS = (
    "--proxy-server=http://127.0.0.1:4321",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--disable-quic",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--dns-prefetch-disable",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--remote-debugging-address=127.0.0.1",
    "--headless=new",
    "--user-data-dir=/tmp/run/profile",
)


@pytest.mark.parametrize(
    ("root", "extra", "sandboxed"),
    [(False, (), True), (True, (), False), (False, ("--lang=cs",), True)],
)
def test_the_guards_are_always_there(root: bool, extra: tuple[str, ...], sandboxed: bool) -> None:
    args = chromium_args(Path("/tmp/run/profile"), 4321, root=root, extra=extra)
    assert [flag for flag in GUARDS if flag not in args] == []
    assert ("--no-sandbox" not in args) is sandboxed
    assert all(flag in args for flag in extra)
    assert args[-1] == "about:blank"  # the one page it opens by itself, fetched from nowhere
