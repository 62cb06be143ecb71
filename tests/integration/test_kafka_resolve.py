"""The pinned Kafka releases resolve from Maven Central into the checkout's cache, with the
broker, the perf tools and a logging backend, and a second resolution runs no Maven.
(`make setup` resolved them already, so this finds them cached unless the cache was removed.)"""

from __future__ import annotations

import pytest

from harness.kafka import resolve
from harness.kafka.releases import RELEASES


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_a_release_resolves_once_with_broker_tools_and_logging(version):
    release = RELEASES[version]
    first = resolve.resolve(release)
    jars = {p.name for p in first.lib.glob("*.jar")}
    assert {release.broker_jar, release.tools_jar} <= jars
    binding = "slf4j-reload4j-" if release.logging == "reload4j" else "log4j-slf4j-impl-"
    assert any(name.startswith(binding) for name in jars)
    again = resolve.resolve(release, mvn="/nonexistent/mvn")  # would fail if Maven ran
    assert again.cached and again.jars == len(jars)
