"""Length-prefixed framing: ``int32 size`` then ``size`` bytes, both directions.

``FrameDecoder`` is the first thing every received byte touches, so it is built for the
common case: a ``feed`` containing exactly one (or several) whole frames is sliced into
memoryviews of the fed buffer with no copying at all. Only a frame split across feeds is
buffered, in a bytearray that grows by amortised appends (O(n) total, never O(n^2)), and the
size of a pending frame is validated from its 4-byte prefix *before* any of its body is
buffered, so a hostile 2 GiB prefix costs nothing.

Returned frames are views into the buffers passed to ``feed`` (or into an internal buffer that
is never mutated afterwards); feed ``bytes`` (what ``asyncio.Protocol.data_received`` gives),
or at least never mutate a fed buffer while frames from it are in use.

Errors (``FrameTooLarge``, ``ProtocolViolation`` for a negative length) are raised from the
``feed`` that completes the bad prefix; frames decoded earlier in that same call are dropped,
since the only correct reaction is to close the connection. The decoder is unusable after.
"""

from __future__ import annotations

from collections.abc import Sequence

from brokers.core.errors import FrameTooLarge, ProtocolViolation
from brokers.core.protocol.primitives import S32, Buffer, Parts

_unpack_size = S32.unpack_from


class FrameDecoder:
    __slots__ = ("_buf", "_need", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()  # partial frame (prefix included) carried between feeds
        self._need = 4  # bytes _buf must hold before anything can be done with it

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame (e.g. to detect a torn frame at EOF)."""
        return len(self._buf)

    def _check(self, size: int) -> None:
        if size < 0:
            raise ProtocolViolation(f"negative frame length {size}")
        if size > self.max_frame_bytes:
            raise FrameTooLarge(size, self.max_frame_bytes)

    def feed(self, data: Buffer) -> list[memoryview]:
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                return []
            if self._need == 4:
                # The prefix just became complete: validate before waiting for the body.
                size = _unpack_size(buf, 0)[0]
                self._check(size)
                self._need = 4 + size
                if len(buf) < self._need:
                    return []
            # The pending frame is complete. Hand the bytearray over (never mutated again)
            # and parse it like a fresh feed.
            self._buf = bytearray()
            self._need = 4
            data = buf
        mv = data if isinstance(data, memoryview) else memoryview(data)
        end = len(mv)
        pos = 0
        frames = []
        while end - pos >= 4:
            size = _unpack_size(mv, pos)[0]
            self._check(size)
            stop = pos + 4 + size
            if stop > end:
                self._need = 4 + size
                break
            frames.append(mv[pos + 4 : stop])
            pos = stop
        if pos < end:
            # Copy only the incomplete tail; its prefix (if complete) was validated above.
            self._buf = bytearray(mv[pos:])
            if end - pos < 4:
                self._need = 4
        return frames


def frame(parts: Sequence[Buffer]) -> Parts:
    """Prefix a message's buffers with their total int32 length (no concatenation)."""
    total = 0
    for p in parts:
        total += len(p)
    out: Parts = [S32.pack(total)]
    out.extend(parts)  # type: ignore[arg-type]  # a bytearray part is written as well
    return out
