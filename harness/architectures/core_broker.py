"""The command line of a broker built on brokers/core: the core's flags, plus the entry's own.

Every program built on the shared core (``python -m brokers.core``, ``python -m
brokers.zk_broker``, ``python -m brokers.dsbs_broker``) takes the same core options
(brokers/core/cli.py: node id, listener and its security, data directory, flush and metadata
policies, auto-creation, limits) and prints ``listening=HOST:PORT`` once it serves, so the
entries of those architectures differ only in the module they run and the arguments they add.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from brokers.core.security.listeners import Listener
from harness.architectures.entry import BrokerSettings, Node, ProcessSpec


def security_args(s: BrokerSettings) -> list[str]:
    """The core brokers' command-line options for the listener's security (none for
    PLAINTEXT)."""
    args: list[str] = []
    if s.protocol.tls:
        args += ["--ssl-certfile", str(s.ssl_certfile), "--ssl-keyfile", str(s.ssl_keyfile)]
        if s.ssl_ca_location is not None:
            # What followers trust when they fetch from a leader (replication over TLS).
            args += ["--ssl-truststore", str(s.ssl_ca_location)]
    if s.protocol.sasl:
        args += ["--sasl-mechanisms", ",".join(s.sasl_mechanisms),
                 "--sasl-credentials-file", str(s.sasl_credentials_file)]
    return args


def core_broker(module: str, settings: BrokerSettings,
                extra: Callable[[Node], Sequence[str]] = lambda node: ()
                ) -> Callable[[Node], ProcessSpec]:
    """The process of each node: ``python -m module`` with the core's options, ``extra(node)``
    after the node's own and before the cluster's common ones."""
    common = [*security_args(settings),
              "--flush", settings.flush, "--metadata-check", settings.metadata_check,
              "--num-partitions", str(settings.num_partitions),
              "--auto-create-topics" if settings.auto_create_topics
              else "--no-auto-create-topics",
              "--log-level", "INFO", *settings.extra_args]

    def process(node: Node) -> ProcessSpec:
        return ProcessSpec((
            node.python, "-m", module, "--node-id", str(node.node_id),
            "--listener", str(Listener(settings.protocol, node.host, node.port)),
            *(["--metrics", node.metrics] if node.metrics is not None else []),
            "--data-dir", str(node.data_dir), *extra(node), *common))

    return process
