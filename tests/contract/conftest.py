import pytest

from tests.support import selection
from tests.support.clusters import ARCHITECTURES, REPLICATING, single_node, start_cluster

# A killed zk broker is noticed when its ZooKeeper session expires: 6 s (Kafka's default before
# 2.5) rather than the brokers' 18 s, so the tests that kill one wait a third as long.
ZK_SESSION_TIMEOUT_MS = 6000


# One cluster per architecture for the whole run, shared by every contract module that asks for
# ``cluster`` (pytest orders the tests by architecture, so each starts once): starting a zk
# cluster costs its ZooKeeper and three brokers. Tests name their own topics and groups, and one
# that kills or pauses a broker brings it back before it ends.
@pytest.fixture(scope="session", params=ARCHITECTURES)
def cluster(request, tmp_path_factory):
    c = start_cluster(request.param, tmp_path_factory.mktemp(f"cluster-{request.param}"),
                      zk_session_timeout_ms=ZK_SESSION_TIMEOUT_MS)
    yield c
    c.stop()


def pytest_collection_modifyitems(config, items):
    """Tests marked multi_broker do not apply to the one-broker cluster, nor tests marked
    replicated to an architecture that does not replicate: deselect, not skip (no cluster is
    started for nothing), with that reason recorded for CI's no-skip rule."""
    def reason(item):
        arch = getattr(item, "callspec", None) and item.callspec.params.get("cluster")
        if not arch:
            return None
        if single_node(arch) and item.get_closest_marker("multi_broker"):
            return f"does not apply: {arch} runs one broker"
        if arch not in REPLICATING and item.get_closest_marker("replicated"):
            return f"does not apply: {arch} does not replicate"
        return None

    selection.deselect(config, items, reason)
    # One worker per architecture's tests (pytest-xdist --dist loadgroup): its cluster is a
    # session fixture, started once per worker that runs any of them.
    for item in items:
        arch = getattr(item, "callspec", None) and item.callspec.params.get("cluster")
        if arch:
            item.add_marker(pytest.mark.xdist_group(f"contract-{arch}"))
