"""Kafka's own counters through the JMX exporter's page (harness/kafka/jmx.py): what is read,
and how two readings of a cluster become a session's increase. No JVM: the pages are the
exporter's text as a 3.9.2 KRaft node served it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.kafka import jmx
from harness.kafka import node as kn
from harness.kafka.releases import RELEASES

PAGE = """\
# HELP kafka_server_socket_server_metrics_request The total number of requests
# TYPE kafka_server_socket_server_metrics_request untyped
kafka_server_socket_server_metrics_request{listener="CONTROLLER",networkProcessor="0",} 2.0
kafka_server_socket_server_metrics_request{listener="CONTROLLER",networkProcessor="1",} 17.0
kafka_server_socket_server_metrics_request{listener="PLAINTEXT",networkProcessor="0",} 900.0
# TYPE kafka_server_socket_server_metrics_incoming_byte untyped
kafka_server_socket_server_metrics_incoming_byte{listener="CONTROLLER",networkProcessor="0",} 148.0
kafka_server_socket_server_metrics_incoming_byte{listener="CONTROLLER",networkProcessor="1",} 742.0
# TYPE kafka_server_socket_server_metrics_outgoing_byte untyped
kafka_server_socket_server_metrics_outgoing_byte{listener="CONTROLLER",networkProcessor="0",} 406.0
# TYPE kafka_server_socket_server_metrics_request_rate untyped
kafka_server_socket_server_metrics_request_rate{listener="CONTROLLER",networkProcessor="0",} 0.3
# TYPE kafka_server_raft_metrics_log_end_offset untyped
kafka_server_raft_metrics_log_end_offset 44.0
# TYPE kafka_server_raft_metrics_election_latency_avg untyped
kafka_server_raft_metrics_election_latency_avg NaN
# TYPE kafka_network_requestmetrics_count untyped
kafka_network_requestmetrics_count{name="RequestsPerSec",request="BrokerHeartbeat",version="1"} 16.0
kafka_network_requestmetrics_count{name="RequestsPerSec",request="Produce",version="9",} 5.0
kafka_network_requestmetrics_count{name="RequestsPerSec",request="Produce",version="7",} 1.0
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 3.91
"""


def test_a_page_gives_the_quorums_traffic_the_log_and_requests_per_api():
    assert jmx.counters(PAGE) == {
        "controller_requests": 19.0,  # the CONTROLLER listener only, over its processors
        "controller_bytes": 148.0 + 742.0 + 406.0,  # in and out
        "metadata_offset": 44.0,
        "requests.BrokerHeartbeat": 16.0,
        "requests.Produce": 6.0,  # every version
    }


def test_a_zookeeper_mode_page_has_no_quorum_but_its_controllers_requests():
    page = ('kafka_network_requestmetrics_count{name="RequestsPerSec",request="LeaderAndIsr",'
            'version="7",} 3.0\n')
    assert jmx.counters(page) == {"requests.LeaderAndIsr": 3.0}


def test_the_increase_is_summed_over_nodes_and_the_log_counts_once():
    before = {0: {"controller_requests": 10.0, "metadata_offset": 40.0},
              1: {"controller_requests": 5.0, "metadata_offset": 39.0}}
    after = {0: {"controller_requests": 30.0, "metadata_offset": 52.0},
             1: {"controller_requests": 8.0, "metadata_offset": 50.0, "requests.Vote": 2.0}}
    assert jmx.change(before, after) == {
        "controller_requests": 23.0,
        "metadata_records": 12.0,  # the longest log grew from 40 to 52, not 12 + 11
        "requests.Vote": 2.0,  # absent before: counted from 0
    }
    # Counts, written into integer columns of the run logs.
    assert all(type(v) is int for v in jmx.change(before, after).values())


def test_a_node_restarted_or_silent_makes_the_increase_unknown_not_partial():
    before = {0: {"controller_requests": 10.0}, 1: {"controller_requests": 5.0}}
    restarted = {0: {"controller_requests": 2.0}, 1: {"controller_requests": 9.0}}
    assert jmx.change(before, restarted) == {"controller_requests": None}
    silent = {0: {"controller_requests": 12.0}, 1: None}
    assert jmx.change(before, silent) == {"controller_requests": None}
    assert jmx.change(before, {0: {"controller_requests": 12.0}}) == {
        "controller_requests": None}


@pytest.mark.filesystem
def test_a_node_with_a_metrics_port_loads_the_agent_and_only_the_broker_does(tmp_path: Path):
    release = RELEASES["3.9.2"]
    node = kn.KafkaNode(release, 0, "127.0.0.1", 9092, tmp_path / "d" / "kafka", "kraft",
                        controller_port=9093, voters=((0, "127.0.0.1", 9093),),
                        metrics_port=9094)
    files = kn.write_files(node, tmp_path / "w")
    assert files.agent is not None
    agent, _, config = files.agent.partition("=")
    assert agent == f"-javaagent:{jmx.agent_jar()}"
    assert config == f"127.0.0.1:9094:{tmp_path / 'w' / 'jmx-exporter.yaml'}"
    assert "CONTROLLER" in (tmp_path / "w" / "jmx-exporter.yaml").read_text()
    broker = kn.java_command(node, kn.KAFKA_MAIN, [str(files.properties)], files.log_config,
                             agent=files.agent)
    assert broker[1] == files.agent and broker[-2:] == [kn.KAFKA_MAIN, str(files.properties)]
    tool = kn.java_command(node, kn.STORAGE_TOOL, ["format"], files.log_config)
    assert not any(a.startswith("-javaagent") for a in tool)
    without = kn.write_files(
        kn.KafkaNode(release, 1, "127.0.0.1", 9095, tmp_path / "e" / "kafka", "zookeeper",
                     zookeeper_connect="127.0.0.1:2181/k"), tmp_path / "v")
    assert without.agent is None


def test_the_quorum_names_its_leader_and_a_zookeeper_node_names_none():
    page = ("# TYPE kafka_server_raft_metrics_current_leader untyped\n"
            "kafka_server_raft_metrics_current_leader 2.0\n")
    assert jmx.leader(page) == 2
    assert jmx.leader("kafka_server_raft_metrics_current_leader -1.0\n") is None  # electing
    assert jmx.leader(PAGE) is None
