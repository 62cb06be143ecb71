"""Planted regressions: known changes that the CI regression (spark_analysis/regress.py) must
catch, living only here, never as switches in the shipped brokers.

Each plant is a broker entry point of its own (``python -m tests.support.planted.<name>``) that
changes one thing in the broker process and then runs a twin's real ``main``; the selftest
(``selftest.py``, ``make regress-selftest``) swaps it into its own process's copy of the
architecture registry under the twin's name, so the run logs look like any other run of that
twin.

Layout:

* ``__init__.py``      the shared pieces: wrap the request handlers, run a twin's main
* ``zk_extra_read.py`` zk twin: one more ZooKeeper read per produced partition (exact layer)
* ``busy_dsbs.py``     dsbs twin: a busy loop on every request (200 µs, or the subtle plant's
                       size from TWINBENCH_PLANT_BUSY_US; cost, throughput layers)
* ``slow_append.py``   shared core: a busy loop in every storage append (either twin)
* ``fetch_copy.py``    shared core: every fetched read copied once more (either twin)
* ``selftest.py``      runs every plant (and the workload override) and checks each is caught
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from brokers.core.handlers import dispatch

Handler = Callable[..., Any]


def wrap_handlers(wrap: Callable[[int, Handler], Handler], keys: set[int] | None = None) -> None:
    """Replace the dispatcher's handlers (all, or those of ``keys``) by ``wrap(key, handler)``.
    Must run before the broker builds its dispatcher, which copies the table."""
    for key, handler in list(dispatch.HANDLERS.items()):
        if keys is None or int(key) in keys:
            dispatch.HANDLERS[key] = wrap(int(key), handler)


def busy(seconds: float) -> None:
    """Burn ``seconds`` of CPU on the event loop's thread (a spin, not a sleep: it is CPU)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def then(first: Awaitable[Any], rest: Callable[[], Any]) -> Any:
    """Await ``first``, then call ``rest`` and await its result when it is awaitable."""
    await first
    result = rest()
    if isinstance(result, Awaitable):
        return await result
    return result


# Which twin a shared-core plant runs (the selftest sets it in the broker's environment).
TWIN_ENV = "TWINBENCH_PLANT_TWIN"
# How much CPU a busy plant burns per request (the subtle plant's size), microseconds.
BUSY_US_ENV = "TWINBENCH_PLANT_BUSY_US"


def twin_from_env() -> str:
    return os.environ[TWIN_ENV]


def run_twin(module: str) -> None:
    """Run ``python -m module`` in this process with this process's arguments."""
    sys.argv[0] = module
    runpy.run_module(module, run_name="__main__", alter_sys=True)
