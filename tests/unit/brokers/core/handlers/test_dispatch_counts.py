"""The data-path counters the regression's exact layer reads: Kafka requests by API, counted by
the real dispatcher, and fsyncs, counted wherever the process syncs."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core import fsyncs
from brokers.core.atomic_file import replace_file
from brokers.core.config import BrokerConfig
from brokers.core.errors import ProtocolViolation
from brokers.core.handlers import RequestDispatcher
from brokers.core.handlers.context import BrokerContext
from brokers.core.local_coordinator import LocalCoordinator
from brokers.core.protocol import api
from brokers.core.protocol.messages import api_versions
from brokers.core.protocol.primitives import join


def _request(key: int, version: int) -> memoryview:
    """An ApiVersions v0 request (empty body) whose header names ``key`` and ``version``."""
    frame = bytearray(join(api.request_frame(api.RequestHeader(18, 0, 1, "t"),
                                             api_versions.ApiVersionsRequest()))[4:])
    frame[0:4] = key.to_bytes(2, "big") + version.to_bytes(2, "big")
    return memoryview(bytes(frame))


@pytest.mark.filesystem
def test_requests_are_counted_by_api_name_served_or_not(tmp_path: Path) -> None:
    config = BrokerConfig(node_id=0, host="127.0.0.1", port=0, data_dir=tmp_path)
    ctx = BrokerContext(config, LocalCoordinator(0, tmp_path / "c"),
                        None, None, None)  # type: ignore[arg-type]
    d = RequestDispatcher(ctx)
    assert d.requests_by_api() == {}
    for _ in range(3):
        assert d.dispatch(_request(18, 0), "p") is not None
    # An unserved version is still a request the client sent (answered by the fallback).
    assert d.dispatch(_request(18, 99), "p") is not None
    with pytest.raises(ProtocolViolation):
        d.dispatch(_request(999, 0), "p")
    # An unknown key is a violation that closes the connection, not a request of some API.
    assert d.requests_by_api() == {"api_versions": 4}


@pytest.mark.filesystem
def test_every_sync_of_an_atomic_replace_is_counted(tmp_path: Path) -> None:
    before = fsyncs.count()
    replace_file(tmp_path / "a", "x")  # the file, then its directory
    replace_file(tmp_path / "b", "x", sync_file=False, sync_dir=False)
    assert fsyncs.count() - before == 2
