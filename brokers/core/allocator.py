"""The C allocator's mmap threshold, pinned so TLS reads stay on the heap.

Why: a TLS transport (uvloop's and asyncio's alike) reads with ``SSLObject.read(256 KiB)``,
which allocates a 256 KiB ``bytes`` and shrinks it to what arrived. glibc serves an
allocation that large with ``mmap`` unless its *dynamic* threshold (128 KiB at start, raised
only when a large mmapped block is freed) has happened to rise above it. Whether it has
depends on the process's history, so one broker process pays ``mmap`` + ``mremap`` +
``munmap`` and a page fault on every read while an identical one pays nothing: measured
with ``strace -c`` on a DSBS leader behind a TLS listener, one of each per request in some
clusters and none in others, 15-40% more broker CPU per record in the unlucky ones
(docs/architecture.md, "Measuring on a small VM"). Setting the threshold explicitly also
switches the dynamic adjustment off, so every process behaves alike and the 256 KiB buffers
are reused from the heap. Plaintext reads allocate exactly what arrived and were never affected.

Only glibc has ``mallopt(M_MMAP_THRESHOLD)``; elsewhere this does nothing and says so.
"""

from __future__ import annotations

import ctypes
import sys

# glibc's mallopt parameter number for the mmap threshold (malloc.h).
_M_MMAP_THRESHOLD = -3

# Above the largest buffer a TLS read asks for (256 KiB) with room to spare, and far below
# glibc's own ceiling for the dynamic threshold (32 MiB on 64-bit), so nothing allocates
# differently from what a long-running glibc process would settle on anyway.
MMAP_THRESHOLD_BYTES = 1024 * 1024

_pinned: bool | None = None


def pin_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at MMAP_THRESHOLD_BYTES (once per process); whether it is."""
    global _pinned
    if _pinned is None:
        _pinned = _mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    return _pinned


def _mallopt(param: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        # The symbols already loaded into this process (libc's among them): no library search,
        # which would run `ldconfig -p` in a subprocess at every broker start.
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        # gnu_get_libc_version exists only in glibc: musl's mallopt is a stub that ignores
        # every parameter, and calling it would claim a pin that did not happen.
        libc.gnu_get_libc_version  # noqa: B018
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(param, value) == 1
