"""Authenticated gossip: an HMAC-SHA256 tag over every datagram under a shared cluster key.

Without it, any process that can reach a gossip port could forge membership, topic records
and offsets (the cluster tag in the header is a constant, not a secret). With a key, a sender
sets ``FLAG_HMAC`` in the header flags and appends ``TAG_BYTES`` of
``HMAC-SHA256(key, every byte before the tag)``; a receiver recomputes it and compares in
constant time before it decodes anything, so a forged packet costs one HMAC and is dropped.
The tag counts against ``max_packet_bytes`` (the sender assembles into 16 bytes less).

The tag is truncated to 128 bits (RFC 2104 section 5 allows truncation to no less than half the
hash length). Forging one packet then takes about 2**127 online guesses, each answered by
silence, and a tag cannot be checked offline without the key; the 16 bytes saved per packet are
one more piggybacked member update. Replays of genuine packets are stopped by the per-sender
window of ``replay.py`` (the packet number is under the tag), not here.

The key is a file every broker of the cluster reads once at start (``--gossip-key-file``; the
harness writes a fresh random one per cluster, mode 0600). Trailing whitespace is not part of
the key, so ``openssl rand -hex 32 > key`` works as well as 32 raw random bytes. A file that is
missing, unreadable, shorter than ``MIN_KEY_BYTES`` or open to other users is refused with one
line: a cluster key anyone on the host can read authenticates nothing.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from brokers.core.errors import UserError
from brokers.core.security.secret_file import read_secret_file
from brokers.dsbs_broker.packets.wire import FLAG_HMAC, HEADER_SIZE

TAG_BYTES = 16
# The SHA-256 output size: a shorter key would be the weakest part of the tag.
MIN_KEY_BYTES = 32
_FLAGS_AT = 3  # offset of the flags byte in the header (after magic u16 and version u8)


def check_key(key: bytes) -> None:
    if len(key) < MIN_KEY_BYTES:
        raise UserError(f"gossip key has {len(key)} bytes; at least {MIN_KEY_BYTES} are needed")


def load_key_file(path: str | Path) -> bytes:
    """Read the cluster key; every problem is a one-line UserError naming the file."""
    p = Path(path)
    key = read_secret_file(p, "gossip key file", 4096)
    key = key.rstrip(b" \t\r\n")
    try:
        check_key(key)
    except UserError as exc:
        raise UserError(f"gossip key file {p}: {exc}") from None
    return key


class Authenticator:
    """Signs outgoing datagrams and checks incoming ones (sans-IO, one per broker)."""

    __slots__ = ("_key",)

    overhead = TAG_BYTES

    def __init__(self, key: bytes) -> None:
        check_key(key)
        self._key = key

    def sign(self, data: bytes) -> bytes:
        """``data`` (a whole datagram whose header has FLAG_HMAC set) with its tag appended."""
        return data + hmac.digest(self._key, data, "sha256")[:TAG_BYTES]

    def verify(self, data: bytes) -> bytes | None:
        """The datagram without its tag if the tag is valid and the flag set, else None."""
        if len(data) < HEADER_SIZE + TAG_BYTES or not data[_FLAGS_AT] & FLAG_HMAC:
            return None
        body = data[:-TAG_BYTES]
        expected = hmac.digest(self._key, body, "sha256")[:TAG_BYTES]
        return body if hmac.compare_digest(expected, data[-TAG_BYTES:]) else None
