"""``python -m harness.regression.plants.busy_dsbs``: the dsbs twin spending CPU (a busy loop on
the event loop) before every request it handles: 200 µs, or ``TWINBENCH_PLANT_BUSY_US``.

What the cost layer (dsbs CPU per record) and the throughput layer (dsbs records/s) must catch;
the selftest's subtle plant is this one sized at about twice the cost band.
"""

from __future__ import annotations

from brokers.core.handlers.context import BrokerContext, Call
from harness.regression.plants import Handler, busy, busy_s_from_env, run_twin, wrap_handlers

TWIN = "brokers.dsbs_broker"
# The planted cost of every request.
BUSY_S = busy_s_from_env(200.0)


def _busy(_key: int, handler: Handler) -> Handler:
    def slowed(ctx: BrokerContext, call: Call, req: object) -> object:
        busy(BUSY_S)
        return handler(ctx, call, req)
    return slowed


if __name__ == "__main__":
    wrap_handlers(_busy)
    run_twin(TWIN)
