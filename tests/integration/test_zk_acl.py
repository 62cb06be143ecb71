"""zk twin with ZooKeeper digest auth and ACLs, against a real ZooKeeper: an unauthenticated
client reads broker, topic and offset state and can change none of it; the brokers (both
sessions: kazoo's and the direct data path's) work as before; a wrong credential is refused."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import Permissions

from brokers.core.coordinator import BrokerInfo, OffsetAndMetadata, TopicPartition
from brokers.core.errors import UserError
from brokers.zk_broker import ZkCoordinator, ZkCoordinatorConfig
from brokers.zk_broker.acl import ZkDigest, load_digest
from harness.services.zookeeper import ZooKeeperHandle
from tests.support.zk_fixtures import TEST_SESSION_TIMEOUT_MS, async_wait_until

pytestmark = [pytest.mark.integration, pytest.mark.zookeeper]

DIGEST = ZkDigest("twinbench", "zk-secret")


@pytest.fixture
def kz(zk: ZooKeeperHandle) -> Iterator[KazooClient]:
    """A client without any credential."""
    client = KazooClient(hosts=zk.connect_string, timeout=4.0)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def _config(connect: str, chroot: str, digest: ZkDigest | None) -> ZkCoordinatorConfig:
    return ZkCoordinatorConfig(
        connect, chroot=chroot, session_timeout_ms=TEST_SESSION_TIMEOUT_MS,
        connection_timeout_ms=5000, request_timeout_ms=5000, create_topic_timeout_ms=10_000,
        reconnect_max_delay_ms=200, digest=digest)


def test_unauthenticated_clients_read_but_cannot_change_broker_topic_and_offset_state(
        zk: ZooKeeperHandle, kz: KazooClient) -> None:
    chroot = f"/acl-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition("t", 0)

    # The broker stays up (registered, controller) while the outsider tries.
    loop = asyncio.new_event_loop()
    try:
        c = ZkCoordinator(_config(zk.connect_string, chroot, DIGEST), 1)
        loop.run_until_complete(c.start(BrokerInfo(1, "127.0.0.1", 19001)))
        loop.run_until_complete(async_wait_until(lambda: c.is_controller, 10, "controller"))
        loop.run_until_complete(c.create_topic("t", 1, 1))
        loop.run_until_complete(c.commit_offsets("g", {tp: OffsetAndMetadata(5)}))
        direct_before = c.counters().to_json()["zk_direct_requests"]
        loop.run_until_complete(c.commit_offsets("g", {tp: OffsetAndMetadata(9)}))
        assert c.counters().to_json()["zk_direct_requests"] > direct_before
        assert loop.run_until_complete(c.fetch_offsets("g", [tp]))[tp].offset == 9
        loop.run_until_complete(c.allocate_producer_id())

        state = [f"{chroot}/brokers/ids/1", f"{chroot}/brokers/topics/t",
                 f"{chroot}/brokers/topics/t/partitions/0/state", f"{chroot}/controller",
                 f"{chroot}/consumers/g/offsets/t/0", f"{chroot}/latest_producer_id_block"]
        for path in state:
            data, _ = kz.get(path)  # readable by anyone
            assert data, path
            acls, _ = kz.get_acls(path)
            assert {(a.id.scheme, a.perms) for a in acls} == {
                ("digest", Permissions.ALL), ("world", Permissions.READ)}, path
            with pytest.raises(NoAuthError):
                kz.set(path, b"forged")
            parent, _, leaf = path.rpartition("/")
            with pytest.raises(NoAuthError):
                kz.delete(path, recursive=False)
            with pytest.raises(NoAuthError):
                kz.create(f"{parent}/forged-{leaf}", b"x")
        # The credential's holder may change them: the ACL is the digest's, not nobody's.
        owner = KazooClient(hosts=zk.connect_string, timeout=4.0,
                            auth_data=[("digest", DIGEST.credential)])
        owner.start(timeout=10)
        try:
            owner.create(f"{chroot}/consumers/g/offsets/t/owned", b"1")
            owner.delete(f"{chroot}/consumers/g/offsets/t/owned")
        finally:
            owner.stop()
            owner.close()
        loop.run_until_complete(c.close())
    finally:
        loop.close()


def test_a_broker_with_the_wrong_credential_cannot_change_acl_state(
        zk: ZooKeeperHandle) -> None:
    chroot = f"/acl-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        good = ZkCoordinator(_config(zk.connect_string, chroot, DIGEST), 1)
        await good.start(BrokerInfo(1, "127.0.0.1", 19001))
        try:
            await async_wait_until(lambda: good.is_controller, 10, "controller")
            await good.create_topic("t", 1, 1)
            # Digest auth never fails at addauth (ZooKeeper accepts any digest identity), so
            # the wrong credential shows when the broker tries to write ACL'd state.
            bad = ZkCoordinator(
                _config(zk.connect_string, chroot, ZkDigest("twinbench", "guess")), 2)
            with pytest.raises(NoAuthError):
                # Its first write: the chroot's subtree, whose ACL names another identity.
                await bad.start(BrokerInfo(2, "127.0.0.1", 19002))
            await bad.close()
            assert "u" not in good.cluster().topics
        finally:
            await good.close()

    asyncio.run(scenario())


def test_credential_file(tmp_path) -> None:
    path = tmp_path / "zk"
    path.write_text("twinbench:s3cr:et\n")
    path.chmod(0o600)
    assert load_digest(path) == ZkDigest("twinbench", "s3cr:et")
    path.chmod(0o644)
    with pytest.raises(UserError, match="open to other users"):
        load_digest(path)
    for bad in ("nocolon", ":x", "u:"):
        with pytest.raises(UserError):
            ZkDigest.parse(bad)
