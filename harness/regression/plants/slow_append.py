"""``python -m harness.regression.plants.slow_append``: the shared core's storage append made
slower (a busy loop in every PartitionLog.append: ``TWINBENCH_PLANT_BUSY_US``, default 250 µs),
in whichever twin ``TWINBENCH_PLANT_TWIN`` names.

A regression of the core both twins share: a DSBS/ZK ratio would barely move, since both slow
down; each twin's own CPU per record (the cost layer) must catch it.
"""

from __future__ import annotations

from typing import Any

from brokers.core.storage.log import PartitionLog
from harness.regression.plants import busy, busy_s_from_env, run_twin, twin_from_env

DEFAULT_US = 250.0


def _patch(slow_s: float) -> None:
    original = PartitionLog.append

    def append(self: PartitionLog, *args: Any, **kwargs: Any) -> Any:
        busy(slow_s)
        return original(self, *args, **kwargs)

    PartitionLog.append = append  # type: ignore[method-assign]


if __name__ == "__main__":
    _patch(busy_s_from_env(DEFAULT_US))
    run_twin(twin_from_env())
