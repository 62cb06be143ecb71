"""Imports point one way (docs/architecture.md): every module of the product is parsed and each
of its imports (at module level, in functions, under TYPE_CHECKING alike) checked against the
rules of that section. A rule broken anywhere fails with the module, the line and the import.
The same parse holds the whole product free of import cycles, and prints a cycle it finds."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("brokers", "harness", "workloads", "spark_analysis", "twinbench_common")
PROJECT = (*PACKAGES, "tests")
TWINS = tuple(sorted(p.parent.name for p in (ROOT / "brokers").glob("*_broker/__init__.py")))
STUDIES = tuple(sorted(p.parent.name
                       for p in (ROOT / "spark_analysis" / "studies").glob("*/__init__.py")))
# What sits above the studies in spark_analysis: the job and what calls or presents it.
ANALYSIS_FRAME = ("job", "report", "figures", "analysis", "cli", "regress", "scale_bench")


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
        for study in STUDIES:
            # A study is a slice of its own: shared modules below it, never the frame above
            # it (which finds it through the registry's strings) nor another study.
            if _within(module, f"spark_analysis.studies.{study}"):
                rules += [f"spark_analysis.{m}" for m in ANALYSIS_FRAME]
                rules += [f"spark_analysis.studies.{s}" for s in STUDIES if s != study]
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


def test_there_are_studies_to_keep_apart() -> None:
    assert {"paper", "faults", "metadata"} <= set(STUDIES)


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
    ("spark_analysis.studies.faults.section", "spark_analysis.report", True),
    ("spark_analysis.studies.faults.study", "spark_analysis.job", True),
    ("spark_analysis.studies.faults.study", "spark_analysis.studies.metadata.tables", True),
    ("spark_analysis.studies.faults.study", "spark_analysis.studies.faults.tables", False),
    ("spark_analysis.studies.faults.figures", "spark_analysis.plotting", False),
    ("spark_analysis.studies.faults.study", "spark_analysis.study", False),
    ("twinbench_common.errors", "brokers.core.errors", True),
    ("harness.cli", "tests.support.ops", True),
])
def test_rules_read_as_the_section_says(module: str, name: str, broken: bool) -> None:
    assert any(_within(name, f) for f in _forbidden(module)) is broken


# --- no import cycles anywhere in the product -----------------------------------------------------
def _local_imports(path: Path, modules: set[str]) -> dict[str, int]:
    """The modules of ``modules`` that ``path`` imports, with the line of the first import."""
    return _edges(path.read_text("utf-8"), _module_name(path), path.name == "__init__.py",
                  modules, str(path))


def _edges(source: str, module: str, is_package: bool, modules: set[str],
           filename: str = "<source>") -> dict[str, int]:
    """The modules of ``modules`` that ``source`` (module ``module``) imports, at any level
    (functions and TYPE_CHECKING included), each with the line of its first import.
    ``from pkg import sub`` names the submodule, not ``pkg``'s ``__init__``: a package that
    only hands its modules' names on is no link of a cycle."""
    package = module.split(".")
    if not is_package:
        package = package[:-1]
    out: dict[str, int] = {}
    for node in ast.walk(ast.parse(source, filename)):
        found: set[str] = set()
        if isinstance(node, ast.Import):
            found = {alias.name for alias in node.names} & modules
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            named = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{named}.{alias.name}"
                found |= {sub} & modules if sub in modules else {named} & modules
        for name in found:
            out[name] = min(out.get(name, node.lineno), node.lineno)
    return out


def _cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
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


def _loop(graph: Mapping[str, Iterable[str]], component: list[str]) -> list[str]:
    """One closed path through a cycle's first module (breadth first, so the shortest):
    [a, b, ..., a], every step an import."""
    start, members = component[0], set(component)
    came: dict[str, str] = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [start, *reversed(path[:-1]), start] if v != start else [start, start]
            if w not in came:
                came[w] = v
                queue.append(w)
    raise AssertionError(f"{component} is no cycle")


def _product_graph() -> tuple[dict[str, dict[str, int]], dict[str, Path]]:
    """Every module of the product and what it imports of the product (one graph: a cycle may
    cross packages)."""
    paths = {_module_name(p): p for package in PACKAGES
             for p in sorted((ROOT / package).rglob("*.py"))}
    graph = {m: {k: v for k, v in _local_imports(p, set(paths)).items() if k != m}
             for m, p in paths.items()}
    return graph, paths


def _describe(component: list[str], graph: dict[str, dict[str, int]],
              paths: dict[str, Path]) -> str:
    loop = _loop(graph, component)
    steps = [f"  {paths[a].relative_to(ROOT)}:{graph[a][b]}: {a} imports {b}"
             for a, b in itertools.pairwise(loop)]
    return (f"import cycle of {len(component)} modules ({', '.join(component)}); one loop:\n"
            + "\n".join(steps))


def test_the_product_has_no_import_cycles() -> None:
    """No module of brokers, harness, workloads, spark_analysis or twinbench_common reaches
    itself through imports, counting every import: lazy ones in functions and TYPE_CHECKING
    ones too (a type-only cycle is still two modules that cannot be understood apart)."""
    graph, paths = _product_graph()
    found = _cycles(graph)
    assert not found, "\n".join(_describe(c, graph, paths) for c in found)


def test_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"], ["e"]]
    assert _loop(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert _loop(graph, ["e"]) == ["e", "e"]


def test_every_kind_of_import_is_an_edge() -> None:
    """Function-level and TYPE_CHECKING imports count; ``from pkg import sub`` names sub, a
    name that is no module names the package; relative imports resolve."""
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from pkg.a import X\n"
              "def f():\n    from pkg import b\n"
              "from pkg import c as see\n"
              "from . import d\n")
    modules = {"pkg", "pkg.a", "pkg.b", "pkg.d", "pkg.m"}
    assert _edges(source, "pkg.m", False, modules) == {"pkg.a": 3, "pkg.b": 5, "pkg": 6,
                                                       "pkg.d": 7}
