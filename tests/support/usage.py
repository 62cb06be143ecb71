"""What a broker process holds while an attack runs: resident memory and open descriptors.

``Usage(pid)`` samples psutil in a thread from ``__enter__`` to ``__exit__`` and keeps the
baseline (first sample) and the peaks, so a test can state a bound and report what it saw.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import psutil

MiB = 1024 * 1024


@dataclass
class Usage:
    pid: int
    period_s: float = 0.01
    base_rss: int = 0
    base_fds: int = 0
    peak_rss: int = 0
    peak_fds: int = 0
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> tuple[int, int]:
        p = psutil.Process(self.pid)
        return p.memory_info().rss, p.num_fds()

    def __enter__(self) -> Usage:
        self.base_rss, self.base_fds = self.peak_rss, self.peak_fds = self.sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                rss, fds = self.sample()
            except psutil.Error:
                return  # the process is gone; the test will say why
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_fds = max(self.peak_fds, fds)
            self.samples += 1
            self._stop.wait(self.period_s)

    def observe(self, seconds: float) -> None:
        """Keep sampling for a measurement window (the attack is holding its ground)."""
        time.sleep(seconds)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    @property
    def rss_growth_mib(self) -> float:
        return (self.peak_rss - self.base_rss) / MiB

    @property
    def fd_growth(self) -> int:
        return self.peak_fds - self.base_fds

    def __str__(self) -> str:
        return (f"rss {self.base_rss / MiB:.0f} -> peak {self.peak_rss / MiB:.0f} MiB "
                f"(+{self.rss_growth_mib:.0f}), fds {self.base_fds} -> peak {self.peak_fds} "
                f"(+{self.fd_growth}), {self.samples} samples")
