"""brokers/core/allocator.py: a process that chose its event loop the way a broker or the load
client does serves a 256 KiB allocation (a TLS read's buffer) from the heap, where a fresh
glibc process maps it. Each case runs in its own interpreter, since the pin is per process
and the dynamic threshold depends on the process's history."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

# Runs SETUP in a fresh interpreter with glibc's mallinfo2 at hand.
PREAMBLE = """
import ctypes
{setup}
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
"""
# Prints how many of four allocations of SIZE glibc served with mmap (mallinfo2's hblks counts
# blocks mapped now).
PROBE = PREAMBLE + """
before = libc.mallinfo2().hblks
held = [bytes({size}) for _ in range(4)]
print(libc.mallinfo2().hblks - before)
"""
TLS_READ = 256 * 1024
FETCH_READ = 1024 * 1024 + 4096 + 61  # a 1 MiB partition budget, an index interval, a header

# Prints how much of the heap glibc gave back once four blocks of SIZE were freed (arena:
# bytes of heap obtained with brk; trimming gives the top back).
KEPT = PREAMBLE + """
held = [bytes({size}) for _ in range(4)]
grown = libc.mallinfo2().arena
del held
print(grown - libc.mallinfo2().arena)
"""


def _run(script: str, setup: str, size: int) -> int:
    done = subprocess.run([sys.executable, "-c", script.format(setup=setup, size=size)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def mapped_after(setup: str, size: int = TLS_READ) -> int:
    return _run(PROBE, setup, size)


def given_back_after(setup: str, size: int) -> int:
    return _run(KEPT, setup, size)


@pytest.fixture(autouse=True)
def _glibc() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallinfo2  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("not glibc >= 2.33 (mallinfo2): the pin is a no-op there")


def test_a_fresh_process_maps_what_a_tls_read_allocates() -> None:
    # The premise: without the pin, each 256 KiB buffer is mmapped (and munmapped after).
    assert mapped_after("") == 4


@pytest.mark.parametrize("setup", [
    # The pin says it took, and it did.
    "from brokers.core.allocator import pin_mmap_threshold; assert pin_mmap_threshold()",
    "from brokers.core.broker import install_event_loop_policy; install_event_loop_policy()",
    "from workloads.connection import new_event_loop; new_event_loop().close()",
], ids=["pin", "broker", "load-client"])
def test_choosing_the_event_loop_pins_the_threshold(setup: str) -> None:
    assert mapped_after(setup) == 0
    assert mapped_after(setup, FETCH_READ) == 0


def test_a_fetch_read_is_mapped_without_the_pin_and_kept_on_the_heap_with_it() -> None:
    # The premise: a fresh process maps each fetch-sized read (its dynamic threshold starts at
    # 128 KiB)...
    assert mapped_after("", FETCH_READ) == 4
    # ...and with only the mmap threshold raised, freed blocks at the heap's top go back to
    # the kernel at once (the trim threshold stays at 128 KiB), to be faulted in again.
    raise_only = "import ctypes; ctypes.CDLL(None).mallopt(-3, 8 << 20)"
    assert given_back_after(raise_only, FETCH_READ) >= 4 * 1024 * 1024
    pin = "from brokers.core.allocator import pin_mmap_threshold; assert pin_mmap_threshold()"
    assert given_back_after(pin, FETCH_READ) == 0

