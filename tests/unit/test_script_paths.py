"""Every file a script or the Makefile runs must exist where it says.

Moving a module is checked by imports (mypy, the tests); moving a script is not: a shell line
naming an old path fails only when it runs, which is `make setup` on a fresh machine, the one
place a developer's tree (already set up) never goes. This reads the paths instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A path a shell line runs: relative to the script's directory, or to the repository root.
SCRIPT_DIR = re.compile(r'\$\(dirname "?\$0"?\)/([\w./-]+)')
ROOT_PATH = re.compile(r"(?<![\w./$-])((?:harness|brokers|workloads|spark_analysis|tests|"
                       r"twinbench_common|results|\.ci)/[\w./-]+\.(?:sh|py|yaml|json|csv))")
# `python -m package.module` in the Makefile.
MODULE = re.compile(r"-m ((?:harness|brokers|workloads|spark_analysis|tests)(?:\.\w+)+)")


def _scripts() -> list[Path]:
    found = [ROOT / "Makefile", *sorted((ROOT / ".ci").iterdir())]
    for sub in ("harness", "brokers", "workloads", "spark_analysis", "tests"):
        found += sorted((ROOT / sub).rglob("*.sh"))
    return [p for p in found if p.is_file()]


@pytest.mark.parametrize("script", _scripts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_a_script_names_exist(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    missing = [m for m in SCRIPT_DIR.findall(text) if not (script.parent / m).exists()]
    missing += [m for m in ROOT_PATH.findall(text) if not (ROOT / m).exists()
                and "*" not in m]
    for module in MODULE.findall(text):
        as_path = ROOT / module.replace(".", "/")
        if not (as_path.with_suffix(".py").exists() or (as_path / "__main__.py").exists()):
            missing.append(f"-m {module}")
    assert not missing, f"{script.relative_to(ROOT)} names what does not exist: {missing}"


def test_the_scan_finds_the_setup_script_and_its_image_builder() -> None:
    # The regression this file exists for: setup_system.sh calling build_image.sh by an old path.
    setup = ROOT / "harness" / "setup_system.sh"
    assert setup in _scripts()
    assert SCRIPT_DIR.findall(setup.read_text(encoding="utf-8")) == [
        "services/zookeeper/build_image.sh"]
