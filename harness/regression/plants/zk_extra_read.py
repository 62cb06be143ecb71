"""``python -m harness.regression.plants.zk_extra_read``: the zk twin with one extra ZooKeeper
round trip per produced partition (a fresh partition-state read before the real handler runs).

What the exact layer must catch: zk_reads (and zk_requests) per 1,000 records rise by
1,000 / batch per partition of a produce request, whatever the machine's speed.
"""

from __future__ import annotations

from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.protocol.messages.produce import ProduceRequest
from harness.regression.plants import Handler, run_twin, then, wrap_handlers

TWIN = "brokers.zk_broker"
PRODUCE = 0  # Kafka API key of Produce


def _extra_read(_key: int, handler: Handler) -> Handler:
    def produce(ctx: BrokerContext, call: Call, req: ProduceRequest) -> object:
        async def reads() -> None:
            for t in req.topic_data:
                for pd in t.partition_data:
                    await ctx.coordinator.partition_state(t.name, pd.index, fresh=True)
        return then(reads(), lambda: handler(ctx, call, req))
    return produce


if __name__ == "__main__":
    wrap_handlers(_extra_read, {PRODUCE})
    run_twin(TWIN)
