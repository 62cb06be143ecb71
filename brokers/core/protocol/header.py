"""Request header v1 / response header v0, plus just enough of header v2 for KIP-511.

Every version we speak is non-flexible, so requests carry header v1
(``api_key i16, api_version i16, correlation_id i32, client_id nullable string``) and responses
carry header v0 (``correlation_id i32``). The exception we must still *read*: an ApiVersions
request at v3+ uses header v2 (v1 followed by tagged fields). The broker answers it with the
v0-format fallback (see ``api.api_versions_fallback_frame``); to do that it needs only the
first 8 bytes, which ``peek_header`` reads without parsing anything else. Note that ApiVersions
*responses* always use header v0, even for flexible versions, exactly so that fallback works.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from brokers.core.errors import ProtocolViolation
from brokers.core.protocol.primitives import S32, Buffer, Reader, Writer

_FIXED = struct.Struct(">hhi")  # api_key, api_version, correlation_id
API_VERSIONS_KEY = 18


def peek_header(frame: Buffer) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of any request frame."""
    if len(frame) < 8:
        raise ProtocolViolation(f"request frame of {len(frame)} bytes is shorter than a header")
    return _FIXED.unpack_from(frame, 0)


def uses_header_v2(api_key: int, api_version: int) -> bool:
    """Only ApiVersions v3+ matters to us: every other API we serve is non-flexible, and a
    flexible version of another API is rejected on (api_key, version) before its body is read."""
    return api_key == API_VERSIONS_KEY and api_version >= 3


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None

    def encode(self) -> bytes:
        w = Writer()
        w.cur += _FIXED.pack(self.api_key, self.api_version, self.correlation_id)
        w.nullable_string(self.client_id)
        return bytes(w.cur)

    @classmethod
    def decode(cls, frame: Buffer) -> tuple[RequestHeader, int]:
        """Parse the header of a request frame; returns (header, offset of the body).

        For header v2 (ApiVersions v3+) the tagged-field section is skipped, so the offset
        is right even though we never decode those bodies.
        """
        r = Reader(frame)
        try:
            api_key, api_version, correlation_id = _FIXED.unpack_from(r.buf, r._need(8))
        except ProtocolViolation:
            raise ProtocolViolation("request frame shorter than its header") from None
        client_id = r.nullable_string()
        if uses_header_v2(api_key, api_version):
            _skip_tagged_fields(r)
        return cls(api_key, api_version, correlation_id, client_id), r.pos


def _skip_tagged_fields(r: Reader) -> None:
    count = r.unsigned_varint()
    if count > r.remaining:
        raise ProtocolViolation(f"{count} tagged fields cannot fit in {r.remaining} bytes")
    for _ in range(count):
        r.unsigned_varint()  # tag
        size = r.unsigned_varint()
        r.raw(size)


def encode_response_header(correlation_id: int) -> bytes:
    """Response header v0."""
    return S32.pack(correlation_id)


def decode_response_header(frame: Buffer) -> tuple[int, int]:
    """(correlation_id, body offset) of a response frame (header v0)."""
    if len(frame) < 4:
        raise ProtocolViolation("response frame shorter than its header")
    return S32.unpack_from(frame, 0)[0], 4
