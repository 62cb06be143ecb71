"""A blocking Kafka-protocol probe: exact requests, raw bytes, and closed-socket checks.

The harness uses it for readiness ("does this broker answer Metadata listing all N brokers?")
and tests use it to send specific, often malformed, requests with byte-level control that real
clients never give. It speaks the shared codec over a plain socket, or over TLS and after SASL
(harness/cluster/client_security.py); the load client, which must be fast, is ``workloads/``.
"""

from __future__ import annotations

import socket
import struct

from brokers.core.protocol.api import ApiKey, decode_response, request_frame
from brokers.core.protocol.header import (
    RequestHeader,
    decode_response_header,
    response_header_flexible,
)
from brokers.core.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from brokers.core.protocol.schema import Message
from harness.cluster.client_security import ClientSecurity, connect


class KafkaProbe:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0,
                 security: ClientSecurity | None = None) -> None:
        """``security``: TLS and SASL done before the first request (a secured listener)."""
        self.sock = (connect(security, host, port, timeout_s) if security is not None
                     else socket.create_connection((host, port), timeout=timeout_s))
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> KafkaProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, request: Message) -> int:
        self._correlation += 1
        header = RequestHeader(api_key, version, self._correlation, "twinbench-probe")
        self.sock.sendall(b"".join(bytes(p) for p in request_frame(header, request)))
        return self._correlation

    def request(self, api_key: int, version: int, request: Message) -> Message:
        correlation = self.send(api_key, version, request)
        frame = self.read_frame()
        got, body_at = decode_response_header(frame, response_header_flexible(api_key, version))
        assert got == correlation, f"correlation {got} != {correlation}"
        return decode_response(api_key, version, frame[body_at:])

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def metadata(self, topics: list[str] | None = None) -> MetadataResponse:
        req = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        # decode_response decodes a Metadata reply as a MetadataResponse.
        return self.request(ApiKey.METADATA, 8, req)  # type: ignore[return-value]

    def is_closed_by_peer(self) -> bool:
        """True once the broker has closed the connection (reads EOF or reset)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
