"""A host of its own for the ping tests: a network namespace joined to this one by a veth pair.

``NetnsHost.create()`` makes a namespace with a unique name, a veth pair (one end here, one end
inside), a free /30 of 10.201.0.0/16 (``.1`` here, ``.2`` inside: ``address``, allowed by
``cidr``) and a /126 of fd00:201::/64 (``address6``, ``cidr6``), so the namespace answers ping
as any host on the network would. ``ignore_ping()`` makes it drop echo requests (the kernel's
``icmp_echo_ignore_all``, per namespace); ``limit_replies()`` rate-limits its replies (the
kernel's ICMP rate limit, which lets the first through and drops the next ones);
``unreachable()`` gives an address the namespace answers with ICMP "host unreachable"; and
``icmp()`` reads its ICMP counters, which count every echo request that arrived, answered or
not: the proof of what a check sent, or that nothing was sent at all.

The quorum test's locations (``locations.py``) are namespaces made the same way, reached at
``outside_address``, this host's end of the pair.

Needs root and ``ip`` (iproute2); the ``netns_host`` fixture skips the test, saying why, where
a namespace cannot be made, and always removes what it made. Only ``ip`` and ``sysctl`` run,
by argument list; nothing here sends a packet.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Network, ip_network

import pytest

POOL = IPv4Network("10.201.0.0/16")
POOL6 = "fd00:201::"
_counter = itertools.count()


def _ip(*argv: str, namespace: str | None = None) -> str:
    """``ip ARGV`` here, or the command ``ARGV`` inside ``namespace``; its output."""
    command = ["ip", "netns", "exec", namespace, *argv] if namespace else ["ip", *argv]
    done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _free_block() -> int:
    """The index of a /30 of POOL that no interface here has an address in."""
    used = _ip("-o", "-4", "addr", "show")
    for _ in range(100):
        index = random.randrange(1, POOL.num_addresses // 4)
        net = IPv4Network((int(POOL.network_address) + 4 * index, 30))
        if f" {net.network_address + 1}/" not in used and f" {net.network_address + 2}/" not in used:
            return index
    raise RuntimeError(f"no free /30 in {POOL}")


@dataclass
class NetnsHost:
    namespace: str
    outside: str  # the veth end in this namespace
    address: str  # the namespace's IPv4 address
    cidr: str  # the /30 both ends are in: what a test allows
    address6: str | None  # its IPv6 address (None: IPv6 is off here)
    cidr6: str | None

    @property
    def outside_address(self) -> str:
        """This host's end of the veth pair: an address the namespace reaches and nothing
        beyond this host and its namespaces does."""
        return str(IPv4Network(self.cidr).network_address + 1)

    @classmethod
    def create(cls, prefix: str = "monitor-ping") -> NetnsHost:
        if os.geteuid() != 0:
            raise RuntimeError("creating a network namespace needs root")
        if shutil.which("ip") is None:
            raise RuntimeError("iproute2's ip is not installed")
        n = next(_counter)
        tag = f"{os.getpid() % 100000}x{n}"
        index = _free_block()
        net = IPv4Network((int(POOL.network_address) + 4 * index, 30))
        here, there = str(net.network_address + 1), str(net.network_address + 2)
        v6 = os.path.exists("/proc/sys/net/ipv6") and _read("/proc/sys/net/ipv6/conf/all/disable_ipv6") == "0"
        host = cls(f"{prefix}-{tag}", f"mp{tag}", there, str(net), None, None)
        inside = f"mq{tag}"
        _ip("netns", "add", host.namespace)
        try:
            _ip("link", "add", host.outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", host.namespace)
            _ip("addr", "add", f"{here}/30", "dev", host.outside)
            _ip("link", "set", host.outside, "up")
            host.run("ip", "addr", "add", f"{there}/30", "dev", inside)
            host.run("ip", "link", "set", inside, "up")
            host.run("ip", "link", "set", "lo", "up")
            if v6:
                block = ip_network(f"{POOL6}{4 * index:x}/126")
                here6, there6 = str(block.network_address + 1), str(block.network_address + 2)
                _ip("addr", "add", f"{here6}/126", "dev", host.outside, "nodad")
                host.run("ip", "addr", "add", f"{there6}/126", "dev", inside, "nodad")
                host.address6, host.cidr6 = there6, str(block)
        except BaseException:
            host.remove()
            raise
        return host

    def remove(self) -> None:
        """Delete the namespace (which deletes the veth pair with it), and the outside end
        in case the namespace never got it."""
        subprocess.run(["ip", "link", "del", self.outside], capture_output=True, timeout=10, check=False)
        subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True, timeout=10, check=False)

    def run(self, *argv: str) -> str:
        """Run a command inside the namespace; its output (RuntimeError if it fails)."""
        return _ip(*argv, namespace=self.namespace)

    def sysctl(self, **values: str | int) -> None:
        """Set sysctls inside the namespace (``net__ipv4__ping_group_range="0 1"``)."""
        self.run("sysctl", "-q", "-w", *(f"{k.replace('__', '.')}={v}" for k, v in values.items()))

    def ignore_ping(self, ignore: bool = True) -> None:
        """Drop (or answer again) every echo request, IPv4 and IPv6."""
        flag = int(ignore)
        values: dict[str, str | int] = {"net__ipv4__icmp_echo_ignore_all": flag}
        if self.address6:
            values["net__ipv6__icmp__echo_ignore_all"] = flag
        self.sysctl(**values)

    def limit_replies(self) -> None:
        """Rate-limit echo replies (IPv4) to one a minute per destination: the kernel lets
        the first through (or the first few) and drops the rest."""
        self.sysctl(net__ipv4__icmp_ratemask=1, net__ipv4__icmp_ratelimit=60000)

    def unreachable(self) -> str:
        """An address routed here through the namespace, which answers it with ICMP "host
        unreachable" (a router with no way on): what a check gets instead of echo replies.
        It is in a /30 of POOL of its own, allowed by ``POOL``'s /16."""
        net = IPv4Network((int(POOL.network_address) + 4 * _free_block(), 30))
        far = str(net.network_address + 1)
        _ip("route", "add", f"{far}/32", "via", self.address, "dev", self.outside)
        self.sysctl(net__ipv4__ip_forward=1)
        self.run("ip", "route", "add", "unreachable", f"{far}/32")
        return far

    def icmp(self) -> dict[str, int]:
        """The namespace's ICMP counters: ``echo_requests`` received and ``echo_replies`` sent,
        IPv4 and IPv6 together."""
        counters: dict[str, int] = {}
        for text in (self.run("cat", "/proc/net/snmp"), self.run("cat", "/proc/net/snmp6")):
            lines = text.splitlines()
            for names, values in itertools.pairwise(lines):
                if names.startswith("Icmp:") and values.startswith("Icmp:"):
                    counters.update(zip(names.split()[1:], map(int, values.split()[1:]), strict=True))
            for line in lines:
                parts = line.split()
                if len(parts) == 2 and parts[0].startswith("Icmp6") and parts[1].isdigit():
                    counters[parts[0]] = int(parts[1])
        return {
            "echo_requests": counters.get("InEchos", 0) + counters.get("Icmp6InEchos", 0),
            "echo_replies": counters.get("OutEchoReps", 0) + counters.get("Icmp6OutEchoReplies", 0),
        }


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


@pytest.fixture(name="netns_host")
def netns_host_fixture() -> Iterator[NetnsHost]:
    """A namespace host for one test, removed after it; skips where none can be made."""
    try:
        host = NetnsHost.create()
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot create a network namespace host: {exc}")
    try:
        yield host
    finally:
        host.remove()
