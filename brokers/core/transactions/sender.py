"""How a transaction coordinator reaches the brokers it writes markers to: one connection per
broker, one request at a time on it (the replica fetcher's connection, with the same inter-broker
security), reopened after any failure."""

from __future__ import annotations

import asyncio
import contextlib

from brokers.core.coordinator import BrokerInfo
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.transactions import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from brokers.core.replication.fetcher import LeaderConnection
from brokers.core.security.client import ClientSecurity

CLIENT_ID = "twinbench-txn-coordinator"
# WriteTxnMarkers v1 is flexible; v0 is what every broker of ours speaks either way.
MARKERS_VERSION = 0


class BrokerConnections:
    def __init__(self, security: ClientSecurity | None = None) -> None:
        self.security = security
        self._conns: dict[int, tuple[BrokerInfo, LeaderConnection, asyncio.Lock]] = {}

    async def send(self, broker: BrokerInfo, request: WriteTxnMarkersRequest,
                   timeout_s: float) -> WriteTxnMarkersResponse:
        entry = self._conns.get(broker.node_id)
        if entry is None or (entry[0].host, entry[0].port) != (broker.host, broker.port):
            if entry is not None:
                entry[1].close()
            entry = (broker, LeaderConnection(broker.host, broker.port, CLIENT_ID,
                                              self.security), asyncio.Lock())
            self._conns[broker.node_id] = entry
        _, conn, lock = entry
        async with lock:
            try:
                answer = await conn.call(ApiKey.WRITE_TXN_MARKERS, MARKERS_VERSION, request,
                                         WriteTxnMarkersResponse, timeout_s)
            except BaseException:
                conn.close()  # a half-read answer must not be taken for the next one's
                raise
        assert isinstance(answer, WriteTxnMarkersResponse)
        return answer

    def close(self) -> None:
        for _, conn, _ in self._conns.values():
            with contextlib.suppress(OSError):
                conn.close()
        self._conns.clear()
