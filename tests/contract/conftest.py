import pytest

from tests.support.clusters import ARCHITECTURES, start_cluster


@pytest.fixture(scope="module", params=ARCHITECTURES)
def cluster(request, tmp_path_factory):
    c = start_cluster(request.param, tmp_path_factory.mktemp(f"cluster-{request.param}"))
    yield c
    c.stop()
