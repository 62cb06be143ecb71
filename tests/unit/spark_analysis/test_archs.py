"""How the analysis learns the architectures (spark_analysis/archs.py): from the manifests'
``architectures`` key, with the built-in zk/dsbs labels for run logs written before it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from spark_analysis import analysis, figures, loader, synth
from spark_analysis.archs import BUILTIN, DEFAULT, Archs

KRAFT = {"display_name": "KRaft", "short_name": "KRaft", "color": "#55A868", "order": 2,
         "baseline": False, "cost_column": "coordination_ops", "cost_label": "Raft messages"}


def test_without_labels_zk_and_dsbs_as_before() -> None:
    assert DEFAULT.names == ("zk", "dsbs")
    assert DEFAULT.baseline.name == "zk" and [a.name for a in DEFAULT.others] == ["dsbs"]
    assert DEFAULT.ratio_name(DEFAULT["dsbs"]) == "DSBS/ZK"
    old = synth.manifest("r1", "zk", "", "w", format_version=1)
    assert "architectures" not in old
    assert Archs.from_manifests([old]) == DEFAULT
    assert DEFAULT.offsets() == (0.38, [-0.19, 0.19])


def test_manifest_labels_override_and_extend() -> None:
    zk = synth.manifest("r1", "zk", "", "w", format_version=2, labels=True)
    assert zk["architectures"]["zk"]["display_name"] == "ZooKeeper"
    third = {"arch": "kraft", "run_arches": ["zk", "kraft"],
             "architectures": {"kraft": KRAFT, "zk": {**zk["architectures"]["zk"],
                                                      "color": "#000000"}}}
    archs = Archs.from_manifests([zk, third])
    assert archs.names == ("zk", "dsbs", "kraft")
    assert archs["zk"].color == "#000000"  # the later manifest wins
    assert archs["kraft"].display_name == "KRaft" and not archs["kraft"].baseline
    assert [a.name for a in archs.others] == ["dsbs", "kraft"]
    assert archs.ratio_name(archs["kraft"]) == "KRaft/ZK"


def test_an_undescribed_architecture_gets_plain_labels() -> None:
    archs = Archs.from_manifests([{"arch": "raft", "run_arches": ["raft"]}])
    raft = archs["raft"]
    assert archs.names == ("zk", "dsbs", "raft")
    assert (raft.display_name, raft.baseline, raft.cost_column) == (
        "raft", False, "coordination_ops")
    assert raft.color not in {a.color for a in BUILTIN}


def test_one_baseline_even_when_manifests_disagree() -> None:
    dsbs_says = {"arch": "dsbs", "architectures": {
        "dsbs": {**{k: v for k, v in BUILTIN[1].__dict__.items() if k != "name"},
                 "baseline": True}}}
    archs = Archs.from_manifests([dsbs_says])
    assert [a.name for a in archs if a.baseline] == ["zk"]  # first in order


def test_a_reference_makes_two_external_clusters_one_pair() -> None:
    """`twinbench analyze --reference kafka-zk`: kafka-kraft/kafka-zk, not each over a zk twin
    that did not run; a name no run gives is one line."""
    manifests = [{"arch": "kafka-zk"}, {"arch": "kafka-kraft"}]
    assert Archs.from_manifests(manifests).baseline.name == "zk"
    archs = Archs.from_manifests(manifests, reference="kafka-zk")
    assert [a.name for a in archs if a.baseline] == ["kafka-zk"]
    assert archs.ratio_name(archs["kafka-kraft"]) == "kafka-kraft/kafka-zk"
    assert [a.name for a in archs.others] == ["zk", "dsbs", "kafka-kraft"]
    with pytest.raises(UserError, match="--reference redpanda: no run names that architecture "
                                        r"\(the runs name zk, dsbs, kafka-zk, kafka-kraft\)"):
        Archs.from_manifests(manifests, reference="redpanda")


@pytest.mark.parametrize("value,needle", [
    ([], "architectures is not an object"),
    ({"kraft": 1}, "architectures.kraft is not an object"),
    ({"kraft": {**KRAFT, "order": "2"}}, "architectures.kraft.order is '2', expected int"),
    ({"kraft": {**KRAFT, "order": True}}, "architectures.kraft.order is True"),
    ({"kraft": {k: v for k, v in KRAFT.items() if k != "color"}}, "kraft.color is None"),
])
@pytest.mark.filesystem
def test_a_malformed_key_is_one_line_naming_the_file(tmp_path: Path, value: object,
                                                     needle: str) -> None:
    run = synth.write_run(tmp_path, arch="zk", label="", workload="w", index=1,
                          cells=synth.FIXTURE_CELLS[:1], tries=1, value=synth.fixture_value,
                          format_version=2)
    path = run / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "architectures": value}))
    with pytest.raises(UserError, match=needle) as err:
        loader.read_manifest(run)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.filesystem
def test_report_directory_remembers_the_architectures(tmp_path: Path) -> None:
    archs = Archs.from_manifests([{"arch": "kraft", "architectures": {"kraft": KRAFT}}])
    analysis.architectures_table(archs).to_csv(tmp_path / "architectures.csv", index=False)
    assert figures.read_archs(tmp_path) == archs
    assert figures.read_archs(tmp_path / "older-report") == DEFAULT
