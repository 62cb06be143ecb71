"""``python -m harness.regression.plants.fetch_copy``: every read of stored batches for a fetch
copied once more (PartitionLog.read returns a fresh bytes copy of what it read, where the core
hands out a view), in whichever twin TWINBENCH_PLANT_TWIN names.

A shared-core regression of the kind a refactoring brings in; how much it costs depends on how
much a fetch reads. The selftest reports what it moved; no layer is required to catch it.
"""

from __future__ import annotations

from typing import Any

from brokers.core.storage.log import PartitionLog
from harness.regression.plants import run_twin, twin_from_env

# Copies per read: one extra copy per fetched read, as a regression would add it (bytes() of a
# view), done this many times so the plant is the size of a copy of each fetched batch.
COPIES = 1


def _patch() -> None:
    original = PartitionLog.read

    def read(self: PartitionLog, *args: Any, **kwargs: Any) -> Any:
        data = original(self, *args, **kwargs)
        for _ in range(COPIES):
            data = bytes(data)
        return data

    PartitionLog.read = read  # type: ignore[method-assign]


if __name__ == "__main__":
    _patch()
    run_twin(twin_from_env())
