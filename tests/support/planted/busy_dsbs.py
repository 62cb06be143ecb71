"""``python -m tests.support.planted.busy_dsbs``: the dsbs twin spending 200 µs of CPU (a busy
loop on the event loop) before every request it handles.

What the cost layer (CPU per 1,000 records, DSBS/ZK) and the throughput layer (DSBS/ZK rps)
must catch.
"""

from __future__ import annotations

from brokers.core.handlers.context import BrokerContext, Call
from tests.support.planted import Handler, busy, run_twin, wrap_handlers

TWIN = "brokers.dsbs_broker"
# The planted cost of every request.
BUSY_S = 200e-6


def _busy(_key: int, handler: Handler) -> Handler:
    def slowed(ctx: BrokerContext, call: Call, req: object) -> object:
        busy(BUSY_S)
        return handler(ctx, call, req)
    return slowed


if __name__ == "__main__":
    wrap_handlers(_busy)
    run_twin(TWIN)
