"""Suite-wide collection rules.

`make test` samples the large matrices; the whole of each runs from its own make target. Tests
beyond the sample carry one of the markers below and are deselected, not skipped, unless the
marker's environment variable is 1 (its make target sets it), so a run of the suite lists no
skip for what it chose not to run.
"""

from __future__ import annotations

import os

import pytest

# marker -> the environment variable that selects its tests (and the make target setting it).
OPT_IN = {
    "hosts_full": "TWINBENCH_HOSTS_FULL",  # make test-hosts
    "scale": "TWINBENCH_SCALE",  # make test-scale
    "security_full": "TWINBENCH_SECURITY_FULL",  # make test-security
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    off = {m for m, var in OPT_IN.items() if os.environ.get(var) != "1"}
    if not off:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        (drop if any(item.get_closest_marker(m) for m in off) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
