"""``python -m tests.support.planted.slow_append``: the shared core's storage append made slower
(a 50 µs busy loop in every PartitionLog.append), in whichever twin TWINBENCH_PLANT_TWIN names.

A regression of the core both twins share: a DSBS/ZK ratio would barely move, since both slow
down; each twin's own CPU per record (the cost layer) must catch it.
"""

from __future__ import annotations

from typing import Any

from brokers.core.storage.log import PartitionLog
from tests.support.planted import busy, run_twin, twin_from_env

SLOW_S = 50e-6


def _patch() -> None:
    original = PartitionLog.append

    def append(self: PartitionLog, *args: Any, **kwargs: Any) -> Any:
        busy(SLOW_S)
        return original(self, *args, **kwargs)

    PartitionLog.append = append  # type: ignore[method-assign]


if __name__ == "__main__":
    _patch()
    run_twin(twin_from_env())
