"""Shared helpers for tests that need a real ZooKeeper (the integration and hostile tiers).

``module_zookeeper`` is the body of the module-scoped fixtures the tiers' conftests define
(``zk`` in tests/integration, ``zookeeper`` in tests/hostile): one server per test module.
``local_zookeeper`` starts one (or an ensemble) for a single test. The server is a local one
started from the jars by ``harness.services.zookeeper`` on free loopback ports with a short tick, so
expired sessions are noticed in about a second; when Java or the jars are missing the tests
skip with the reason and how to fix it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from harness.services.zookeeper import (
    HOW_TO_GET_ZOOKEEPER,
    ZooKeeperConfig,
    ZooKeeperHandle,
    find_classpath,
    find_java,
    provision,
)

# 500 ms ticks: sessions may be as short as 1 s and expire on a 500 ms grid, so failover tests
# take seconds, not tens of seconds. Everything else is ZooKeeper's default.
TEST_TICK_MS = 500
# Session timeout the coordinator tests ask for: short, so a lost session expires in seconds.
TEST_SESSION_TIMEOUT_MS = 4000


def skip_reason() -> str | None:
    """Why a local ZooKeeper cannot be started here, or None when it can."""
    if find_java() is None:
        return "java not found; " + HOW_TO_GET_ZOOKEEPER
    if find_classpath() is None:
        return "ZooKeeper jars not found; " + HOW_TO_GET_ZOOKEEPER
    return None


def zk_test_config(**overrides: object) -> ZooKeeperConfig:
    """The ZooKeeperConfig tests use: short ticks, small heap, fsync off (tmpfs-like speed)."""
    base: dict[str, object] = {"tick_time_ms": TEST_TICK_MS, "heap_mb": 128, "force_sync": False}
    return ZooKeeperConfig(**(base | overrides))  # type: ignore[arg-type]


@contextlib.contextmanager
def local_zookeeper(workdir: Path, nodes: int = 1) -> Iterator[ZooKeeperHandle]:
    """Start a local server/ensemble (skip the test if impossible); always stop it."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    # ZOOKEEPER_CONNECT would make provision() hand back an external server; these tests need
    # one they own (they stop and restart it), so the address is deliberately not passed.
    saved = os.environ.pop("ZOOKEEPER_CONNECT", None)
    try:
        handle = provision(None, nodes, workdir, zk_test_config())
    finally:
        if saved is not None:
            os.environ["ZOOKEEPER_CONNECT"] = saved
    try:
        yield handle
    finally:
        handle.stop()


def module_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperHandle]:
    """Body of a module-scoped fixture: one standalone server for the module."""
    with local_zookeeper(tmp_path_factory.mktemp("zookeeper")) as handle:
        yield handle


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a reaped child is gone entirely)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``predicate`` until true; fail the test with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


async def async_wait_until(
    predicate: Callable[[], bool | Awaitable[bool]], timeout: float, what: str
) -> None:
    """``wait_until`` for coroutines: the predicate may be sync or async."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)
