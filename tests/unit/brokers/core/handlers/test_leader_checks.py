"""Which leadership check the data path takes under each metadata_check policy and coordinator.

``per_request`` means "ask the coordination store on every produce/fetch". For ZooKeeper that
is a round trip (the async path); for a coordinator whose view is the store itself (DSBS's own
tables, the single node) the synchronous check already reads the store. Constructing the
coordinators does no network I/O.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core.config import BrokerConfig
from brokers.core.coordinator import Coordinator
from brokers.core.errors import UserError
from brokers.core.handlers.context import BrokerContext
from brokers.core.local_coordinator import LocalCoordinator
from brokers.dsbs_broker.coordinator import DsbsCoordinator
from brokers.zk_broker import ZkCoordinator, ZkCoordinatorConfig


def context(coordinator: Coordinator, policy: str, tmp_path: Path) -> BrokerContext:
    config = BrokerConfig(node_id=0, host="127.0.0.1", port=0, data_dir=tmp_path,
                          metadata_check=policy)  # type: ignore[arg-type]
    return BrokerContext(config, coordinator, None, None, None)  # type: ignore[arg-type]


@pytest.mark.filesystem
@pytest.mark.parametrize("policy", ["per_request", "cached"])
def test_only_a_remote_store_takes_the_async_path(tmp_path: Path, policy: str) -> None:
    zk = ZkCoordinator(ZkCoordinatorConfig("127.0.0.1:2181"), 0)
    dsbs = DsbsCoordinator(0, tmp_path / "dsbs")
    local = LocalCoordinator(0, tmp_path / "local")
    assert not zk.view_is_store and dsbs.view_is_store and local.view_is_store
    assert context(zk, policy, tmp_path).per_request == (policy == "per_request")
    assert context(dsbs, policy, tmp_path).per_request is False
    assert context(local, policy, tmp_path).per_request is False


def test_zk_data_path_and_addresses_are_validated() -> None:
    assert ZkCoordinatorConfig("a:1,b:2/chroot").endpoints() == (("a", 1), ("b", 2))
    assert ZkCoordinatorConfig("zk").endpoints() == (("zk", 2181),)
    assert ZkCoordinatorConfig("127.0.0.1:2181").data_path == "direct"
    with pytest.raises(UserError, match="data_path"):
        ZkCoordinatorConfig("127.0.0.1:2181", data_path="threads")
    with pytest.raises(UserError, match="bad ZooKeeper address"):
        ZkCoordinatorConfig("127.0.0.1:notaport")
