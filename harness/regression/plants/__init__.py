"""Planted regressions: broker entry points with one known change, never switches in the
shipped brokers. ``make regress`` runs some of them beside head as its positive controls
(harness/regression/controls.py), and the selftest sizes one at the edge of what the check can
see (harness/regression/selftest.py).

Each plant is an entry point of its own (``python -m harness.regression.plants.<name>``) that
changes one thing in the broker process and then runs a twin's real ``main`` with the same
arguments; an arm launched through it (harness/regression/arms.py) writes run logs like any
other arm of that twin.

Layout:

* ``__init__.py``      the shared pieces: wrap the request handlers, burn CPU, run a twin's main
* ``zk_extra_read.py`` zk twin: one more ZooKeeper read per produced partition (exact layer)
* ``slow_append.py``   shared core, either twin: a busy loop in every storage append (cost)
* ``busy_dsbs.py``     dsbs twin: a busy loop on every request (cost, throughput)
* ``fetch_copy.py``    shared core, either twin: every fetched read copied once more
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


# Which twin a shared-core plant runs (set in the broker's environment by its arm).
TWIN_ENV = "TWINBENCH_PLANT_TWIN"
# How much CPU a busy plant burns per call (per request, per append), microseconds.
BUSY_US_ENV = "TWINBENCH_PLANT_BUSY_US"


def twin_from_env() -> str:
    return os.environ[TWIN_ENV]


def busy_s_from_env(default_us: float) -> float:
    """The plant's CPU per call, seconds: ``BUSY_US_ENV`` or ``default_us``."""
    return float(os.environ.get(BUSY_US_ENV, default_us)) / 1e6


def run_twin(module: str) -> None:
    """Run ``python -m module`` in this process with this process's arguments."""
    sys.argv[0] = module
    runpy.run_module(module, run_name="__main__", alter_sys=True)
