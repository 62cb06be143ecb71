import pytest

from tests.support.clusters import ARCHITECTURES, REPLICATING, start_cluster


# One cluster per architecture for the whole run, shared by every contract module that asks for
# ``cluster`` (pytest orders the tests by architecture, so each starts once): starting a zk
# cluster costs its ZooKeeper and three brokers. Tests name their own topics and groups, and one
# that kills or pauses a broker brings it back before it ends.
@pytest.fixture(scope="session", params=ARCHITECTURES)
def cluster(request, tmp_path_factory):
    c = start_cluster(request.param, tmp_path_factory.mktemp(f"cluster-{request.param}"))
    yield c
    c.stop()


def pytest_collection_modifyitems(config, items):
    """Tests marked multi_broker do not apply to the one-broker cluster, nor tests marked
    replicated to an architecture that does not replicate: deselect, not skip (no cluster is
    started for nothing)."""
    keep, drop = [], []
    for item in items:
        arch = getattr(item, "callspec", None) and item.callspec.params.get("cluster")
        single = arch == "single"
        unreplicated = arch and arch not in REPLICATING
        drop_it = (single and item.get_closest_marker("multi_broker")) or (
            unreplicated and item.get_closest_marker("replicated"))
        (drop if drop_it else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
