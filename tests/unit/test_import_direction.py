"""Imports point one way (docs/architecture.md): every module of the product is parsed and each
of its imports (at module level, in functions, under TYPE_CHECKING alike) checked against the
rules of that section. A rule broken anywhere fails with the module, the line and the import."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("brokers", "harness", "workloads", "spark_analysis", "twinbench_common")
PROJECT = (*PACKAGES, "tests")
TWINS = tuple(sorted(p.parent.name for p in (ROOT / "brokers").glob("*_broker/__init__.py")))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute dotted name) of every import in the file; relative ones resolved."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            # `from pkg import sub` may name a submodule: check both spellings.
            yield node.lineno, module
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _forbidden(module: str) -> tuple[str, ...]:
    """What a module may not import, by the section's rules."""
    top = module.split(".")[0]
    rules: list[str] = ["tests"]  # the product never imports the tests
    if top == "brokers":
        rules.append("harness")  # brokers run without the harness installed alongside
        if _within(module, "brokers.core"):
            rules += [f"brokers.{t}" for t in TWINS]
            rules += ["workloads", "spark_analysis"]
        for twin in TWINS:
            if _within(module, f"brokers.{twin}"):
                rules += [f"brokers.{t}" for t in TWINS if t != twin]
    elif top == "workloads":
        rules += [f"brokers.{t}" for t in TWINS]  # the client must not know what it measures
    elif top == "spark_analysis":
        rules += ["brokers", "harness", "workloads"]  # run logs are files, nothing more
    elif top == "twinbench_common":
        rules += [p for p in PROJECT if p != "twinbench_common"]
    return tuple(rules)


def _violations() -> list[str]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = _module_name(path)
            forbidden = _forbidden(module)
            for line, name in _imports(path):
                hit = next((f for f in forbidden if _within(name, f)), None)
                if hit is not None:
                    out.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {name}")
    return sorted(set(out))


def test_there_are_twins_to_keep_apart() -> None:
    assert {"zk_broker", "dsbs_broker"} <= set(TWINS)


def test_imports_point_one_way() -> None:
    assert _violations() == []


@pytest.mark.parametrize(("module", "name", "broken"), [
    ("brokers.core.server", "brokers.zk_broker.coordinator", True),
    ("brokers.core.server", "harness.cluster", True),
    ("brokers.core.server", "spark_analysis.loader", True),
    ("brokers.zk_broker.coordinator", "brokers.dsbs_broker.gossip.swim", True),
    ("brokers.dsbs_broker.gossip.swim", "brokers.core.errors", False),
    ("brokers.dsbs_broker.gossip.swim", "harness.cluster.processes", True),
    ("workloads.consumer", "brokers.core.protocol.records", False),
    ("workloads.consumer", "brokers.dsbs_broker.packets.wire", True),
    ("harness.bench.perf_zk", "brokers.zk_broker.direct", False),
    ("spark_analysis.loader", "brokers.core.errors", True),
    ("spark_analysis.loader", "twinbench_common.errors", False),
    ("twinbench_common.errors", "brokers.core.errors", True),
    ("harness.cli", "tests.support.ops", True),
])
def test_rules_read_as_the_section_says(module: str, name: str, broken: bool) -> None:
    assert any(_within(name, f) for f in _forbidden(module)) is broken


# --- no import cycles in brokers/ -----------------------------------------------------------------
def _local_imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports, at any level (functions and
    TYPE_CHECKING included). ``from pkg import sub`` names the submodule, not ``pkg``'s
    ``__init__``: a package that only hands its modules' names on is no link of a cycle."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names} & modules
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                out |= {sub} & modules if sub in modules else {module} & modules
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one importing itself
    (Tarjan's algorithm), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_brokers_have_no_import_cycles() -> None:
    paths = {_module_name(p): p for p in sorted((ROOT / "brokers").rglob("*.py"))}
    graph = {m: _local_imports(p, set(paths)) - {m} for m, p in paths.items()}
    assert _cycles(graph) == []


def test_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"], ["e"]]
