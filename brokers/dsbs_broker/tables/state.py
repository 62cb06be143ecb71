"""The small durable state of one DSBS broker: its incarnation and producer-id high-water mark.

One JSON document in the data dir, replaced atomically and durably (``brokers.core.atomic_file``).
The incarnation is persisted so a restarted broker announces a higher one than the cluster
remembers (otherwise its ALIVE would lose to the DEAD everyone holds at the old incarnation).
Producer-id blocks are reserved here before any id of the block is handed out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from brokers.core.atomic_file import replace_file
from brokers.core.errors import UserError

STATE_FILE = "dsbs_state.json"


@dataclass
class NodeState:
    node_id: int
    incarnation: int = 0
    producer_id_next: int = 0  # first counter value not yet reserved


class StateFile:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / STATE_FILE

    def load(self, node_id: int) -> NodeState:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return NodeState(node_id)
        except ValueError as e:
            raise UserError(f"{self.path} is not valid JSON: {e}") from e
        if raw.get("node_id") != node_id:
            # Two node ids sharing a data dir would share incarnations and producer ids.
            raise UserError(f"{self.path} belongs to node {raw.get('node_id')}, not {node_id}")
        return NodeState(node_id, int(raw.get("incarnation", 0)),
                         int(raw.get("producer_id_next", 0)))

    def store(self, state: NodeState) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(self.path, json.dumps({"node_id": state.node_id,
                                            "incarnation": state.incarnation,
                                            "producer_id_next": state.producer_id_next}))
