"""The counters contract (brokers/core/counters.py): every class declares what it counts, JSON
goes out and back unchanged, an undeclared count is refused, every count the twins keep is
declared, and the harness diffs whatever a class declares (harness/driver/counters.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from brokers.core.counters import (
    BrokerCounters,
    CoordinatorCounters,
    Counters,
    by_label,
    gauge,
    total,
)
from brokers.core.local_coordinator import LocalCounters
from brokers.dsbs_broker.counters import GOSSIP_PREFIX, DsbsCounters
from brokers.zk_broker.counters import ZkCounters
from harness import architectures
from harness.driver import counters as driver

ROOT = Path(__file__).resolve().parents[4]
CLASSES = (ZkCounters, DsbsCounters, LocalCounters, BrokerCounters)


@pytest.mark.parametrize("cls", CLASSES)
def test_every_counter_is_declared_with_a_meaning(cls: type[Counters]) -> None:
    specs = cls.specs()
    assert specs and all(s.meaning.strip() and s.kind in ("total", "gauge", "by_label")
                         for s in specs)
    assert len({s.name for s in specs}) == len(specs)
    if issubclass(cls, CoordinatorCounters):
        assert specs[0].name == "coordination_ops" and specs[0].kind == "total"


@pytest.mark.parametrize("cls", CLASSES)
def test_json_round_trip(cls: type[Counters]) -> None:
    values = {}
    for i, s in enumerate(cls.specs(), 1):
        values[s.name] = {"a": i, "b_c": 2 * i} if s.kind == "by_label" else i
    c = cls(**values)
    doc = c.to_json()
    assert cls.from_json(doc) == c
    assert cls.from_json({**doc, "from_a_newer_broker": 1}) == c


def test_families_flatten_to_one_key_per_label() -> None:
    c = DsbsCounters.from_gossip({"packets_out": 7, "dropped_bad_tag": 2,
                                  "dropped_invalid_node_id": 1, "declared_dead": 3},
                                 members_live=2, members_known=3, incarnation=5)
    assert c.coordination_ops == c.gossip_packets_out == 7
    assert c.gossip_dropped == {"bad_tag": 2, "invalid_node_id": 1}
    doc = c.to_json()
    # The names counters.json has always had (tests/integration/test_dsbs_hostile.py reads them).
    assert doc["gossip_packets_out"] == 7 and doc["gossip_dropped_invalid_node_id"] == 1
    assert doc["gossip_declared_dead"] == 3 and doc["gossip_incarnation"] == 5.0


def test_an_undeclared_count_is_refused() -> None:
    with pytest.raises(KeyError, match="declares no counter 'gossip_made_up'"):
        DsbsCounters.from_gossip({"made_up": 1}, members_live=0, members_known=0,
                                 incarnation=0)
    with pytest.raises(KeyError, match="zk_made_up"):
        ZkCounters.of({"zk_made_up": 1})


def test_a_document_without_a_declared_counter_is_no_reading() -> None:
    doc = ZkCounters(zk_requests=3).to_json()
    del doc["zk_requests"]
    with pytest.raises(ValueError, match="zk_requests"):
        ZkCounters.from_json(doc)
    with pytest.raises(ValueError, match="not a number"):
        ZkCounters.from_json({**ZkCounters().to_json(), "zk_requests": "3"})


def test_an_older_brokers_document_says_which_counters_it_lacks() -> None:
    doc = ZkCounters(zk_requests=3, coordination_ops=4).to_json()
    del doc["zk_requests"]
    counters, missing = ZkCounters.read_json(doc)
    assert missing == {"zk_requests"} and counters.coordination_ops == 4
    assert ZkCounters.read_json(ZkCounters(zk_requests=3).to_json())[1] == frozenset()


def test_a_counter_an_older_broker_lacks_is_unknown_and_the_rest_are_read() -> None:
    def reading(requests: int, ops: int, lacking: bool) -> driver.Reading:
        doc = {"coordinator": ZkCounters(zk_requests=requests, coordination_ops=ops).to_json(),
               "broker": BrokerCounters(fsyncs=ops).to_json()}
        if lacking:
            del doc["coordinator"]["zk_requests"]
        parsed = driver._parse(doc, ZkCounters)
        assert parsed is not None
        return driver.Reading({}, {}, {0: parsed})

    got = driver.delta(architectures.get("zk"), reading(1, 2, True), reading(5, 9, True))
    assert got.coordinator["zk_requests"] is None
    assert got.coordinator["coordination_ops"] == 7 and got.broker["fsyncs"] == 7
    assert got.columns["coordination_ops"] == 7
    # Lacked in one reading only is enough to be unknown.
    assert driver.delta(architectures.get("zk"), reading(1, 2, False),
                        reading(5, 9, True)).coordinator["zk_requests"] is None
    assert driver.delta(architectures.get("zk"), reading(1, 2, False),
                        reading(5, 9, False)).coordinator["zk_requests"] == 4
    # Not the contract at all: no reading.
    assert driver._parse({"coordinator": [], "broker": {}}, ZkCounters) is None


def test_a_name_that_reads_as_a_family_label_is_refused() -> None:
    @dataclass(kw_only=True)
    class Clashing(CoordinatorCounters):
        drops: Mapping[str, int] = by_label("by reason")
        drops_total: int = total("looks like the label 'total' of drops")

    with pytest.raises(TypeError, match="drops_total reads as a label of drops"):
        Clashing.specs()


# --- every count the twins keep is part of their contract --------------------------------------


def _literals(path: Path, pattern: str) -> set[str]:
    return set(re.findall(pattern, path.read_text()))


def test_every_gossip_tally_name_is_declared() -> None:
    """The gossip node's tally is a dict incremented by name all over brokers/dsbs_broker; a
    name missing from DsbsCounters would make counters() refuse the whole snapshot."""
    names: set[str] = set()
    for path in (ROOT / "brokers" / "dsbs_broker").rglob("*.py"):
        names |= _literals(path, r"counters\[\"(\w+)\"\]")
        names |= _literals(path, r"_failed\(\"(\w+)\"")
    assert {"packets_out", "dropped_queue_full", "send_errors"} <= names  # the scan works
    families = {s.name for s in DsbsCounters.specs() if s.kind == "by_label"}
    scalars = {s.name for s in DsbsCounters.specs() if s.kind != "by_label"}
    for name in names:
        full = GOSSIP_PREFIX + name
        assert full in scalars or any(full.startswith(f + "_") for f in families), name
    # The f-string names are families: dropped_<reason>, declared_<status>.
    swim = (ROOT / "brokers" / "dsbs_broker" / "gossip" / "swim.py").read_text()
    assert 'counters[f"declared_{' in swim and 'counters[f"dropped_{' in swim
    assert {"gossip_dropped", "gossip_declared"} <= families


def test_every_zookeeper_tally_name_is_declared() -> None:
    """Every "zk_..." string in the package is a counter name (tallied by the bridge, the
    direct session and the coordinator), as is every other name a stats dict is indexed by."""
    names: set[str] = set()
    for path in (ROOT / "brokers" / "zk_broker").glob("*.py"):
        names |= _literals(path, r"stats\[\s*\"(\w+)\"")
        names |= _literals(path, r"\"(zk_\w+)\"")
        names |= _literals(path, r"out\[\"(\w+)\"\]")
    assert {"zk_requests", "zk_reads", "zk_direct_connects", "zk_session_lost",
            "controller_elections_won"} <= names
    declared = {s.name for s in ZkCounters.specs()}
    assert names <= declared
    assert ZkCounters.of(dict.fromkeys(names, 1)).zk_multi == 1


# --- the harness reads whatever the class declares ----------------------------------------------


def test_increase_sums_totals_over_brokers_and_skips_gauges() -> None:
    before = [(0, DsbsCounters(gossip_packets_out=10, gossip_dropped={"x": 1},
                               gossip_members_live=3.0)),
              (1, DsbsCounters(gossip_packets_out=5))]
    after = [(0, DsbsCounters(gossip_packets_out=14, gossip_dropped={"x": 2, "y": 5},
                              gossip_members_live=2.0)),
             (1, DsbsCounters(gossip_packets_out=6, gossip_dropped={"y": 1}))]
    got = driver.increase(before, after)
    assert got["gossip_packets_out"] == 5
    assert got["gossip_dropped_x"] == 1 and got["gossip_dropped_y"] == 6
    assert "gossip_members_live" not in got


def test_a_counter_that_went_down_is_unknown() -> None:
    before = [(0, ZkCounters(zk_requests=100)), (1, ZkCounters(zk_requests=1))]
    after = [(0, ZkCounters(zk_requests=3)), (1, ZkCounters(zk_requests=9))]  # 0 restarted
    assert driver.increase(before, after)["zk_requests"] is None
    assert driver.increase(reversed(before), reversed(after))["zk_requests"] is None


def _reading(cpu: dict[str, float], zk: int | None,
             brokers: dict[int, CoordinatorCounters]) -> driver.Reading:
    return driver.Reading(
        cpu, {} if zk is None else {"zookeeper": {"packets_received": zk}},
        {n: driver.BrokerReading(c, BrokerCounters()) for n, c in brokers.items()})


def test_coordination_columns_of_each_architecture() -> None:
    zk = driver.delta(architectures.get("zk"),
                      _reading({"broker-0:1": 1.0, "service-zookeeper-0:2": 2.0}, 50,
                               {0: ZkCounters(zk_requests=4, coordination_ops=4)}),
                      _reading({"broker-0:1": 1.5, "service-zookeeper-0:2": 2.25}, 80,
                               {0: ZkCounters(zk_requests=10, coordination_ops=10)}))
    assert zk.columns == {"coord_messages": 30, "coord_bytes": None, "coordination_ops": 6,
                          "broker_cpu_s": 0.5, "service_cpu_s": 0.25}
    assert zk.coordinator["zk_requests"] == 6
    assert zk.services == {"zookeeper": {"packets_received": 30}}
    # A ZooKeeper server restarted between the readings: its count is unknown, not negative.
    restarted = driver.delta(architectures.get("zk"), _reading({}, 50, {}), _reading({}, 7, {}))
    assert restarted.columns["coord_messages"] is None
    dsbs = driver.delta(architectures.get("dsbs"),
                        _reading({"broker-0:1": 1.0}, None,
                                 {0: DsbsCounters(gossip_packets_out=2, coordination_ops=2)}),
                        _reading({"broker-0:1": 2.0}, None,
                                 {0: DsbsCounters(gossip_packets_out=9, coordination_ops=9,
                                                  gossip_bytes_out=700)}))
    assert dsbs.columns == {"coord_messages": 7, "coord_bytes": 700, "coordination_ops": 7,
                            "broker_cpu_s": 1.0, "service_cpu_s": None}
    # No broker reading: every broker-counted column is empty, never a guess.
    missing = driver.delta(architectures.get("dsbs"), driver.Reading({}, {}, None),
                           driver.Reading({}, {}, None))
    assert missing.columns["coord_messages"] is None
    assert missing.columns["coordination_ops"] is None


def test_a_counter_added_to_a_class_is_read_without_new_code() -> None:
    @dataclass(kw_only=True)
    class Later(ZkCounters):
        zk_requests_by_type: Mapping[str, int] = by_label("ZooKeeper requests by opcode")
        fsyncs: int = total("fsyncs of the coordinator's own files")
        leader: float = gauge("1 while leading")

    before = [(0, Later.from_json(Later(zk_requests_by_type={"get": 1}, fsyncs=2).to_json()))]
    after = [(0, Later.from_json(Later(zk_requests_by_type={"get": 4, "set": 1},
                                       fsyncs=5, leader=1.0).to_json()))]
    got = driver.increase(before, after)
    assert (got["zk_requests_by_type_get"], got["zk_requests_by_type_set"], got["fsyncs"]) == (
        3, 1, 3)
    assert "leader" not in got


def _exposition(coordinator: Counters, broker: Counters, cpu_s: float) -> str:
    """What a twin's --metrics endpoint serves for these counters (brokers/core/metrics.py)."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import CounterMetricFamily
    from prometheus_client.registry import Collector

    from brokers.core.metrics import counter_families

    class Fixed(Collector):
        def collect(self):
            yield from counter_families("twinbench_coordinator", coordinator)
            yield from counter_families("twinbench_broker", broker)
            yield CounterMetricFamily("process_cpu_seconds", "CPU", value=cpu_s)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed())
    return generate_latest(registry).decode()


def test_scraped_endpoints_give_what_the_counters_files_give() -> None:
    """--metrics-url: the first and last scrape of each broker's endpoint make the same Delta
    as two counters.json readings of the same counters (plus CPU from the process family)."""
    from harness.studies.qos.sampler import parse

    before = {0: DsbsCounters(gossip_packets_out=2, coordination_ops=2, gossip_dropped={"x": 1}),
              1: DsbsCounters(gossip_packets_out=10, coordination_ops=10)}
    after = {0: DsbsCounters(gossip_packets_out=9, coordination_ops=9, gossip_dropped={"x": 4}),
             1: DsbsCounters(gossip_packets_out=11, coordination_ops=11)}
    brokers = ({0: BrokerCounters(fsyncs=1), 1: BrokerCounters(fsyncs=5)},
               {0: BrokerCounters(fsyncs=4), 1: BrokerCounters(fsyncs=6)})
    samples = [s for t, counts, broker, cpu in ((0.0, before, brokers[0], 1.0),
                                                (0.5, before, brokers[0], 1.2),
                                                (1.0, after, brokers[1], 2.0))
               for n in (0, 1)
               for s in parse(_exposition(counts[n], broker[n], cpu + n), t, n, "topic")]
    got = driver.scraped(samples, {"coord_messages": ("coordinator:zk_requests",
                                                      "coordinator:gossip_packets_out")})
    assert got.columns == {"coord_messages": 8, "coord_bytes": None, "coordination_ops": 8,
                           "broker_cpu_s": pytest.approx(2.0), "service_cpu_s": None}
    assert got.coordinator == driver.increase(before.items(), after.items())
    assert got.broker == driver.increase(brokers[0].items(), brokers[1].items())
    # A broker that missed the last scrape, or restarted: unknown, never part of a session.
    partial = [s for s in samples if not (s.node_id == 1 and s.t_s == 1.0)]
    assert driver.scraped(partial).columns["coordination_ops"] is None
    restarted = [s for s in samples if s.node_id == 0] + parse(
        _exposition(DsbsCounters(coordination_ops=1), BrokerCounters(), 0.1), 1.0, 1, "t") + [
        s for s in samples if s.node_id == 1 and s.t_s == 0.0]
    assert driver.scraped(restarted).columns["coordination_ops"] is None
    # An endpoint of a broker that is not a twin: nothing of the contract, nothing measured.
    other = parse("kafka_server_messages_in_total 5\n", 0.0, 0, "t") + parse(
        "kafka_server_messages_in_total 9\n", 1.0, 0, "t")
    assert driver.scraped(other).columns == dict.fromkeys(driver.COLUMNS)
    assert driver.scraped([]).columns == dict.fromkeys(driver.COLUMNS)
