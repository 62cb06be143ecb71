"""``python -m tests.support.planted.busy_dsbs``: the dsbs twin spending CPU (a busy loop on
the event loop) before every request it handles: 200 µs, or ``TWINBENCH_PLANT_BUSY_US``.

What the cost layer (dsbs CPU per record) and the throughput layer (dsbs records/s) must catch;
the selftest's subtle plant is this one sized at about twice the cost band.
"""

from __future__ import annotations

import os

from brokers.core.handlers.context import BrokerContext, Call
from tests.support.planted import BUSY_US_ENV, Handler, busy, run_twin, wrap_handlers

TWIN = "brokers.dsbs_broker"
# The planted cost of every request.
BUSY_S = float(os.environ.get(BUSY_US_ENV, "200")) / 1e6


def _busy(_key: int, handler: Handler) -> Handler:
    def slowed(ctx: BrokerContext, call: Call, req: object) -> object:
        busy(BUSY_S)
        return handler(ctx, call, req)
    return slowed


if __name__ == "__main__":
    wrap_handlers(_busy)
    run_twin(TWIN)
