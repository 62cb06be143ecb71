"""Admin APIs through the real admin clients (kafka-python's KafkaAdminClient, confluent-kafka's
AdminClient), on every architecture: group listing and description, the ACL APIs, which
answer SECURITY_DISABLED because no authorizer exists (Kafka's answer in the same situation),
topic configs (described, altered whole and incrementally), adding partitions, deleting
groups and committed offsets, and deleting topics (with their files and offsets; for good, across
restarts; the name free for a new topic that starts at offset 0).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest

from brokers.core.errors import (
    GroupIdNotFound,
    InvalidConfig,
    InvalidPartitions,
    InvalidRequest,
    NonEmptyGroup,
    SecurityDisabled,
    UnknownTopicOrPartition,
)
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.acls import DescribeAclsRequest
from brokers.core.protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from brokers.core.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from brokers.core.protocol.messages.describe_configs import (
    DEFAULT_CONFIG,
    TOPIC,
    TOPIC_CONFIG,
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from harness.cluster.kafka_probe import KafkaProbe
from tests.support.ops import (
    create_everywhere,
    eventually,
    fetch_values,
    leaders,
    produce,
    produce_values,
)
from tests.support.record_builder import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.interop]


@contextlib.contextmanager
def stable_member(cluster, topic: str, group: str) -> Iterator[None]:
    """A confluent-kafka consumer that has joined ``group`` and holds its assignment."""
    ck = pytest.importorskip("confluent_kafka")
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap})
    producer.produce(topic, b"x")
    assert producer.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                            "client.id": "admin-test-member", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                break
        else:
            pytest.fail("the consumer never received its record")
        yield
    finally:
        consumer.close()


def _names() -> tuple[str, str]:
    return f"adm-{uuid.uuid4().hex[:10]}", f"adm-g-{uuid.uuid4().hex[:8]}"


def test_kafka_python_admin_lists_and_describes_a_live_group(cluster):
    kadmin = pytest.importorskip("kafka.admin")
    topic, group = _names()
    with stable_member(cluster, topic, group):
        admin = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            listed = {g["group_id"]: g for g in admin.list_groups()}
            assert listed[group]["protocol_type"] == "consumer"
            desc = admin.describe_groups([group])[group]
        finally:
            admin.close()
    assert desc["group_state"] == "Stable" and desc["protocol_type"] == "consumer"
    (member,) = desc["members"]
    assert member["client_id"] == "admin-test-member"
    # kafka-python decodes the assignment blob: the broker handed back the leader's bytes.
    assert topic in str(member["member_assignment"])


def test_confluent_admin_lists_and_describes_a_live_group(cluster):
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    topic, group = _names()
    with stable_member(cluster, topic, group):
        admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
        listed = admin.list_consumer_groups().result(30)
        assert group in {g.group_id for g in listed.valid}
        desc = admin.describe_consumer_groups([group])[group].result(30)
    assert desc.state.name == "STABLE" and not desc.is_simple_consumer_group
    (member,) = desc.members
    assert member.client_id == "admin-test-member"
    assert {tp.topic for tp in member.assignment.topic_partitions} == {topic}


def test_describing_an_unknown_group_reports_it_dead(cluster):
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    desc = admin.describe_consumer_groups(["adm-never-seen"])["adm-never-seen"].result(30)
    assert desc.state.name == "DEAD" and list(desc.members) == []


def test_acl_apis_answer_security_disabled_and_the_broker_stays_up(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    acl_filter = ck_admin.AclBindingFilter(
        ck_admin.ResourceType.ANY, None, ck_admin.ResourcePatternType.ANY, None, None,
        ck_admin.AclOperation.ANY, ck_admin.AclPermissionType.ANY)
    binding = ck_admin.AclBinding(
        ck_admin.ResourceType.TOPIC, "t", ck_admin.ResourcePatternType.LITERAL, "User:u", "*",
        ck_admin.AclOperation.READ, ck_admin.AclPermissionType.ALLOW)
    for fut in [*admin.create_acls([binding]).values(), *admin.delete_acls([acl_filter]).values()]:
        with pytest.raises(ck.KafkaException) as info:
            fut.result(30)
        assert info.value.args[0].code() == SecurityDisabled.code
    # librdkafka 2.16 drops DescribeAcls' top-level error and reports no ACLs, which is true;
    # the error itself is checked on the wire at every version.
    assert list(admin.describe_acls(acl_filter).result(30)) == []
    b = cluster.brokers[0]
    with KafkaProbe(b.host, b.port) as probe:
        for version in (0, 1, 2):
            got = probe.request(ApiKey.DESCRIBE_ACLS, version, DescribeAclsRequest(
                resource_type_filter=1, operation=1, permission_type=1))
            assert got.error_code == SecurityDisabled.code and got.resources == []
    # kafka-python says the same through its own code path.
    kadmin = pytest.importorskip("kafka.admin")
    kerrors = pytest.importorskip("kafka.errors")
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        with pytest.raises(kerrors.SecurityDisabledError):
            kp.describe_acls(kadmin.ACLFilter(
                principal=None, host="*", operation=kadmin.ACLOperation.ANY,
                permission_type=kadmin.ACLPermissionType.ANY,
                resource_pattern=kadmin.ResourcePatternFilter(
                    kadmin.ResourceType.ANY, None, kadmin.ACLResourcePatternType.ANY)))
        eventually(lambda: kp.list_groups() is not None, timeout_s=10)  # still serving
    finally:
        kp.close()


def test_create_topics_validates_configs_with_invalid_config(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    bad = {"unknown": {"retention.millis": "5"}, "policy": {"cleanup.policy": "shred"},
           "value": {"retention.ms": "soon"}, "small": {"segment.bytes": "10"}}
    topics = {kind: f"adm-bad-{kind}-{uuid.uuid4().hex[:6]}" for kind in bad}
    futures = admin.create_topics([ck_admin.NewTopic(topics[k], 1, 1, config=c)
                                   for k, c in bad.items()])
    for fut in futures.values():
        with pytest.raises(ck.KafkaException) as info:
            fut.result(30)
        assert info.value.args[0].code() == InvalidConfig.code
    # Kafka's words (compact is a valid policy: tests/contract/test_contract_topic_configs.py).
    assert "Invalid value shred for configuration cleanup.policy: String must be one of: " \
        "compact, delete" in str(_error(futures[topics["policy"]]))
    assert "Unknown topic config name: retention.millis" in str(_error(futures[topics["unknown"]]))
    # Nothing was created, and validate_only with good configs creates nothing either.
    name = f"adm-validate-{uuid.uuid4().hex[:6]}"
    admin.create_topics([ck_admin.NewTopic(name, 2, 1, config={"retention.ms": "60000"})],
                        validate_only=True)[name].result(30)
    listed = admin.list_topics(timeout=30).topics
    assert not set(topics.values()) & set(listed) and name not in listed


def _error(fut):
    try:
        fut.result(0)
    except Exception as exc:  # the KafkaException carrying the broker's message
        return exc
    return None


def test_topic_configs_are_described_by_both_admin_clients(cluster):
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    name = f"adm-cfg-{uuid.uuid4().hex[:8]}"
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([ck_admin.NewTopic(name, 1, 1, config={
        "retention.ms": "3600000", "segment.bytes": "1048576",
        "min.insync.replicas": "1"})])[name].result(30)
    res = ck_admin.ConfigResource(ck_admin.ResourceType.TOPIC, name)
    entries = eventually(lambda: admin.describe_configs([res])[res].result(30), timeout_s=15)
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == ck_admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["segment.bytes"].value == "1048576"
    assert entries["cleanup.policy"].value == "delete"
    assert entries["retention.bytes"].source == ck_admin.ConfigSource.DEFAULT_CONFIG.value
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        # kafka-python asks any broker: one that has not yet applied the creation (every
        # broker follows the one that created it) describes nothing, as Kafka's would.
        eventually(lambda: "3600000" in str(kp.describe_configs(
            [kadmin.ConfigResource(kadmin.ConfigResourceType.TOPIC, name)])), timeout_s=15,
            what="the topic's configs described through kafka-python")
        broker_id = next(iter(admin.list_topics(timeout=30).brokers))
        brokers = kp.describe_configs([kadmin.ConfigResource(
            kadmin.ConfigResourceType.BROKER, str(broker_id))], config_filter="all")
        assert "num.partitions" in str(brokers)
    finally:
        kp.close()
    # An unknown topic is an error for that resource only.
    missing = ck_admin.ConfigResource(ck_admin.ResourceType.TOPIC, "adm-no-such-topic")
    with pytest.raises(Exception, match=r"UNKNOWN_TOPIC_OR_PART|nknown topic"):
        admin.describe_configs([missing])[missing].result(30)


# --- CreatePartitions ---------------------------------------------------------------------------
def _partition_counts(cluster, topic: str) -> list[int]:
    """How many partitions, each with a live leader, every broker's Metadata shows."""
    counts = []
    for b in cluster.brokers:
        ls = leaders(b, topic)
        counts.append(len(ls) if all(v >= 0 for v in ls.values()) else -1)
    return counts


def test_both_admin_clients_add_partitions_that_every_broker_serves(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    name = f"adm-grow-{uuid.uuid4().hex[:8]}"
    n = len(cluster.brokers)
    create_everywhere(cluster.brokers, name, 1)
    before = leaders(cluster.brokers[0], name)
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_partitions([ck_admin.NewPartitions(name, 3)])[name].result(30)
    eventually(lambda: _partition_counts(cluster, name) == [3] * n, timeout_s=15,
               what="3 partitions on every broker")
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        kp.create_partitions({name: kadmin.NewPartitions(total_count=5)})
    finally:
        kp.close()
    eventually(lambda: _partition_counts(cluster, name) == [5] * n, timeout_s=15,
               what="5 partitions on every broker")
    after = leaders(cluster.brokers[0], name)
    assert after[0] == before[0]  # the existing partition kept its leader (and its data)
    # The new partitions take records and give them back.
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap})
    for p in range(5):
        producer.produce(name, f"v{p}".encode(), partition=p)
    assert producer.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": name,
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(name, p, 0) for p in range(5)])
    got: dict[int, bytes] = {}
    try:
        def read_all() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got[msg.partition()] = msg.value()
            return len(got) == 5
        eventually(read_all, timeout_s=30, what="a record from every partition")
    finally:
        consumer.close()
    assert got == {p: f"v{p}".encode() for p in range(5)}


def test_create_partitions_refuses_bad_requests_with_kafkas_codes(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    name = f"adm-nogrow-{uuid.uuid4().hex[:8]}"
    create_everywhere(cluster.brokers, name, 2)
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})

    def code(new: ck_admin.NewPartitions, **kw) -> int:
        try:
            admin.create_partitions([new], **kw)[new.topic].result(30)
        except ck.KafkaException as exc:
            return int(exc.args[0].code())
        return 0

    assert code(ck_admin.NewPartitions(name, 1)) == InvalidPartitions.code  # shrinking
    assert code(ck_admin.NewPartitions(name, 2)) == InvalidPartitions.code  # no change
    assert code(ck_admin.NewPartitions(name, 5_000)) == InvalidPartitions.code
    assert code(ck_admin.NewPartitions("adm-no-such-topic", 4)) == (
        UnknownTopicOrPartition.code)
    node = cluster.brokers[0]
    probe_id = int(next(iter(admin.list_topics(timeout=30).brokers)))
    assert code(ck_admin.NewPartitions(name, 3, replica_assignment=[[probe_id]])) == (
        InvalidRequest.code)
    assert code(ck_admin.NewPartitions(name, 4), validate_only=True) == 0
    assert _partition_counts(cluster, name) == [2] * len(cluster.brokers)  # nothing changed
    # Every version on the wire, and the broker still serves afterwards.
    with KafkaProbe(node.host, node.port) as probe:
        for version in (0, 1, 2, 3):
            got = probe.request(ApiKey.CREATE_PARTITIONS, version, CreatePartitionsRequest(
                topics=[CreatePartitionsTopic(name=name, count=1)], timeout_ms=10_000))
            (result,) = got.results
            assert result.error_code == InvalidPartitions.code and "2 partitions" in (
                result.error_message or "")
    assert leaders(node, name).keys() == {0, 1}


# --- AlterConfigs, IncrementalAlterConfigs ----------------------------------------------------
def _described(broker, topic: str) -> dict[str, tuple[str | None, int]]:
    """(value, source) of every config of ``topic`` as this one broker describes it; empty
    while the broker has not yet learnt of the topic (its creation spreads after the answer)."""
    with KafkaProbe(broker.host, broker.port) as probe:
        got = probe.request(ApiKey.DESCRIBE_CONFIGS, 1, DescribeConfigsRequest(
            resources=[DescribeConfigsResource(resource_type=TOPIC, resource_name=topic)]))
    (result,) = got.results
    if result.error_code == UnknownTopicOrPartition.code:
        return {}
    assert result.error_code == 0, result.error_message
    return {c.name: (c.value, c.config_source) for c in result.configs}


def _everywhere(cluster, topic: str, want: dict[str, str | None]) -> None:
    """Wait until every broker describes ``topic`` with ``want`` (None: the default)."""
    def agree() -> bool:
        for b in cluster.brokers:
            got = _described(b, topic)
            if not got:
                return False
            for name, value in want.items():
                if value is None and got[name][1] != DEFAULT_CONFIG:
                    return False
                if value is not None and got[name] != (value, TOPIC_CONFIG):
                    return False
        return True
    eventually(agree, timeout_s=15, what=f"{want} on every broker")


def test_both_admin_clients_alter_topic_configs_that_every_broker_applies(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    name = f"adm-alter-{uuid.uuid4().hex[:8]}"
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([ck_admin.NewTopic(name, 1, 1, config={"retention.ms": "3600000"})]
                        )[name].result(30)
    eventually(lambda: all(leaders(b, name) for b in cluster.brokers), timeout_s=15)
    # IncrementalAlterConfigs (confluent-kafka): SET two, the third stays.
    res = ck_admin.ConfigResource(ck_admin.ResourceType.TOPIC, name, incremental_configs=[
        ck_admin.ConfigEntry("segment.bytes", "1024",
                             incremental_operation=ck_admin.AlterConfigOpType.SET),
        ck_admin.ConfigEntry("retention.bytes", "10000000",
                             incremental_operation=ck_admin.AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(30)
    _everywhere(cluster, name, {"retention.ms": "3600000", "segment.bytes": "1024",
                                "retention.bytes": "10000000"})
    # Storage applies it: 1 KiB segments roll while records arrive.
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    for _ in range(40):
        producer.produce(name, b"v" * 300, partition=0)
        producer.flush(30)
    segments = [p for b in cluster.brokers for p in (b.data_dir).rglob(f"{name}-0/*.log")]
    assert len(segments) > 3, segments
    # AlterConfigs (kafka-python, forced): it describes the topic first and sends the other
    # set configs along, since AlterConfigs replaces the whole set.
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        kp.alter_configs([kadmin.ConfigResource(kadmin.ConfigResourceType.TOPIC, name,
                                                configs={"retention.ms": "120000"})],
                         incremental=False)
        _everywhere(cluster, name, {"retention.ms": "120000", "segment.bytes": "1024",
                                    "retention.bytes": "10000000"})
        # IncrementalAlterConfigs (kafka-python): DELETE returns a config to its default.
        kp.alter_configs([kadmin.ConfigResource(kadmin.ConfigResourceType.TOPIC, name,
                                                configs={"segment.bytes": ("DELETE", None)})],
                         incremental=True)
        _everywhere(cluster, name, {"retention.ms": "120000", "segment.bytes": None,
                                    "retention.bytes": "10000000"})
    finally:
        kp.close()
    # AlterConfigs on the wire: configs not named return to their defaults.
    node = cluster.brokers[-1]
    with KafkaProbe(node.host, node.port) as probe:
        got = probe.request(ApiKey.ALTER_CONFIGS, 1, AlterConfigsRequest(resources=[
            AlterConfigsResource(resource_type=TOPIC, resource_name=name, configs=[
                AlterableConfig(name="retention.bytes", value="20000000")])]))
    assert got.responses[0].error_code == 0
    _everywhere(cluster, name, {"retention.ms": None, "segment.bytes": None,
                                "retention.bytes": "20000000"})


def test_altering_configs_refuses_bad_requests_with_kafkas_codes(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    name = f"adm-noalter-{uuid.uuid4().hex[:8]}"
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([ck_admin.NewTopic(name, 1, 1, config={"retention.ms": "3600000"})]
                        )[name].result(30)
    set_op = ck_admin.AlterConfigOpType.SET

    def code(topic: str, entries: list[tuple[str, str, object]], *,
             kind=ck_admin.ResourceType.TOPIC, **kw) -> int:
        res = ck_admin.ConfigResource(kind, topic, incremental_configs=[
            ck_admin.ConfigEntry(n, v, incremental_operation=op) for n, v, op in entries])
        try:
            admin.incremental_alter_configs([res], **kw)[res].result(30)
        except ck.KafkaException as exc:
            return int(exc.args[0].code())
        return 0

    assert code(name, [("retention.millis", "5", set_op)]) == InvalidConfig.code
    assert code(name, [("retention.ms", "soon", set_op)]) == InvalidConfig.code
    assert code(name, [("cleanup.policy", "shred", set_op)]) == InvalidConfig.code
    assert code(name, [("cleanup.policy", "shred",
                        ck_admin.AlterConfigOpType.APPEND)]) == InvalidConfig.code
    assert code(name, [("retention.ms", "5", ck_admin.AlterConfigOpType.APPEND)]) == (
        InvalidRequest.code)
    assert code("adm-no-such-topic", [("retention.ms", "5", set_op)]) == (
        UnknownTopicOrPartition.code)
    broker_id = str(next(iter(admin.list_topics(timeout=30).brokers)))
    assert code(broker_id, [("log.retention.ms", "5", set_op)],
                kind=ck_admin.ResourceType.BROKER) == InvalidRequest.code
    assert code(name, [("retention.ms", "5", set_op)], validate_only=True) == 0
    _everywhere(cluster, name, {"retention.ms": "3600000"})  # nothing changed anywhere
    # AlterConfigs at every version says the same; the broker keeps serving.
    node = cluster.brokers[0]
    with KafkaProbe(node.host, node.port) as probe:
        for version in (0, 1):
            got = probe.request(ApiKey.ALTER_CONFIGS, version, AlterConfigsRequest(resources=[
                AlterConfigsResource(resource_type=TOPIC, resource_name=name, configs=[
                    AlterableConfig(name="cleanup.policy", value="shred")])]))
            (result,) = got.responses
            assert result.error_code == InvalidConfig.code
            assert "String must be one of: compact, delete" in (result.error_message or "")
    _everywhere(cluster, name, {"retention.ms": "3600000", "cleanup.policy": None})


# --- DeleteGroups, OffsetDelete ---------------------------------------------------------------
def _committed(admin, ck, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets of partitions 0 and 1 (absent: not listed)."""
    req = ck.ConsumerGroupTopicPartitions(
        group, [ck.TopicPartition(topic, 0), ck.TopicPartition(topic, 1)])
    got = admin.list_consumer_group_offsets([req])[group].result(30)
    return {tp.partition: tp.offset for tp in got.topic_partitions if tp.offset >= 0}


def test_both_admin_clients_delete_offsets_and_groups(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    kafka = pytest.importorskip("kafka")
    kerrors = pytest.importorskip("kafka.errors")
    topic, group = _names()
    create_everywhere(cluster.brokers, topic, 2)
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.alter_consumer_group_offsets([ck.ConsumerGroupTopicPartitions(
        group, [ck.TopicPartition(topic, 0, 5), ck.TopicPartition(topic, 1, 7)])]
    )[group].result(30)
    assert _committed(admin, ck, group, topic) == {0: 5, 1: 7}
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        # OffsetDelete (kafka-python): one partition's offset goes, the other stays.
        got = kp.delete_group_offsets(group, [kafka.TopicPartition(topic, 0)])
        assert got == {kafka.TopicPartition(topic, 0): kerrors.NoError}
        assert _committed(admin, ck, group, topic) == {1: 7}
        # DeleteGroups (confluent-kafka): the group and its last offset go.
        admin.delete_consumer_groups([group])[group].result(30)
        assert _committed(admin, ck, group, topic) == {}
        # kafka-python sees the same, and a second deletion finds no group.
        assert kp.list_group_offsets({group: None})[group] == {}
        assert kp.delete_groups([group]) == {group: "GroupIdNotFoundError"}
    finally:
        kp.close()
    with pytest.raises(ck.KafkaException) as info:
        admin.delete_consumer_groups([group])[group].result(30)
    assert info.value.args[0].code() == GroupIdNotFound.code


def test_a_live_group_is_neither_deleted_nor_loses_subscribed_offsets(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    kafka = pytest.importorskip("kafka")
    kerrors = pytest.importorskip("kafka.errors")
    topic, group = _names()
    other = f"{topic}-other"
    create_everywhere(cluster.brokers, other, 1)
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    with stable_member(cluster, topic, group):
        with pytest.raises(ck.KafkaException) as info:
            admin.delete_consumer_groups([group])[group].result(30)
        assert info.value.args[0].code() == NonEmptyGroup.code
        kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            got = kp.delete_group_offsets(group, [kafka.TopicPartition(topic, 0),
                                                  kafka.TopicPartition(other, 0)])
            assert got[kafka.TopicPartition(topic, 0)] is kerrors.GroupSubscribedToTopicError
            assert got[kafka.TopicPartition(other, 0)] is kerrors.NoError  # not subscribed
            assert kp.delete_groups([group]) == {group: "NonEmptyGroupError"}
            eventually(lambda: kp.list_groups() is not None, timeout_s=10)  # still serving
        finally:
            kp.close()
    # Once the member has left, the group can go.
    eventually(lambda: _delete(admin, group) == 0, timeout_s=30, what="group deletable")


def _delete(admin, group: str) -> int:
    try:
        admin.delete_consumer_groups([group])[group].result(30)
    except Exception as exc:
        return int(exc.args[0].code())
    return 0


# --- DeleteTopics -----------------------------------------------------------------------------
def _known_anywhere(cluster, topic: str) -> list[int]:
    """The brokers whose Metadata still shows ``topic`` (no auto-creation)."""
    from brokers.core.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
    shown = []
    for b in cluster.brokers:
        with KafkaProbe(b.host, b.port) as probe:
            md = probe.request(ApiKey.METADATA, 9, MetadataRequest(
                topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False))
        if md.topics[0].error_code != UnknownTopicOrPartition.code:
            shown.append(b.port)
    return shown


def _partition_dirs(cluster, topic: str) -> list[str]:
    """Partition directories of ``topic`` left in any broker's data directory."""
    return sorted(str(p) for b in cluster.brokers for p in b.data_dir.rglob(f"{topic}-*")
                  if p.is_dir() and p.name.rpartition("-")[2].isdigit())


def _gone_everywhere(cluster, topic: str) -> None:
    eventually(lambda: not _known_anywhere(cluster, topic) and not _partition_dirs(
        cluster, topic), timeout_s=30, what=f"{topic} gone from every broker and disk")


def test_both_admin_clients_delete_topics_with_their_data_and_offsets(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    (one, group), (two, _) = _names(), _names()
    n = len(cluster.brokers)
    for name in (one, two):
        create_everywhere(cluster.brokers, name, n)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap})
    for name in (one, two):
        for p in range(n):
            for i in range(3):
                producer.produce(name, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    assert len(_partition_dirs(cluster, one)) == n
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.alter_consumer_group_offsets([ck.ConsumerGroupTopicPartitions(
        group, [ck.TopicPartition(one, 0, 2)])])[group].result(30)
    admin.delete_topics([one], operation_timeout=30)[one].result(30)
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        got = kp.delete_topics([two], timeout_ms=30_000)
        assert [(t["name"], t["error_code"]) for t in got["topics"]] == [(two, 0)]
    finally:
        kp.close()
    for name in (one, two):
        _gone_everywhere(cluster, name)
    # The offsets committed for the deleted topic went with it.
    eventually(lambda: _committed(admin, ck, group, one) == {}, timeout_s=15,
               what="the deleted topic's committed offset gone")
    # A new topic of the name starts empty, at offset 0, and serves the new records only.
    create_everywhere(cluster.brokers, one, 1)
    node = _leader_of(cluster, one, 0)
    assert (produce(node, one, 0, build_batch([(None, b"new")])).base_offset) == 0
    assert fetch_values(node, one, 0) == [b"new"]
    assert _committed(admin, ck, group, one) == {}


def _leader_of(cluster, topic: str, partition: int):
    leader = leaders(cluster.brokers[0], topic)[partition]
    if len(cluster.brokers) == 1:
        return cluster.brokers[0]
    return next(b for b in cluster.brokers if b.node_id == leader)


def test_deleting_an_unknown_topic_or_one_twice_gets_unknown_topic(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    name, _ = _names()
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})

    def code(topic: str) -> int:
        try:
            admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
        except ck.KafkaException as exc:
            return int(exc.args[0].code())
        return 0

    assert code("adm-no-such-topic") == UnknownTopicOrPartition.code
    create_everywhere(cluster.brokers, name, 1)
    assert code(name) == 0
    assert code(name) == UnknownTopicOrPartition.code
    # Every version on the wire; a name twice in one request is INVALID_REQUEST, an illegal
    # name INVALID_TOPIC_EXCEPTION, and the broker stays up.
    from brokers.core.errors import InvalidTopic
    from brokers.core.protocol.messages.delete_topics import DeleteTopicsRequest
    node = cluster.brokers[0]
    with KafkaProbe(node.host, node.port) as probe:
        for version in range(6):
            got = probe.request(ApiKey.DELETE_TOPICS, version, DeleteTopicsRequest(
                topic_names=[name, "adm-twice", "adm-twice", "bad/name"], timeout_ms=5_000))
            codes = {r.name: r.error_code for r in got.responses}
            assert codes == {name: UnknownTopicOrPartition.code, "adm-twice": InvalidRequest.code,
                             "bad/name": InvalidTopic.code}
            messages = [r.error_message for r in got.responses]
            assert all(messages) if version >= 5 else not any(messages)
    create_everywhere(cluster.brokers, name, 2)  # the broker serves; the name is free again


@pytest.mark.multi_broker
def test_a_deleted_topic_stays_deleted_after_every_broker_restarts(cluster):
    name, _ = _names()
    n = len(cluster.brokers)
    create_everywhere(cluster.brokers, name, n)
    for b in cluster.brokers:
        for p, leader in leaders(b, name).items():
            if leader == b.node_id:
                assert produce_values(b, name, p, [b"old"]) == 0
    from brokers.core.protocol.messages.delete_topics import DeleteTopicsRequest
    node = cluster.brokers[0]
    with KafkaProbe(node.host, node.port) as probe:
        got = probe.request(ApiKey.DELETE_TOPICS, 4, DeleteTopicsRequest(
            topic_names=[name], timeout_ms=30_000))
    assert [(r.name, r.error_code) for r in got.responses] == [(name, 0)]
    _gone_everywhere(cluster, name)
    # A topic that stays, with records deleted below offset 2: its log start offset survives
    # the restarts too.
    from brokers.core.errors import OffsetOutOfRange
    from brokers.core.protocol.messages.delete_records import (
        DeleteRecordsPartition,
        DeleteRecordsRequest,
        DeleteRecordsTopic,
    )
    from tests.support.ops import fetch
    keep, _ = _names()
    create_everywhere(cluster.brokers, keep, n)
    for p in range(n):
        leader = _leader_of(cluster, keep, p)
        for i in range(3):
            assert produce_values(leader, keep, p, [b"k%d" % i]) == 0
        with KafkaProbe(leader.host, leader.port) as probe:
            got = probe.request(ApiKey.DELETE_RECORDS, 2, DeleteRecordsRequest(topics=[
                DeleteRecordsTopic(name=keep, partitions=[
                    DeleteRecordsPartition(partition_index=p, offset=2)])]))
        assert got.topics[0].partitions[0].low_watermark == 2
    for b in list(cluster.brokers):
        cluster.restart_broker(b.node_id)
    for b in cluster.brokers:
        eventually(lambda b=b: len(ls := leaders(b, keep)) == n and min(ls.values()) >= 0,
                   timeout_s=60, what=f"broker {b.node_id} serving after its restart")
    for p in range(n):
        leader = _leader_of(cluster, keep, p)
        assert fetch(leader, keep, p, 1).error_code == OffsetOutOfRange.code
        assert fetch(leader, keep, p, 2).log_start_offset == 2
    assert _known_anywhere(cluster, name) == [] and _partition_dirs(cluster, name) == []
    # The name is free again: a new topic of it starts empty.
    create_everywhere(cluster.brokers, name, n)
    for p in range(n):
        assert fetch_values(_leader_of(cluster, name, p), name, p) == []


# --- DeleteRecords ----------------------------------------------------------------------------
def test_both_admin_clients_delete_records_and_reads_honour_the_new_start(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    kafka = pytest.importorskip("kafka")
    from brokers.core.errors import OffsetOutOfRange
    from brokers.core.protocol.messages.delete_records import (
        DeleteRecordsPartition,
        DeleteRecordsRequest,
        DeleteRecordsTopic,
    )
    from tests.support.ops import fetch
    name, _ = _names()
    create_everywhere(cluster.brokers, name, 1)
    node = _leader_of(cluster, name, 0)
    for i in range(10):  # one batch per record: a read from offset k starts with record k
        assert produce_values(node, name, 0, [f"v{i}".encode()]) == 0
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    tp = ck.TopicPartition(name, 0, 4)
    (done,) = admin.delete_records([tp]).values()
    assert done.result(30).low_watermark == 4
    assert fetch(node, name, 0, 0).error_code == OffsetOutOfRange.code
    assert fetch_values_from(node, name, 4) == [f"v{i}".encode() for i in range(4, 10)]
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": name})
    try:
        assert consumer.get_watermark_offsets(ck.TopicPartition(name, 0), timeout=30) == (4, 10)
    finally:
        consumer.close()
    # Beyond the high watermark: OFFSET_OUT_OF_RANGE, and nothing moves.
    (beyond,) = admin.delete_records([ck.TopicPartition(name, 0, 11)]).values()
    with pytest.raises(ck.KafkaException) as info:
        beyond.result(30)
    assert info.value.args[0].code() == OffsetOutOfRange.code
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        got = kp.delete_records({kafka.TopicPartition(name, 0): 7}, timeout_ms=30_000)
        assert [v["low_watermark"] for v in got.values()] == [7]
    finally:
        kp.close()
    # Every version on the wire: -1 is the high watermark; an unknown topic is refused.
    with KafkaProbe(node.host, node.port) as probe:
        for version in range(3):
            got = probe.request(ApiKey.DELETE_RECORDS, version, DeleteRecordsRequest(topics=[
                DeleteRecordsTopic(name=name, partitions=[
                    DeleteRecordsPartition(partition_index=0, offset=-1)]),
                DeleteRecordsTopic(name="adm-no-such-topic", partitions=[
                    DeleteRecordsPartition(partition_index=0, offset=1)])]))
            results = {t.name: t.partitions[0] for t in got.topics}
            assert (results[name].error_code, results[name].low_watermark) == (0, 10)
            assert results["adm-no-such-topic"].error_code == UnknownTopicOrPartition.code
    assert fetch_values_from(node, name, 10) == []


def fetch_values_from(broker, topic: str, offset: int) -> list[bytes | None]:
    """Every value of partition 0 from ``offset`` to the end."""
    from brokers.core.protocol.records import decode_records
    from tests.support.ops import fetch
    values: list[bytes | None] = []
    while True:
        part = fetch(broker, topic, 0, offset)
        assert part.error_code == 0, part.error_code
        records = [r for r in decode_records(part.records) if r.offset >= offset]
        if not records:
            return values
        values.extend(r.value for r in records)
        offset = records[-1].offset + 1


# --- CreateTopics with a manual replica assignment ---------------------------------------------
def _broker_ids(cluster) -> list[int]:
    node = cluster.brokers[0]
    with KafkaProbe(node.host, node.port) as probe:
        return sorted(b.node_id for b in probe.metadata([]).brokers)


def test_both_admin_clients_create_topics_on_the_brokers_they_name(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    ids = _broker_ids(cluster)
    one, _ = _names()
    two, _ = _names()
    # Partition p on ids[-1 - p % n]: not the round robin the brokers would choose, and (with
    # more partitions than brokers) a broker holding several partitions.
    want = {p: ids[-1 - p % len(ids)] for p in range(len(ids) + 1)}
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    # (librdkafka wants the partition count too, and sends -1 with the assignment.)
    admin.create_topics([ck_admin.NewTopic(one, num_partitions=len(want), replica_assignment=[
        [want[p]] for p in range(len(want))])])[one].result(30)
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        kp.create_topics([kadmin.NewTopic(two, num_partitions=-1, replication_factor=-1,
                                          replica_assignments={0: [ids[-1]]})])
    finally:
        kp.close()
    for b in cluster.brokers:
        eventually(lambda b=b: leaders(b, one) == want and leaders(b, two) == {0: ids[-1]},
                   timeout_s=30, what="the named leaders on every broker")
    node = _leader_of(cluster, one, len(want) - 1)
    assert produce_values(node, one, len(want) - 1, [b"placed"]) == 0

    def code(assignment: list[list[int]]) -> int:
        name, _ = _names()
        try:
            admin.create_topics([ck_admin.NewTopic(name, num_partitions=len(assignment),
                                                   replica_assignment=assignment)]
                                )[name].result(30)
        except ck.KafkaException as exc:
            return int(exc.args[0].code())
        return 0

    from brokers.core.errors import InvalidReplicaAssignment, InvalidReplicationFactor
    assert code([[999]]) == InvalidReplicaAssignment.code  # no such broker
    assert code([[ids[0]], [ids[0], ids[-1]]]) == InvalidReplicaAssignment.code  # lengths
    assert code([[ids[0], ids[0]]]) == InvalidReplicaAssignment.code  # a broker twice
    if len(ids) > 1:  # two replicas: placed where the architecture replicates, else refused
        from tests.support.clusters import REPLICATING

        replicates = getattr(cluster, "spec", cluster).arch in REPLICATING
        assert code([[ids[0], ids[1]]]) == (0 if replicates else InvalidReplicationFactor.code)
    # On the wire: partitions not 0..n-1, and an assignment with a partition count.
    from brokers.core.protocol.messages.create_topics import (
        CreatableReplicaAssignment,
        CreatableTopic,
        CreateTopicsRequest,
    )
    bad, _ = _names()
    node = cluster.brokers[0]
    with KafkaProbe(node.host, node.port) as probe:
        for version in (2, 5, 7):
            got = probe.request(ApiKey.CREATE_TOPICS, version, CreateTopicsRequest(topics=[
                CreatableTopic(name=bad, num_partitions=-1, replication_factor=-1, assignments=[
                    CreatableReplicaAssignment(partition_index=1, broker_ids=[ids[0]])]),
                CreatableTopic(name=bad + "-n", num_partitions=1, replication_factor=-1,
                               assignments=[CreatableReplicaAssignment(
                                   partition_index=0, broker_ids=[ids[0]])])],
                timeout_ms=10_000))
            assert [t.error_code for t in got.topics] == [InvalidReplicaAssignment.code,
                                                          InvalidRequest.code]
    assert _known_anywhere(cluster, bad) == []
