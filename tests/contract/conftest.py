import pytest

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
    started for nothing)."""
    keep, drop = [], []
    for item in items:
        arch = getattr(item, "callspec", None) and item.callspec.params.get("cluster")
        single = arch and single_node(arch)
        unreplicated = arch and arch not in REPLICATING
        drop_it = (single and item.get_closest_marker("multi_broker")) or (
            unreplicated and item.get_closest_marker("replicated"))
        (drop if drop_it else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
