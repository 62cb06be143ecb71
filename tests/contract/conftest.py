import pytest

from tests.support.clusters import ARCHITECTURES, start_cluster


@pytest.fixture(scope="module", params=ARCHITECTURES)
def cluster(request, tmp_path_factory):
    c = start_cluster(request.param, tmp_path_factory.mktemp(f"cluster-{request.param}"))
    yield c
    c.stop()


def pytest_collection_modifyitems(config, items):
    """Tests marked multi_broker do not apply to the one-broker cluster: deselect, not skip."""
    keep, drop = [], []
    for item in items:
        single = getattr(item, "callspec", None) and item.callspec.params.get("cluster") == (
            "single")
        (drop if single and item.get_closest_marker("multi_broker") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
