"""``/ping/<token>`` (and ``/start``, ``/fail``): where a heartbeat monitor's job reports in
(``monitor.domain.pings`` judges, limits and stores the ping; why it is public and cheap is
told there). No API key: the token is the credential."""

from __future__ import annotations

from aiohttp import web

from monitor.api.guard import TokenBuckets
from monitor.domain import pings
from monitor.domain.pings import PingDesk

PINGS = web.AppKey("pings", PingDesk)


def limiter() -> TokenBuckets:
    """The desk's rate buckets, one per token, in the api's memory."""
    return TokenBuckets(pings.RATE_PER_SECOND, pings.RATE_BURST)


async def ping(request: web.Request) -> web.Response:
    read = request.content.read if request.can_read_body else None
    await pings.ping(
        request.app[PINGS], request.match_info["token"], request.match_info.get("kind", ""), read
    )
    return web.Response(text="OK\n")


def add_routes(router: web.UrlDispatcher) -> None:
    for path in ("/ping/{token}", "/ping/{token}/{kind}"):
        router.add_route("GET", path, ping)
        router.add_route("HEAD", path, ping)  # curl -I
        router.add_route("POST", path, ping)
