"""The znode layout and payload formats: Kafka's own, so Kafka-era tools can read our tree.

Layout (every path under an optional chroot, e.g. ``/twinbench-run-7``)::

    /brokers/ids/<id>                                  ephemeral  broker registration (JSON)
    /controller                                        ephemeral  {"version":1,"brokerid":N,...}
    /controller_epoch                                  persistent "N" (bumped per election)
    /brokers/topics/<topic>                            persistent {"version":1,"partitions":{..}}
    /brokers/topics/<topic>/partitions/<p>/state       persistent leader, leader_epoch, isr
    /config/topics/<topic>                             persistent {"version":1,"config":{..}}
    /admin/delete_topics/<topic>                       persistent deletion requested (czxid)
    /consumers/<group>/ids/<member>                    ephemeral  member registration (JSON)
    /consumers/<group>/owners/<topic>/<partition>      ephemeral  owning member id (text)
    /consumers/<group>/offsets/<topic>/<partition>     persistent committed offset (decimal)
    /consumers/<group>/generation                      persistent the group's fence (empty;
                                                                  its version is the token)
    /latest_producer_id_block                          persistent {"version":1,"broker":..}
    /twinbench/transactions/<transactional id>         persistent a transaction's record
                                                                  (JSON; its version is the
                                                                  compare-and-set token)
    /cluster/id                                        persistent {"version":"1","id":".."}

The chroot is applied here rather than by kazoo: kazoo cannot create its own chroot path once
started, and a prefix we own also lets a test open the same paths with a plain KazooClient.

Offsets are stored as Kafka 0.8.2 did with ``offsets.storage=zookeeper``: the decimal offset
and nothing else, whenever the commit carries no metadata and no leader epoch (every commit of
the benchmark's load client). Kafka 0.8.2 dropped a non-empty metadata string; we must not,
because the twins may differ only in where coordination state lives, never in what a client
gets back, so such a commit is stored as a small JSON object instead. ``decode_offset`` reads
both forms.

Group and member ids are free-form strings chosen by clients, so they are percent-encoded into
one path segment ("/" would otherwise create a subtree); topic names are validated by Kafka's
rules before they get here and are used verbatim, as Kafka does.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from brokers.core.coordinator import BrokerInfo, MemberRecord, TopicPartition

# Kafka's topic-name rule (kafka.common.Topic / org.apache.kafka.common.internals.Topic).
# Broker registration version 4 is the first that carries "rack" and "endpoints" (Kafka 0.10).
BROKER_ZNODE_VERSION = 4


def _dumps(obj: Any) -> bytes:
    # Kafka writes compact JSON; keep byte-for-byte habits so diffs against Kafka dumps are clean.
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _loads(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"))


def _now_ms() -> str:
    return str(int(time.time() * 1000))


def _segment(free_form: str) -> str:
    """A client-chosen id as one znode name ("." and ".." are not legal znode names either)."""
    seg = quote(free_form, safe="-_~")
    return seg.replace(".", "%2E") if seg in (".", "..") else seg


class ZkPaths:
    """Every path the zk broker uses, under one chroot."""

    def __init__(self, chroot: str = "") -> None:
        chroot = chroot.rstrip("/")
        if chroot and not chroot.startswith("/"):
            raise ValueError(f"chroot must start with '/': {chroot!r}")
        self.chroot = chroot
        c = chroot
        self.root = c or "/"
        self.brokers = f"{c}/brokers"
        self.broker_ids = f"{c}/brokers/ids"
        self.topics = f"{c}/brokers/topics"
        self.controller = f"{c}/controller"
        self.controller_epoch = f"{c}/controller_epoch"
        self.config_topics = f"{c}/config/topics"
        self.delete_topics = f"{c}/admin/delete_topics"
        self.consumers = f"{c}/consumers"
        self.producer_id_block = f"{c}/latest_producer_id_block"
        # Not a Kafka path: ZooKeeper-era Kafka kept transactions in its __transaction_state
        # topic, which this twin does not have (docs/transactions.md).
        self.transactions = f"{c}/twinbench/transactions"
        self.cluster_id = f"{c}/cluster/id"
        # Persistent parents created at start-up, so later writes need no makepath round trips.
        # (Not /admin/delete_topics: the first deletion creates it, so a cluster that never
        # deletes a topic pays nothing for it.)
        self.roots = (self.broker_ids, self.topics, self.config_topics, self.consumers)
        prefix = re.escape(c)
        self._topic_re = re.compile(rf"{prefix}/brokers/topics/([^/]+)")
        self._config_re = re.compile(rf"{prefix}/config/topics/([^/]+)")
        self._state_re = re.compile(rf"{prefix}/brokers/topics/([^/]+)/partitions/(\d+)/state")

    def transaction(self, transactional_id: str) -> str:
        return f"{self.transactions}/{_segment(transactional_id)}"

    def broker(self, node_id: int) -> str:
        return f"{self.broker_ids}/{node_id}"

    def topic(self, topic: str) -> str:
        return f"{self.topics}/{topic}"

    def partition(self, topic: str, partition: int) -> str:
        return f"{self.topics}/{topic}/partitions/{partition}"

    def partition_state(self, topic: str, partition: int) -> str:
        return f"{self.partition(topic, partition)}/state"

    def topic_config(self, topic: str) -> str:
        return f"{self.config_topics}/{topic}"

    def delete_topic(self, topic: str) -> str:
        return f"{self.delete_topics}/{topic}"

    def group(self, group: str) -> str:
        return f"{self.consumers}/{_segment(group)}"

    def member_ids(self, group: str) -> str:
        return f"{self.group(group)}/ids"

    def member(self, group: str, member_id: str) -> str:
        return f"{self.member_ids(group)}/{_segment(member_id)}"

    def owners(self, group: str) -> str:
        return f"{self.group(group)}/owners"

    def owners_topic(self, group: str, topic: str) -> str:
        return f"{self.owners(group)}/{topic}"

    def owner(self, group: str, tp: TopicPartition) -> str:
        return f"{self.owners_topic(group, tp.topic)}/{tp.partition}"

    def offsets(self, group: str) -> str:
        return f"{self.group(group)}/offsets"

    def generation(self, group: str) -> str:
        return f"{self.group(group)}/generation"

    def offsets_topic(self, group: str, topic: str) -> str:
        return f"{self.offsets(group)}/{topic}"

    def offset(self, group: str, tp: TopicPartition) -> str:
        return f"{self.offsets_topic(group, tp.topic)}/{tp.partition}"

    # --- reverse mapping for watch events ------------------------------------------------------
    def match_topic(self, path: str) -> str | None:
        m = self._topic_re.fullmatch(path)
        return m.group(1) if m else None

    def match_topic_config(self, path: str) -> str | None:
        m = self._config_re.fullmatch(path)
        return m.group(1) if m else None

    def match_state(self, path: str) -> TopicPartition | None:
        m = self._state_re.fullmatch(path)
        return TopicPartition(m.group(1), int(m.group(2))) if m else None


def member_id_from_segment(segment: str) -> str:
    return unquote(segment)


# --- /brokers/ids/<id> --------------------------------------------------------------------------
def encode_broker(info: BrokerInfo, timestamp_ms: str | None = None,
                  protocol: str = "PLAINTEXT") -> bytes:
    """Kafka's broker registration (version 4): host/port plus the endpoint list and rack.
    The endpoint is the registered listener's, named by its protocol (Kafka's default
    listener names are the protocols)."""
    return _dumps(
        {
            "version": BROKER_ZNODE_VERSION,
            "host": info.host,
            "port": info.port,
            "jmx_port": -1,
            "timestamp": timestamp_ms or _now_ms(),
            "endpoints": [f"{protocol}://{info.host}:{info.port}"],
            "listener_security_protocol_map": {protocol: protocol},
            "rack": info.rack,
        }
    )


def decode_broker(node_id: int, data: bytes) -> BrokerInfo:
    obj = _loads(data)
    host, port = obj.get("host"), obj.get("port")
    if not host or port in (None, -1):
        # Kafka >= 0.10 may leave host/port empty and list only endpoints.
        endpoint = obj["endpoints"][0]
        host, _, port_text = endpoint.split("://", 1)[1].rpartition(":")
        port = int(port_text)
    return BrokerInfo(node_id, str(host), int(port), obj.get("rack"))


# --- /controller, /controller_epoch -------------------------------------------------------------
def encode_controller(broker_id: int, timestamp_ms: str | None = None) -> bytes:
    return _dumps({"version": 1, "brokerid": broker_id, "timestamp": timestamp_ms or _now_ms()})


def decode_controller(data: bytes) -> int:
    try:
        return int(_loads(data)["brokerid"])
    except (ValueError, KeyError, TypeError):
        # Kafka 0.8.0 wrote the bare id.
        return int(data.decode("ascii").strip())


def encode_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_epoch(data: bytes) -> int:
    return int(data.decode("ascii").strip())


# --- /brokers/topics/<t> and /config/topics/<t> -------------------------------------------------
def encode_assignment(assignment: dict[int, tuple[int, ...]]) -> bytes:
    """Partition -> replica list; JSON object keys are the partition numbers as strings."""
    return _dumps({"version": 1, "partitions": {str(p): list(r) for p, r in assignment.items()}})


def decode_assignment(data: bytes) -> dict[int, tuple[int, ...]]:
    obj = _loads(data)
    parts = {int(p): tuple(int(b) for b in r) for p, r in obj["partitions"].items()}
    return dict(sorted(parts.items()))


def encode_marker(czxid: int) -> bytes:
    """A deletion marker's payload: which topic znode (its creation zxid) is to go. Kafka
    writes none; ``decode_marker`` reads such a marker as "whatever topic of the name"."""
    return str(czxid).encode("ascii")


def decode_marker(data: bytes | None) -> int | None:
    try:
        return int((data or b"").decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None


def encode_topic_config(configs: dict[str, str]) -> bytes:
    return _dumps({"version": 1, "config": dict(configs)})


def decode_topic_config(data: bytes) -> dict[str, str]:
    return {str(k): str(v) for k, v in _loads(data).get("config", {}).items()}


# --- /brokers/topics/<t>/partitions/<p>/state ---------------------------------------------------
@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """The partition state znode's content (Kafka's LeaderIsrAndControllerEpoch)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def encode(self) -> bytes:
        return _dumps(
            {
                "version": 1,
                "leader": self.leader,
                "leader_epoch": self.leader_epoch,
                "isr": list(self.isr),
                "controller_epoch": self.controller_epoch,
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> LeaderAndIsr:
        obj = _loads(data)
        return cls(
            int(obj["leader"]),
            int(obj["leader_epoch"]),
            tuple(int(b) for b in obj.get("isr", ())),
            int(obj.get("controller_epoch", 0)),
        )


# --- consumer registries ------------------------------------------------------------------------
def encode_member(record: MemberRecord, timestamp_ms: str | None = None) -> bytes:
    """Kafka 0.8's consumer registration, plus who the member is (the modern group protocol
    knows the client id and host; 0.8 encoded them into the consumer id instead)."""
    return _dumps(
        {
            "version": 1,
            "subscription": {},
            "pattern": "static",
            "timestamp": timestamp_ms or _now_ms(),
            "member_id": record.member_id,
            "client_id": record.client_id,
            "client_host": record.client_host,
        }
    )


def decode_member(data: bytes) -> MemberRecord:
    obj = _loads(data)
    return MemberRecord(str(obj["member_id"]), str(obj["client_id"]), str(obj["client_host"]))


def encode_owner(member_id: str) -> bytes:
    return member_id.encode("utf-8")


def decode_owner(data: bytes) -> str:
    return data.decode("utf-8")


def encode_offset(offset: int, metadata: str | None = "", leader_epoch: int = -1) -> bytes:
    if not metadata and leader_epoch < 0:
        return str(offset).encode("ascii")
    return _dumps({"offset": offset, "metadata": metadata, "leader_epoch": leader_epoch})


def decode_offset(data: bytes) -> tuple[int, str, int]:
    """(offset, metadata, leader_epoch) from either stored form."""
    text = data.decode("utf-8").strip()
    if text.startswith("{"):
        obj = _loads(data)
        return int(obj["offset"]), obj.get("metadata") or "", int(obj.get("leader_epoch", -1))
    return int(text), "", -1


# --- /latest_producer_id_block ------------------------------------------------------------------
def encode_producer_id_block(broker_id: int, start: int, end: int) -> bytes:
    # Kafka writes block bounds as JSON strings (longs do not survive every JSON parser).
    return _dumps(
        {"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end)}
    )


def decode_producer_id_block(data: bytes) -> tuple[int, int]:
    obj = _loads(data)
    return int(obj["block_start"]), int(obj["block_end"])


# --- /cluster/id --------------------------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(_loads(data)["id"])
