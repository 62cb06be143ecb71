"""ZooKeeper's four-letter words (``ruok``, ``srvr``, ``mntr``): readiness and counters.

A server answers a four-letter word on its client port and closes the connection. ``ruok``
answering ``imok`` is not enough to call a server ready: it answers some 100 ms before it serves
requests, and meanwhile ``srvr`` says "not currently serving requests"; ``server_mode`` asks
both. ``mntr``'s counters are what a run log records as ZooKeeper's coordination cost.
"""

from __future__ import annotations

import contextlib
import re
import socket

# Modes a serving member reports in `srvr`; anything else (or the "not currently serving"
# sentence) means "not ready yet".
SERVING_MODES = ("standalone", "leader", "follower", "observer")


def four_letter(host: str, port: int, cmd: str, timeout: float = 2.0) -> str:
    """Send a four-letter-word command (``ruok``, ``srvr``, ``mntr``...) and return the reply.

    The server writes its answer and closes the connection, so we read until EOF.
    Raises ``OSError`` when nothing listens (callers polling for readiness catch it).
    """
    if len(cmd) != 4:
        raise ValueError(f"four-letter words have four letters, not {cmd!r}")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(cmd.encode("ascii"))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
        chunks: list[bytes] = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def parse_mntr(text: str) -> dict[str, str | int]:
    """Parse ``mntr`` output (``key<TAB>value`` lines); integral values become ints."""
    out: dict[str, str | int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if not sep:
            continue
        value = value.strip()
        out[key.strip()] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return out


def parse_srvr(text: str) -> dict[str, str | int]:
    """Parse ``srvr`` output (``Key: value`` lines) into snake_case keys; ints where integral."""
    out: dict[str, str | int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if not sep:
            continue
        k = key.strip().lower().replace(" ", "_").replace("/", "_")
        v = value.strip()
        out[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return out


def mntr(host: str, port: int) -> dict[str, str | int]:
    """The server's ``mntr`` counters (e.g. ``zk_packets_received``, ``zk_znode_count``)."""
    return parse_mntr(four_letter(host, port, "mntr"))


def srvr(host: str, port: int) -> dict[str, str | int]:
    """The server's ``srvr`` summary (``mode``, ``received``, ``sent``, ``node_count``...)."""
    return parse_srvr(four_letter(host, port, "srvr"))


def server_mode(host: str, port: int) -> str | None:
    """``standalone``/``leader``/``follower``/``observer`` once serving; None before that."""
    try:
        if four_letter(host, port, "ruok", timeout=1.0).strip() != "imok":
            return None
        mode = srvr(host, port).get("mode")
    except OSError:
        return None
    return mode if isinstance(mode, str) and mode in SERVING_MODES else None
