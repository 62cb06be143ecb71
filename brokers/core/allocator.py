"""The C allocator's mmap and trim thresholds, pinned so TLS reads and fetch reads stay on the
heap.

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

Fetches too: a segment read asks for the fetch's partition budget plus an index interval ahead
(``Segment.read``), 1 MiB + 4 KiB for every client's default max.partition.fetch.bytes, just
above the first pin's 1 MiB. Every fetch then mapped a fresh block, the kernel zeroed and
faulted in its 257 pages inside the pread, and unmapped it after the response went out: py-spy
put 69% of a broker draining 1 KiB records in that pread (`make perf-kafka PERF_ARGS="--cells
1024x20 --profile DIR"`). So the threshold sits above any partition budget a client asks for by
default, and the trim threshold (how much free memory at the heap's top glibc keeps rather than
gives back) is pinned to twice it, as glibc's own dynamic rule would set it: without that, a
freed 1 MiB block at the top of the heap is given back at once and the next fetch faults it in
again.

Only glibc has ``mallopt(M_MMAP_THRESHOLD)``; elsewhere this does nothing and says so.
"""

from __future__ import annotations

import ctypes
import sys

# glibc's mallopt parameter numbers (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

# Above the largest buffer a TLS read asks for (256 KiB) and a fetch's segment read at the
# clients' default partition budget (1 MiB + an index interval), with room for budgets a few
# times larger, and below glibc's own ceiling for the dynamic threshold (32 MiB on 64-bit), so
# nothing allocates differently from what a long-running glibc process could settle on anyway.
MMAP_THRESHOLD_BYTES = 8 * 1024 * 1024
# glibc's dynamic rule: twice the mmap threshold. The most free heap a process keeps.
TRIM_THRESHOLD_BYTES = 2 * MMAP_THRESHOLD_BYTES

_pinned: bool | None = None


def pin_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at MMAP_THRESHOLD_BYTES and its trim threshold at
    TRIM_THRESHOLD_BYTES (once per process); whether both are."""
    global _pinned
    if _pinned is None:
        _pinned = (_mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                   and _mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
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
