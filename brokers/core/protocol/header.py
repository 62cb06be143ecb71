"""Request headers v1/v2 and response headers v0/v1, chosen by the API's flexible versions.

Non-flexible request versions carry header v1 (``api_key i16, api_version i16,
correlation_id i32, client_id nullable string``); flexible ones (KIP-482) carry header v2: the
same fields (client_id keeps its classic int16 length, so old parsers can still read it)
followed by a tagged-field section. Responses to flexible versions carry header v1
(correlation id + tagged fields), with one exception: ApiVersions responses always use header
v0, so that a client which sent a version the broker does not know can still read the
KIP-511 fallback answer. ``peek_header`` reads the first 8 bytes without parsing anything else.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from brokers.core.errors import ProtocolViolation
from brokers.core.protocol.primitives import S32, Buffer, Reader, Writer
from brokers.core.protocol.schema import skip_tagged_fields

_FIXED = struct.Struct(">hhi")  # api_key, api_version, correlation_id
API_VERSIONS_KEY = 18
_NEVER = 1 << 16

# First flexible version of each API, from Kafka 2.8's message specs ("flexibleVersions"). The
# one table both the headers and the message codecs (``Message.FLEXIBLE``) read.
FLEXIBLE_FROM: dict[int, int] = {
    0: 9, 1: 12, 2: 6, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4, 15: 5, 16: 3,
    17: _NEVER, 18: 3, 19: 5, 20: 4, 21: 2, 22: 2, 23: 4, 29: 2, 30: 2, 31: 2, 32: 4, 33: 2,
    24: 3, 25: 3, 26: 3, 27: 1, 28: 3, 36: 2, 37: 2, 42: 2, 44: 1, 47: _NEVER,
}


def flexible_from(api_key: int) -> int:
    """The first flexible version of ``api_key`` (a huge number if it has none)."""
    return FLEXIBLE_FROM.get(api_key, _NEVER)


def is_flexible(api_key: int, api_version: int) -> bool:
    return api_version >= FLEXIBLE_FROM.get(api_key, _NEVER)


def peek_header(frame: Buffer) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of any request frame."""
    if len(frame) < 8:
        raise ProtocolViolation(f"request frame of {len(frame)} bytes is shorter than a header")
    return _FIXED.unpack_from(frame, 0)


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None

    def encode(self) -> bytes:
        """Header v1, or v2 (with an empty tagged-field section) for a flexible version."""
        w = Writer()
        w.cur += _FIXED.pack(self.api_key, self.api_version, self.correlation_id)
        w.nullable_string(self.client_id)
        if is_flexible(self.api_key, self.api_version):
            w.cur.append(0)
        return bytes(w.cur)

    @classmethod
    def decode(cls, frame: Buffer) -> tuple[RequestHeader, int]:
        """Parse the header of a request frame; returns (header, offset of the body).

        Header v2's tagged fields (none is defined for requests) are skipped, also for a
        flexible version we do not serve, so the offset is always right.
        """
        r = Reader(frame)
        try:
            api_key, api_version, correlation_id = _FIXED.unpack_from(r.buf, r._need(8))
        except ProtocolViolation:
            raise ProtocolViolation("request frame shorter than its header") from None
        client_id = r.nullable_string()
        if is_flexible(api_key, api_version):
            skip_tagged_fields(r)
        return cls(api_key, api_version, correlation_id, client_id), r.pos


def response_header_flexible(api_key: int, api_version: int) -> bool:
    """Does the response to (api_key, api_version) carry header v1? ApiVersions never does."""
    return api_key != API_VERSIONS_KEY and is_flexible(api_key, api_version)


def encode_response_header(correlation_id: int, flexible: bool = False) -> bytes:
    """Response header v0, or v1 (an empty tagged-field section after it) when ``flexible``."""
    return S32.pack(correlation_id) + b"\x00" if flexible else S32.pack(correlation_id)


def decode_response_header(frame: Buffer, flexible: bool = False) -> tuple[int, int]:
    """(correlation_id, body offset) of a response frame (header v0, or v1 when flexible)."""
    if len(frame) < 4:
        raise ProtocolViolation("response frame shorter than its header")
    if not flexible:
        return S32.unpack_from(frame, 0)[0], 4
    r = Reader(frame, 4)
    skip_tagged_fields(r)
    return S32.unpack_from(frame, 0)[0], r.pos
