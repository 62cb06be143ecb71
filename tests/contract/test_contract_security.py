"""Secured listeners on every architecture, driven by real clients (confluent-kafka,
kafka-python, kcat): TLS (SSL), SASL_PLAINTEXT with PLAIN and both SCRAMs, SASL_SSL; a wrong
password or an untrusted certificate refused, counted, and the broker still serving; a
secured zk cluster's ZooKeeper state readable, not writable, by other ZooKeeper clients.

One cluster per (architecture, protocol), module-scoped: every broker's only listener speaks
that protocol, so Metadata sends clients to addresses of the same protocol (the first listener
is the one registered in the coordination state, brokers/core/security/listeners.py). Each test
is generated only for the clusters it applies to (SASL tests on SASL listeners, and so on).

`make test` runs kcat once per cluster, its mechanism rotating so that every SASL mechanism
meets every protocol; TWINBENCH_SECURITY_FULL=1 (`make test-security`) runs kcat with every
mechanism on every cluster.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import uuid

import pytest

from harness.cluster.kafka_probe import KafkaProbe
from tests.support.clusters import ARCHITECTURES, REPLICATING, start_cluster
from tests.support.ops import eventually
from tests.support.security import MECHANISMS, SecurityFiles, make_security_files

pytestmark = [pytest.mark.integration, pytest.mark.interop]

PROTOCOLS = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")


@pytest.fixture(scope="module")
def security_files(tmp_path_factory: pytest.TempPathFactory) -> SecurityFiles:
    return make_security_files(tmp_path_factory.mktemp("security"))


def on(archs: tuple[str, ...] | list[str] = ARCHITECTURES,
       protocols: tuple[str, ...] = PROTOCOLS) -> pytest.MarkDecorator:
    """The test runs on the secured cluster of each of ``archs`` x ``protocols``, and on no
    other (a cluster is module-scoped: every test of the same pair shares it)."""
    return pytest.mark.parametrize(
        "secured", [(a, p) for a in archs for p in protocols], indirect=True,
        ids=[f"{a}-{p}" for a in archs for p in protocols])


SASL = ("SASL_PLAINTEXT", "SASL_SSL")
TLS = ("SSL", "SASL_SSL")


@pytest.fixture(scope="module")
def secured(request, tmp_path_factory, security_files):
    arch, protocol = request.param
    cluster = start_cluster(arch, tmp_path_factory.mktemp(f"secured-{arch}-{protocol}"),
                            brokers=2, security=security_files, protocol=protocol)
    cluster.protocol = protocol  # type: ignore[union-attr]
    cluster.arch = arch  # type: ignore[union-attr]
    yield cluster
    cluster.stop()


def _mechanisms(protocol: str) -> list[str | None]:
    return list(MECHANISMS) if protocol.startswith("SASL") else [None]


def _confluent_roundtrip(ck, cluster, conf: dict[str, str], n: int = 20) -> list[bytes]:
    topic, group = f"sec-{uuid.uuid4().hex[:10]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, **conf})
    for i in range(n):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                            "auto.offset.reset": "earliest", **conf})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(120):
            if len(got) >= n:
                break
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.value())
    finally:
        consumer.close()
    return got


@on()
def test_confluent_kafka_produces_and_consumes_with_every_mechanism(secured, security_files):
    ck = pytest.importorskip("confluent_kafka")
    for mechanism in _mechanisms(secured.protocol):
        conf = security_files.librdkafka(secured.protocol, mechanism)
        assert _confluent_roundtrip(ck, secured, conf) == [f"m{i}".encode() for i in range(20)]


@on()
def test_kafka_python_produces_and_consumes_with_every_mechanism(secured, security_files):
    kafka = pytest.importorskip("kafka")
    for mechanism in _mechanisms(secured.protocol):
        conf = security_files.kafka_python(secured.protocol, mechanism, user="bob")
        topic = f"sec-{uuid.uuid4().hex[:10]}"
        producer = kafka.KafkaProducer(bootstrap_servers=secured.bootstrap, **conf)
        for i in range(15):
            producer.send(topic, f"v{i}".encode())
        producer.flush(30)
        producer.close()
        consumer = kafka.KafkaConsumer(
            topic, bootstrap_servers=secured.bootstrap, group_id=f"g-{uuid.uuid4().hex[:8]}",
            auto_offset_reset="earliest", consumer_timeout_ms=10_000, **conf)
        got = []
        for msg in consumer:
            got.append(msg.value)
            if len(got) == 15:
                break
        consumer.close()
        assert got == [f"v{i}".encode() for i in range(15)], mechanism


def _kcat(kcat: str, cluster, conf: dict[str, str], *args: str,
          stdin: str | None = None) -> list[str]:
    """kcat with ``conf`` as -X properties, run to completion (bounded); its stdout lines."""
    props = [a for k, v in conf.items() for a in ("-X", f"{k}={v}")]
    done = subprocess.run([kcat, "-b", cluster.bootstrap, *props, *args], input=stdin,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (conf.get("sasl.mechanism"), args, done.stderr[-2000:])
    return done.stdout.split()


def _kcat_matrix() -> list[object]:
    """(cluster, (cluster, mechanism)) for every architecture, protocol and mechanism. The
    sample in `make test`: one mechanism per cluster, shifted by one per architecture and
    protocol, so that across the architectures each SASL mechanism meets each SASL protocol;
    the rest is marked security_full. (The mechanism travels with its cluster: a parameter
    shared by several clusters would make pytest order tests by it and start clusters twice.)"""
    cases: list[object] = []
    for i, arch in enumerate(ARCHITECTURES):
        for j, protocol in enumerate(PROTOCOLS):
            mechanisms = _mechanisms(protocol)
            sampled = mechanisms[(i + j) % len(mechanisms)]
            for mechanism in mechanisms:
                marks = () if mechanism == sampled else (pytest.mark.security_full,)
                cases.append(pytest.param((arch, protocol), (arch, protocol, mechanism),
                                          marks=marks,
                                          id=f"{arch}-{protocol}-{mechanism or 'TLS'}"))
    return cases


@pytest.mark.parametrize(("secured", "case"), _kcat_matrix(), indirect=["secured"],
                         scope="module")
def test_kcat_produces_and_consumes(secured, security_files, case):
    """kcat (Debian's librdkafka 2.0.2, older than confluent-kafka's) with its settings as -X
    properties: TLS, and each SASL mechanism, against every architecture."""
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed (harness/setup_system.sh installs it)")
    mechanism = case[2]
    conf = security_files.librdkafka(secured.protocol, mechanism)
    topic = f"seckc-{uuid.uuid4().hex[:10]}"
    sent = [f"k{i}" for i in range(10)]
    _kcat(kcat, secured, conf, "-P", "-t", topic, "-p", "0", stdin="\n".join(sent) + "\n")
    assert _kcat(kcat, secured, conf, "-C", "-t", topic, "-p", "0", "-o", "beginning",
                 "-c", str(len(sent)), "-e", "-q") == sent


@on(REPLICATING)
def test_followers_replicate_over_the_secured_listener(secured, security_files):
    """acks=all with min.insync.replicas=2 on two brokers is acknowledged only once the
    follower has fetched every batch from the leader: over the cluster's own protocol, with
    the broker's truststore and its first user's login."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    mechanism = _mechanisms(secured.protocol)[-1]
    conf = security_files.librdkafka(secured.protocol, mechanism)
    topic = f"secrepl-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": secured.bootstrap, **conf})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=2,
                                  config={"min.insync.replicas": "2"})],
                        request_timeout=30)[topic].result(30)
    failed: list[object] = []
    producer = ck.Producer({"bootstrap.servers": secured.bootstrap, "acks": "all",
                            "message.timeout.ms": 30_000, **conf})
    for i in range(30):
        producer.produce(topic, f"r{i}".encode(),
                         on_delivery=lambda err, _msg: err is not None and failed.append(err))
    assert producer.flush(60) == 0
    assert failed == []


@on(["zk"])
def test_a_secured_zk_clusters_znodes_are_read_only_to_other_zookeeper_clients(
        secured, security_files):
    """The harness gives a secured zk cluster's brokers a fresh ZooKeeper digest identity
    (--zk-auth-file): every znode they made, the topic's and the group's offsets included,
    carries that identity's ACL and world READ, so a ZooKeeper client without the identity
    reads the state and can change none of it."""
    ck = pytest.importorskip("confluent_kafka")
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError
    from kazoo.security import Permissions

    conf = security_files.librdkafka(secured.protocol, _mechanisms(secured.protocol)[-1])
    assert len(_confluent_roundtrip(ck, secured, conf, 3)) == 3  # a topic and a group's offsets
    outsider = KazooClient(hosts=secured.endpoint("zookeeper"), timeout=4.0)
    outsider.start(timeout=10)
    try:
        paths, pending = [], ["/twinbench"]
        while pending:
            path = pending.pop()
            paths.append(path)
            pending.extend(f"{path}/{child}" for child in outsider.get_children(path))
        for kind in ("/brokers/ids/", "/brokers/topics/", "/consumers/", "/offsets/"):
            assert any(kind in p for p in paths), (kind, paths)
        # Each registration names the listener's protocol, as Kafka's does.
        for b in secured.brokers:
            registration = json.loads(outsider.get(f"/twinbench/brokers/ids/{b.node_id}")[0])
            assert registration["endpoints"] == [f"{secured.protocol}://{b.host}:{b.port}"]
            assert registration["listener_security_protocol_map"] == {
                secured.protocol: secured.protocol}
        for path in paths:
            acls, _ = outsider.get_acls(path)
            assert {(a.id.scheme, a.perms) for a in acls} == {
                ("digest", Permissions.ALL), ("world", Permissions.READ)}, path
        for path in [p for p in paths if "/brokers/" in p or "/offsets/" in p][:20]:
            outsider.get(path)
            with pytest.raises(NoAuthError):
                outsider.set(path, b"forged")
    finally:
        outsider.stop()
        outsider.close()
    assert len(_confluent_roundtrip(ck, secured, conf, 3)) == 3


def _until_refused(producer, errors: list, code: int | None = None) -> None:
    """Serve ``producer``'s callbacks until its error_cb has reported ``code`` (any error when
    None): the refusal itself is awaited, not the message's timeout; the message is dropped."""
    def seen() -> bool:
        producer.poll(0.1)
        return any(code is None or e.code() == code for e in errors)

    eventually(seen, 15, f"a client error {code}")
    producer.purge()


def _sasl_failures(cluster) -> int:
    """Failed SASL authentications summed over the brokers (counters.json after SIGUSR1)."""
    total = 0
    for b in cluster.brokers:
        path = b.data_dir / "counters.json"
        path.unlink(missing_ok=True)
        b.process.signal(signal.SIGUSR1)
        doc = eventually(lambda p=path: p.exists() and json.loads(p.read_text()), 10,
                         "counters.json")
        total += doc["broker"]["sasl_authentication_failures"]
    return total


@on(protocols=SASL)
def test_a_wrong_password_is_refused_counted_and_the_broker_keeps_serving(
        secured, security_files):
    ck = pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    before = _sasl_failures(secured)
    errors: list = []
    conf = security_files.librdkafka(secured.protocol, "SCRAM-SHA-256", password="guess")
    producer = ck.Producer({"bootstrap.servers": secured.bootstrap.split(",")[0], **conf,
                            "error_cb": errors.append, "message.timeout.ms": 3000})
    producer.produce("never", b"x")
    _until_refused(producer, errors, ck.KafkaError._AUTHENTICATION)
    # api_version given: the constructor does not probe (which retries for 30 s); the send
    # then waits for metadata it cannot get past the refused authentication. The producer
    # keeps asking for that metadata (and failing) until it is closed, after the count.
    refused = kafka.KafkaProducer(
        bootstrap_servers=secured.bootstrap.split(",")[0], api_version=(2, 8, 0),
        max_block_ms=1000, **security_files.kafka_python(secured.protocol, "PLAIN",
                                                         password="guess"))
    try:
        with pytest.raises(kafka.errors.KafkaTimeoutError):
            refused.send("never", b"x").get(5)
        assert eventually(lambda: _sasl_failures(secured) >= before + 2, 15,
                          "failures counted")
    finally:
        refused.close(timeout=1)
    # Still serving the right users.
    good = security_files.librdkafka(secured.protocol, "SCRAM-SHA-512")
    assert len(_confluent_roundtrip(ck, secured, good, 3)) == 3


@on(protocols=TLS)
def test_an_untrusted_certificate_or_a_plaintext_client_is_refused_and_the_broker_serves_on(
        secured, security_files):
    ck = pytest.importorskip("confluent_kafka")
    errors: list = []
    conf = security_files.librdkafka(secured.protocol, _mechanisms(secured.protocol)[-1])
    conf["ssl.ca.location"] = str(security_files.other_ca_pem)
    producer = ck.Producer({"bootstrap.servers": secured.bootstrap, **conf,
                            "error_cb": errors.append, "message.timeout.ms": 3000})
    producer.produce("never", b"x")
    _until_refused(producer, errors)
    assert all(e.code() != ck.KafkaError.NO_ERROR for e in errors), errors
    # A plaintext Kafka request on the TLS port: the handshake fails, that connection closes.
    b = secured.brokers[0]
    host, port = secured.bootstrap.split(",")[0].rsplit(":", 1)
    with KafkaProbe(host, int(port), timeout_s=10) as probe, pytest.raises(
            (ConnectionError, OSError)):
        probe.metadata([])
    assert b.process.poll() is None
    good = security_files.librdkafka(secured.protocol, _mechanisms(secured.protocol)[0])
    assert len(_confluent_roundtrip(ck, secured, good, 3)) == 3

