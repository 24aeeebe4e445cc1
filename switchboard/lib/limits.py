"""Request rate limits for the surfaces that outsiders reach: OTLP, MCP and webhooks.

One ``hit(surface, dimension, key, per_minute)`` per check: ``surface`` and ``dimension`` name
the budget (``"otlp", "address"``; ``"mcp", "endpoint"``), ``key`` whose it is (a client
address, an endpoint id, a source slug), and ``per_minute`` how many requests it allows in any
minute; 0 means no limit. The caller passes the rate (a runtime setting, read by the caller), so
this module imports no app and every surface can use it.

The counting is the ``limits`` library's sliding-window counter: each budget is two fixed
one-minute counters, the previous one weighted by how much of it still overlaps the sliding
minute, so a burst at a window boundary cannot get twice the rate through. The counters live in
this process's memory, or in Redis when ``REDIS_URL`` is set, where every process of a
deployment shares them. A refusal says how long until a request would pass again
(``Verdict.retry_after``, whole seconds, at least 1), for the ``Retry-After`` header.

A limiter that cannot reach its store lets the request through (and logs it): an outage of the
counter store must not take the product down with it; the database behind each surface still
bounds what a flood can do.

Async only: every caller is an ASGI app. The memory store and the Redis client are bound to the
event loop that made them, so there is one limiter per running loop (one under daphne).
"""

from __future__ import annotations

import logging
import math
import time
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from limits import RateLimitItemPerMinute
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

logger = logging.getLogger(__name__)

KEY_PREFIX = "switchboard-limits"


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    retry_after: int = 0


ALLOWED = Verdict(True)


def _storage(redis_url: str | None) -> Storage:
    if not redis_url:
        return MemoryStorage()
    # limits wants its async scheme; the redis-py client (already a dependency through
    # channels-redis) rather than the library's default, coredis.
    scheme, _, rest = redis_url.partition("://")
    return RedisStorage(f"async+{scheme}://{rest}", implementation="redispy", key_prefix=KEY_PREFIX)


class Limiter:
    """Budgets counted in one store (memory or Redis); see the module docstring."""

    def __init__(self, redis_url: str | None = None) -> None:
        self.shared = bool(redis_url)
        self._strategy = SlidingWindowCounterRateLimiter(_storage(redis_url))
        self._items: dict[int, RateLimitItemPerMinute] = {}

    def _item(self, per_minute: int) -> RateLimitItemPerMinute:
        item = self._items.get(per_minute)
        if item is None:
            item = self._items.setdefault(per_minute, RateLimitItemPerMinute(per_minute))
        return item

    async def hit(self, surface: str, dimension: str, key: str, per_minute: int) -> Verdict:
        """Count one request against the budget; ``Verdict(False, seconds)`` when it is spent."""
        if per_minute <= 0:
            return ALLOWED
        item = self._item(per_minute)
        try:
            if await self._strategy.hit(item, surface, dimension, key):
                return ALLOWED
            stats = await self._strategy.get_window_stats(item, surface, dimension, key)
        except Exception:
            logger.exception(
                "rate limit %s/%s: the counter store failed; letting it pass", surface, dimension
            )
            return ALLOWED
        return Verdict(False, max(1, math.ceil(stats.reset_time - time.time())))

    async def clear(self, surface: str, dimension: str, key: str, per_minute: int) -> None:
        """Forget a budget's count (tests, and an operator lifting a block at once)."""
        await self._strategy.clear(self._item(per_minute), surface, dimension, key)


_limiters: weakref.WeakKeyDictionary[AbstractEventLoop, Limiter] = weakref.WeakKeyDictionary()


def limiter(redis_url: str | None) -> Limiter:
    """The limiter of the running event loop, made on first use with ``redis_url``'s store."""
    loop = get_running_loop()
    found = _limiters.get(loop)
    if found is None:
        found = _limiters[loop] = Limiter(redis_url)
    return found


def client_address(scope: Mapping[str, Any]) -> str:
    """The client's address from an ASGI scope (the proxy's view when daphne trusts it)."""
    client = scope.get("client")
    if client and client[0]:
        return str(client[0])
    return "unknown"
