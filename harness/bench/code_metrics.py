"""``python -m harness.bench.code_metrics``: the size figures the architecture pass is judged by.

Largest modules (lines), longest functions (lines from ``def`` to the last statement), how many
functions exceed 60 lines, and how many lines outside brokers/ spell an architecture name as a
string literal (the places the registry, harness/architectures/, should be the only one).
Counted over brokers/, harness/, workloads/, spark_analysis/ and twinbench_common/.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

PACKAGES = ("brokers", "harness", "workloads", "spark_analysis", "twinbench_common")
ARCH_LITERAL = re.compile(r"""["'](zk|dsbs)["']""")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.code_metrics")
    parser.add_argument("root", nargs="?", type=Path, default=Path("."),
                        help="the repository's root (default: the current directory)")
    parser.add_argument("--top", type=int, default=8, help="rows per list (default 8)")
    args = parser.parse_args(argv)
    files = sorted(p for d in PACKAGES for p in (args.root / d).rglob("*.py"))
    sizes: list[tuple[int, str]] = []
    funcs: list[tuple[int, str]] = []
    arch_lines = 0
    for path in files:
        rel = str(path.relative_to(args.root))
        text = path.read_text()
        sizes.append((len(text.splitlines()), rel))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                funcs.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.name}"))
        if not rel.startswith("brokers"):
            arch_lines += sum(1 for line in text.splitlines() if ARCH_LITERAL.search(line))
    sizes.sort(reverse=True)
    funcs.sort(reverse=True)
    print(f"modules: {len(files)}")
    print("largest modules:", ", ".join(f"{name} {n}" for n, name in sizes[:args.top]))
    print("longest functions:", ", ".join(f"{name} {n}" for n, name in funcs[:args.top]))
    print(f"functions over 60 lines: {sum(1 for n, _ in funcs if n > 60)}")
    print(f"lines naming an architecture outside brokers/: {arch_lines}")


if __name__ == "__main__":
    main()
