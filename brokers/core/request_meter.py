"""Per-API request accounting for the metrics endpoint, as a Dispatcher around the real one.

Installed only when the broker serves metrics (``--metrics``): without it the server calls the
request dispatcher directly and a request costs what it always cost. With it, each request
adds a clock read before and after, a length and a bucket search; no record is decoded.

Kafka's request metrics, mapped: ``RequestsPerSec`` -> requests by API, ``TotalTimeMs`` -> a
histogram of the time from the frame's dispatch to its answer being ready (an awaitable answer,
a long-poll Fetch, included), ``BytesInPerSec`` / ``BytesOutPerSec`` -> request and response
bytes by API (frames with their size prefix). Requests the dispatcher refused (a frame it could
not parse, an unknown API) count as errors by kind, as do handler failures.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import cast

from brokers.core.errors import ProtocolViolation
from brokers.core.server import Buffers, Dispatcher, Reply

# Upper bounds (seconds) of the request-time histogram: 0.25 ms to 10 s, Kafka-like spread.
BUCKETS = (0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
           2.5, 5.0, 10.0)
_PREFIX = 4


@dataclass
class ApiStats:
    requests: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    time_sum_s: float = 0.0
    # One count per bucket of BUCKETS, plus the overflow (+Inf) last; not cumulative.
    time_counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))


class MeteredDispatcher:
    """A Dispatcher that counts what it passes to ``inner`` (see the module docstring)."""

    def __init__(self, inner: Dispatcher) -> None:
        self._inner = inner
        self.apis: dict[int, ApiStats] = {}
        self.errors: dict[str, int] = {}

    def dispatch(self, frame: memoryview, peer: str) -> Reply:
        start = time.perf_counter()
        try:
            reply = self._inner.dispatch(frame, peer)
        except ProtocolViolation:
            self.errors["protocol_violation"] = self.errors.get("protocol_violation", 0) + 1
            raise
        except Exception:
            self.errors["internal"] = self.errors.get("internal", 0) + 1
            raise
        # A frame the dispatcher accepted has a header: its first two bytes are the API key.
        api = int.from_bytes(frame[:2], "big", signed=True)
        size_in = len(frame) + _PREFIX
        if reply is None:
            self._record(api, size_in, 0, start)
            return None
        if isinstance(reply, list | tuple):
            self._record(api, size_in, _size(reply), start)
            return reply
        # Buffers come as a list or tuple (handled above); what is left is their awaitable.
        return self._finish(cast(Awaitable[Buffers | None], reply), api, size_in, start)

    async def _finish(self, pending: Awaitable[Buffers | None], api: int, size_in: int,
                      start: float) -> Buffers | None:
        try:
            buffers = await pending
        except ProtocolViolation:
            self.errors["protocol_violation"] = self.errors.get("protocol_violation", 0) + 1
            raise
        except Exception:
            self.errors["internal"] = self.errors.get("internal", 0) + 1
            raise
        self._record(api, size_in, 0 if buffers is None else _size(buffers), start)
        return buffers

    def _record(self, api: int, size_in: int, size_out: int, start: float) -> None:
        stats = self.apis.get(api)
        if stats is None:
            stats = self.apis[api] = ApiStats()
        elapsed = time.perf_counter() - start
        stats.requests += 1
        stats.bytes_in += size_in
        stats.bytes_out += size_out
        stats.time_sum_s += elapsed
        stats.time_counts[bisect_left(BUCKETS, elapsed)] += 1


def _size(buffers: Buffers) -> int:
    n = 0
    for b in buffers:
        n += len(b)
    return n
