"""The arms of a code-vs-code regression run: a base arm runs the base tree's brokers, a
control runs head's twin through a plant, and neither is a switch in the shipped brokers
(argv and environment; one test starts an interpreter to see what a base arm imports)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import architectures
from harness.architectures.entry import Launch, Node
from harness.cluster.spec import ClusterSpec
from harness.regression import arms, controls
from harness.regression import base as bases
from harness.regression.__main__ import arm_order
from harness.regression.base import REPO
from harness.regression.plants import BUSY_US_ENV, TWIN_ENV, busy_s_from_env
from twinbench_common.labels import base_name, head_of


def _argv_env(entry: architectures.Architecture, tmp_path: Path
              ) -> tuple[tuple[str, ...], dict[str, str]]:
    spec = ClusterSpec("dsbs")
    launch = Launch(spec.settings(), spec.arch_options(), tmp_path, ("127.0.0.1",), False, {})
    out = entry.command(launch)(Node(0, "127.0.0.1", 0, tmp_path / "b0", "python", None))
    return out.argv, dict(out.env)


def flags(argv: tuple[str, ...]) -> list[str]:
    """The options of a command line (their values hold free ports, different each time)."""
    return [a for a in argv if a.startswith("--")]


@pytest.mark.filesystem
def test_a_base_arm_runs_the_base_trees_brokers_on_its_python(tmp_path: Path) -> None:
    dsbs = architectures.get("dsbs")
    tree = bases.BaseTree(tmp_path, "c" * 40, "HEAD~1", "/base/python", True)
    arm = arms.relaunched(dsbs, base_name("dsbs"), python=tree.python, env=tree.env())
    argv, env = _argv_env(arm, tmp_path)
    head_argv, _ = _argv_env(dsbs, tmp_path)
    assert argv[0] == "/base/python" and argv[1:3] == head_argv[1:3]
    assert flags(argv) == flags(head_argv)
    assert env["PYTHONPATH"] == str(tmp_path) and env["PYTHONSAFEPATH"] == "1"
    assert arm.name == "dsbs@base" and not arm.compared and not arm.labels.baseline
    assert head_of(arm.name) == "dsbs"


@pytest.mark.filesystem
def test_a_base_arm_imports_the_base_trees_code_when_started_from_heads_tree(
        tmp_path: Path) -> None:
    """Started as the harness starts it (from head's tree, whose directory ``python -m`` puts
    first on the path), a base broker must still import the base's ``brokers`` package."""
    pkg = tmp_path / "brokers" / "dsbs_broker"
    pkg.mkdir(parents=True)
    (tmp_path / "brokers" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import brokers\nprint(brokers.__file__)\n")
    tree = bases.BaseTree(tmp_path, "c" * 40, "HEAD~1", sys.executable, True)
    argv, env = _argv_env(arms.relaunched(architectures.get("dsbs"), base_name("dsbs"),
                                          python=tree.python, env=tree.env()), tmp_path)
    at = argv.index("-m")
    done = subprocess.run([*argv[:at + 2]], env={**os.environ, **env}, cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=True)
    assert Path(done.stdout.strip()).parent.parent == tmp_path, done.stdout


@pytest.mark.filesystem
def test_a_control_runs_heads_twin_through_its_plant(tmp_path: Path) -> None:
    (control,) = [c for c in controls.CONTROLS if c.arm == "dsbs+slow-append"]
    argv, env = _argv_env(control.entry(), tmp_path)
    head_argv, _ = _argv_env(architectures.get("dsbs"), tmp_path)
    at = argv.index("-m")
    assert argv[at + 1] == "harness.regression.plants.slow_append"
    assert argv[:at + 1] == head_argv[:at + 1] and flags(argv) == flags(head_argv)
    assert env[TWIN_ENV] == "brokers.dsbs_broker"
    assert float(env[BUSY_US_ENV]) == control.busy_us
    assert control.describe() == {"arm": "dsbs+slow-append", "against": "dsbs",
                                  "expect": ["cost"], "what": control.what}


def test_every_architecture_of_the_check_has_a_control_and_each_names_its_layers() -> None:
    chosen = controls.for_archs(("zk", "dsbs"))
    assert {c.arch for c in chosen} == {"zk", "dsbs"}
    assert all(set(c.expect) <= {"exact", "zookeeper", "cost", "throughput"} and c.expect
               for c in chosen)
    assert len({c.arm for c in chosen}) == len(chosen)
    assert controls.for_archs(("kraft",)) == []


def test_a_plants_size_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUSY_US_ENV, raising=False)
    assert busy_s_from_env(250.0) == pytest.approx(250e-6)
    monkeypatch.setenv(BUSY_US_ENV, "40.5")
    assert busy_s_from_env(250.0) == pytest.approx(40.5e-6)


def test_each_head_and_its_base_hold_mirror_positions() -> None:
    chosen = controls.for_archs(("zk", "dsbs"))
    order = arm_order(["zk", "dsbs"], chosen)
    assert order[0] == "zk" and order[-1] == "zk@base"
    assert order[1] == "dsbs" and order[-2] == "dsbs@base"
    assert order[2:-2] == [c.arm for c in chosen]
    # The driver runs even tries in reverse: every pair swaps places, none stays in the middle.
    back = order[::-1]
    for head in ("zk", "dsbs"):
        assert order.index(head) == back.index(f"{head}@base")
