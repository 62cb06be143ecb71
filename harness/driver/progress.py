"""What a person watching a long run sees: a rich progress bar (sessions done / total, the
current cell, elapsed, ETA), notes above it (cluster restarts, failed cells), and a summary
table at the end. When stdout is not a terminal (CI, `make bench | tee`, tests) it stays quiet:
no bar, no table; the runner prints only the run directories and errors.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from rich.console import Console, JustifyMethod
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table


class RunProgress:
    def __init__(self, total: int, enabled: bool, console: Console | None = None) -> None:
        self.enabled = enabled
        self.console = console or Console(stderr=False)
        self._progress: Progress | None = None
        self._task: Any = None
        self.total = total

    def __enter__(self) -> RunProgress:
        if self.enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("sessions"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("starting", total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def current(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=text)

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def note(self, text: str) -> None:
        """A line above the bar (terminal only)."""
        if self.enabled:
            self.console.print(text)


def _fmt(x: float) -> str:
    return f"{x:,.0f}"


def summary_table(title: str, records: list[dict[str, Any]],
                  coordination: list[dict[str, Any]]) -> Table:
    """Mean ± sd over tries per cell x scenario x role, plus coordination per 1,000 messages."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in records:
        groups[(row["cell_id"], row["scenario"], row["role"])].append(row)
    coord: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in coordination:
        ops = row["coord_messages"]
        if ops is not None and row["messages"]:
            coord[(row["cell_id"], row["scenario"])].append(ops * 1000 / row["messages"])
    table = Table(title=title, title_justify="left",
                  caption="rps mean ± sd over tries; kbps = rps x size / 1000 (payload KB/s); "
                          "p99 = median over tries of the per-request p99; coord/1k = coordination "
                          "messages per 1,000 messages (each architecture's own: ZooKeeper "
                          "requests, gossip packets, ...)",
                  caption_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("cell", "left"), ("scenario", "left"), ("role", "left"), ("n", "right"),
        ("rps", "right"), ("± sd", "right"), ("kbps", "right"), ("p99 µs", "right"),
        ("coord/1k", "right"), ("", "left"))
    for col, justify in columns:
        table.add_column(col, justify=justify, no_wrap=True)
    for (cell_id, scenario, role), rows in groups.items():
        rps = [r["rps"] for r in rows if r["rps"] is not None]
        kbps = [r["kbps"] for r in rows if r["kbps"] is not None]
        p99 = [r["lat_p99_us"] for r in rows if r["lat_p99_us"] is not None]
        failed = any(r["status"] != "ok" for r in rows)
        c = coord.get((cell_id, scenario), [])
        table.add_row(
            cell_id, scenario, "prod" if role == "production" else "cons", str(len(rows)),
            _fmt(statistics.fmean(rps)) if rps else "-",
            _fmt(statistics.stdev(rps)) if len(rps) > 1 else "-",
            f"{statistics.fmean(kbps):,.1f}" if kbps else "-",
            _fmt(statistics.median(p99)) if p99 else "-",
            f"{statistics.fmean(c):,.1f}" if c and role == "production" else "",
            "[bold red]FAILED[/]" if failed else "",
        )
    return table
