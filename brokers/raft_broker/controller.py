"""``python -m brokers.raft_broker.controller``: a dedicated controller of the Raft twin (KRaft's
``process.roles=controller``).

A voter of the metadata quorum and nothing else: it keeps and replicates the log and, while it
leads, runs the controller (fencing, leadership, ISR decisions), but serves no Kafka client and
holds no partition. The brokers are then all learners. Same quorum options as the broker
(``--raft``, ``--raft-peers``, ``--voters``, the key, ``--cluster-id``, ``--session-timeout``);
its node id must be one of the voters and no broker's.

It prints ``listening=HOST:PORT`` (its Raft listener) once that is bound, stops cleanly on
SIGINT/SIGTERM and, on SIGUSR1, writes ``<data-dir>/counters.json`` in the brokers' shape
(brokers/core/broker.py): its coordinator counters and its process's (CPU, fsyncs; no Kafka
requests), so the harness reads both kinds of process the same way. A bad option is one line
and exit 2; a failed data directory stops it with one line and exit 1.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from brokers.core import fsyncs
from brokers.core.atomic_file import replace_file
from brokers.core.broker import configure_logging, install_event_loop_policy
from brokers.core.cli import OneLineParser
from brokers.core.counters import BrokerCounters
from brokers.core.datadir import DataDir
from brokers.core.errors import KafkaStorageError, UserError
from brokers.raft_broker.cli import add_quorum_arguments, quorum_config
from brokers.raft_broker.config import RaftBrokerConfig
from brokers.raft_broker.coordinator import RaftCoordinator

PROG = "python -m brokers.raft_broker.controller"
log = logging.getLogger("twinbench.raft.controller")


def _counters_doc(node_id: int, coordinator: RaftCoordinator, started: float) -> dict[str, object]:
    t = os.times()
    process = BrokerCounters(cpu_user_s=t.user, cpu_system_s=t.system, connections=0.0,
                             connections_refused=0, uptime_s=time.monotonic() - started,
                             sasl_authentications=0, sasl_authentication_failures=0,
                             kafka_requests={}, fsyncs=fsyncs.count())
    return {"node_id": node_id, "written_unix_ns": time.time_ns(),
            "coordinator": coordinator.counters().to_json(), "broker": process.to_json()}


async def _serve(node_id: int, data_dir: Path, config: RaftBrokerConfig, datadir: DataDir
                 ) -> int:
    coordinator = RaftCoordinator(node_id, data_dir, config, datadir=datadir)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def dump() -> None:
        try:
            replace_file(data_dir / "counters.json",
                         json.dumps(_counters_doc(node_id, coordinator, started), sort_keys=True),
                         sync_file=False, sync_dir=False)
        except OSError:
            log.exception("could not write counters.json")

    # Before "listening=": SIGUSR1's default action kills a process.
    loop.add_signal_handler(signal.SIGUSR1, dump)
    datadir.on_failure(lambda reason: stop.set())
    try:
        await coordinator.start_controller()
        print(f"listening={coordinator.config.listen_host}:{coordinator.raft_port}",
              flush=True)
        await stop.wait()
    finally:
        log.info("controller %d shutting down", node_id)
        await coordinator.close()
    if datadir.offline is not None:
        raise KafkaStorageError(f"data directory {data_dir} failed ({datadir.offline}); the "
                                "controller stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--node-id", type=int, required=True,
                        help="this controller's id: one of the voters, no broker's")
    parser.add_argument("--data-dir", type=Path, required=True, metavar="DIR",
                        help="directory for the metadata log (raft/) and counters.json")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    add_quorum_arguments(parser)
    try:
        args = parser.parse_args(argv)
        configure_logging(args.log_level)
        config = quorum_config(args, args.node_id)
        if args.node_id not in config.voters:
            raise UserError(f"node {args.node_id} is not among the voters "
                            f"{list(config.voters)}: a dedicated controller votes")
        data_dir: Path = args.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        datadir = DataDir(data_dir).lock()
        try:
            install_event_loop_policy()
            return asyncio.run(_serve(args.node_id, data_dir, config, datadir))
        finally:
            datadir.unlock()
    except (UserError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KafkaStorageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
