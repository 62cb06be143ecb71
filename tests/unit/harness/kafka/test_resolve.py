"""Resolving the pinned Kafka releases (harness/kafka): what counts as a complete cache, what a
missing tool says, and that each POM pins what the release table says. No Maven runs here
(tests/integration/test_kafka_resolve.py runs it)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness.kafka import resolve
from harness.kafka.releases import RELEASES, Release

pytestmark = pytest.mark.filesystem
NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def fake_resolution(release: Release, cache: Path, jars: list[str], digest: str | None = None
                    ) -> Path:
    lib = resolve.lib_dir(release, cache)
    lib.mkdir(parents=True)
    for name in jars:
        (lib / name).write_bytes(b"PK")
    stamp = {"version": release.version, "jars": jars,
             "pom_sha256": digest or resolve.pom_digest(release)}
    (lib.parent / resolve.STAMP).write_text(json.dumps(stamp))
    return lib


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_a_complete_resolution_of_the_current_pom_is_used_as_it_is(tmp_path, version):
    release = RELEASES[version]
    fake_resolution(release, tmp_path, [release.broker_jar, release.tools_jar])
    got = resolve.resolve(release, tmp_path, mvn="/nonexistent/mvn")  # Maven never runs
    assert got.cached and got.jars == 2


def test_a_changed_pom_or_a_missing_jar_is_not_a_cache_hit(tmp_path):
    release = RELEASES["3.9.2"]
    lib = fake_resolution(release, tmp_path, [release.broker_jar, release.tools_jar],
                          digest="0" * 64)
    assert resolve.cached(release, tmp_path) is None
    (lib.parent / resolve.STAMP).unlink()
    for jar in lib.iterdir():
        jar.unlink()
    lib.rmdir()
    lib = fake_resolution(release, tmp_path, [release.broker_jar, release.tools_jar])
    (lib / release.tools_jar).unlink()
    assert resolve.cached(release, tmp_path) is None
    (lib.parent / resolve.STAMP).write_text("{not json")
    assert resolve.cached(release, tmp_path) is None


def test_missing_java_or_maven_is_one_line_naming_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UserError) as exc:
        resolve.check_tools()
    message = str(exc.value)
    assert "\n" not in message
    assert "java and mvn" in message and "maven" in message


def test_the_cli_says_what_is_missing_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert resolve.main(["--cache", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("python -m harness.kafka.resolve: ")


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_each_pom_pins_its_release_and_the_logging_it_needs(version):
    release = RELEASES[version]
    deps = ET.parse(release.pom).getroot().findall("m:dependencies/m:dependency", NS)
    found = {(d.findtext("m:artifactId", namespaces=NS), d.findtext("m:version", namespaces=NS))
             for d in deps}
    assert ("kafka_2.13", version) in found and ("kafka-tools", version) in found
    names = {name for name, _ in found}
    if release.logging == "reload4j":
        assert {"slf4j-reload4j", "reload4j"} <= names
    else:
        assert {"log4j-api", "log4j-core", "log4j-slf4j-impl"} <= names
