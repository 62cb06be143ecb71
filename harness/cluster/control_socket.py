"""How ``twinbench fault`` reaches a running ``twinbench cluster``: a state file and a socket.

``twinbench cluster`` owns every process of its cluster (it started them and must stop them
by PID), so a fault is not injected from outside by signalling PIDs found in a file: the fault
command asks the cluster process to do it, over a Unix socket, and the cluster process runs the
same ``ProcessCluster`` method the fault workloads use. One JSON request per connection, one JSON
answer: ``{"action": "kill", "broker": 1}`` -> ``{"ok": true, "line": "killed=1"}`` or
``{"ok": false, "error": "no broker 7 in this cluster (brokers: 0, 1, 2)"}``.

The state file (``cluster.json`` in the cluster's directory, and a copy at ``default_state()``
so a second terminal finds the newest cluster without arguments) says where the socket is and
what the cluster looks like: node ids, PIDs, addresses, data directories, ZooKeeper. A state
file whose cluster process is gone is reported as stale in one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from brokers.core.errors import UserError
from harness.cluster.processes import pid_alive

# A request or answer larger than this is not ours.
MAX_MESSAGE = 64 * 1024
# How long a fault command waits for the cluster to carry out a request (a restart waits for
# the broker to listen again; starting ZooKeeper takes a few seconds).
REQUEST_TIMEOUT_S = 120.0


def default_state() -> Path:
    """Where the newest ``twinbench cluster`` of this user leaves its state file."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"twinbench-{os.getuid()}" / "cluster.json"


def socket_path(root: Path) -> Path:
    """The control socket of a cluster rooted at ``root``; Unix socket paths are limited to
    107 bytes, so a deep root gets a short path under the temp directory instead."""
    path = root / "control.sock"
    if len(os.fsencode(path)) < 100:
        return path
    return Path(tempfile.gettempdir()) / f"twinbench-{os.getpid()}.sock"


def load_state(path: Path) -> dict[str, Any]:
    """Read a cluster state file and check its cluster is still running; UserError if not."""
    try:
        state = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise UserError(f"no running cluster found: {path} does not exist (start one with "
                        "`twinbench cluster`, or give its state file with --state)") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read cluster state {path}: {exc}") from None
    if not isinstance(state, dict) or state.get("kind") != "twinbench.cluster":
        raise UserError(f"{path} is not a twinbench cluster state file")
    pid = state.get("pid")
    if not isinstance(pid, int) or not pid_alive(pid):
        raise UserError(f"the cluster in {path} is not running (its process {pid} is gone): "
                        "the state file is stale")
    return state


def request(state: dict[str, Any], message: dict[str, Any],
            timeout_s: float = REQUEST_TIMEOUT_S) -> dict[str, Any]:
    """Send one request to the cluster process described by ``state``; its answer."""
    path = state.get("control")
    if not isinstance(path, str):
        raise UserError("the cluster state file names no control socket")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(path)
            s.sendall(json.dumps(message).encode() + b"\n")
            s.shutdown(socket.SHUT_WR)
            data = _read_all(s)
    except TimeoutError:
        raise UserError(f"the cluster did not answer within {timeout_s:.0f} s") from None
    except OSError as exc:
        raise UserError(f"cannot reach the cluster's control socket {path}: {exc}") from None
    try:
        answer = json.loads(data)
    except ValueError:
        raise UserError("the cluster sent an unreadable answer") from None
    if not isinstance(answer, dict):
        raise UserError("the cluster sent an unreadable answer")
    return answer


def _read_all(s: socket.socket) -> bytes:
    chunks, size = [], 0
    while chunk := s.recv(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise OSError("control message too large")
    return b"".join(chunks)


Handler = Callable[[dict[str, Any]], str]


class ControlServer:
    """Serves requests on a Unix socket in a daemon thread; ``handler`` returns the answer line
    or raises UserError (sent back as the error). The handler runs in the server thread, so it
    must take whatever lock the cluster's other user (the watch loop) takes."""

    def __init__(self, path: Path, handler: Handler) -> None:
        self.path = path
        self._handler = handler
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self._sock.bind(str(path))
        os.chmod(path, 0o600)  # only this user may inject faults
        self._sock.listen(8)
        self._thread = threading.Thread(target=self._serve, name="twinbench-control",
                                        daemon=True)
        self._closed = False

    def start(self) -> ControlServer:
        self._thread.start()
        return self

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            with conn:
                conn.settimeout(10.0)
                try:
                    message = json.loads(_read_all(conn) or b"null")
                    if not isinstance(message, dict):
                        raise UserError("a request must be a JSON object")
                    answer: dict[str, Any] = {"ok": True, "line": self._handler(message)}
                except UserError as exc:
                    answer = {"ok": False, "error": str(exc)}
                except (OSError, ValueError) as exc:
                    answer = {"ok": False, "error": f"bad request: {exc}"}
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps(answer).encode())

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
