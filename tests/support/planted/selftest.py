"""``python -m tests.support.planted.selftest`` (``make regress-selftest``): proof that the CI
regression can fail. Each planted regression is run as a real regression run (both twins, real
ZooKeeper, real brokers) and checked against the committed baseline; the selftest passes when
every plant is caught by the layers it must move, and prints each layer's verdict and by how
much it moved.

Plants (the broker-side ones are entry points in this package, swapped into this process's
copy of the architecture registry under the twin's own name, never switches in the brokers):

* ``zk-extra-read``: one more ZooKeeper read per produced partition on the zk twin; the exact
  layer must fail (zk_reads and zk_requests per 1,000 records).
* ``busy-dsbs``: a 200 µs busy loop on every request in the dsbs twin; the cost and throughput
  layers must fail.
* ``offset-commit-none``: the workload's offset_commit ``every_fetch`` overridden to ``none``
  (no OffsetCommit, so no ZooKeeper write per fetch on zk); the exact layer must fail (zk_writes
  per 1,000 records drop by about 1,000 / batch), and the ratios move.

The exact layer counts, so one try is enough for the plants it must catch; the busy loop is
checked with the baseline workload's tries, as ``make regress`` runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from brokers.core.errors import UserError
from harness import architectures
from harness.architectures.entry import Architecture, Launch, Node, ProcessSpec
from harness.driver import RunOptions, run
from harness.workload import load_workload
from spark_analysis import regress
from spark_analysis import regress_layers as L


@dataclass(frozen=True)
class Plant:
    name: str
    what: str
    # The layers that must fail.
    expect: tuple[str, ...]
    # Registry name -> broker entry module swapped in for the run.
    modules: tuple[tuple[str, str], ...] = ()
    # Workload policies overridden for the run.
    policies: tuple[tuple[str, str], ...] = ()
    # None: the workload's own tries.
    tries: int | None = None


PLANTS = (
    Plant("zk-extra-read", "an extra ZooKeeper read per produced partition on zk", ("exact",),
          modules=(("zk", "tests.support.planted.zk_extra_read"),), tries=1),
    # Two tries: the loop triples dsbs's CPU per request, far outside either band, and the
    # selftest's time is CI's.
    Plant("busy-dsbs", "a 200 µs busy loop per request in dsbs", ("cost", "throughput"),
          modules=(("dsbs", "tests.support.planted.busy_dsbs"),), tries=2),
    Plant("offset-commit-none", "offset_commit every_fetch -> none (workload override)",
          ("exact",), policies=(("offset_commit", "none"),), tries=1),
)


def launched_through(entry: Architecture, module: str) -> Architecture:
    """``entry`` with its brokers run as ``python -m module`` (a planted entry point taking
    the same arguments) instead of its own program."""
    def command(launch: Launch) -> Callable[[Node], ProcessSpec]:
        original = entry.command(launch)

        def process(node: Node) -> ProcessSpec:
            spec = original(node)
            argv = list(spec.argv)
            argv[argv.index("-m") + 1] = module
            return dataclasses.replace(spec, argv=tuple(argv))
        return process
    return dataclasses.replace(entry, command=command)


@contextlib.contextmanager
def planted_registry(modules: Sequence[tuple[str, str]]) -> Iterator[None]:
    """This process's registry with each named twin launched through a planted module."""
    with architectures.registered(*(launched_through(architectures.get(name), module)
                                    for name, module in modules)):
        yield


def workload_file(workload: str, policies: Sequence[tuple[str, str]], tmp: Path) -> Path:
    """The workload, or a copy of it with ``policies`` overridden (same name, so the baseline
    recognises it)."""
    loaded = load_workload(workload)
    if not policies:
        return loaded.path
    data = yaml.safe_load(loaded.text)
    data.setdefault("policies", {}).update(dict(policies))
    path = tmp / loaded.path.name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def run_plant(plant: Plant, workload: str, baseline: dict[str, object], tmp: Path,
              tune: bool = False) -> regress.CheckResult:
    out = tmp / plant.name
    path = workload_file(workload, plant.policies, tmp)
    # run() names the run directories on stdout; here they are temporary.
    with planted_registry(plant.modules), contextlib.redirect_stdout(None):
        outcome = run(RunOptions(arch=architectures.BOTH, workload=load_workload(path), out=out,
                                 tries=plant.tries, progress=False, tune=tune))
    if outcome.exit_code != 0:
        raise UserError(f"{plant.name}: the planted run did not complete (exit "
                        f"{outcome.exit_code})")
    return regress.check(regress.pooled(regress.read_runs([out])), baseline)


def describe(plant: Plant, result: regress.CheckResult) -> tuple[bool, list[str]]:
    caught = all(result.failed(layer) for layer in plant.expect)
    lines = [f"{plant.name}: {plant.what}: "
             + ("CAUGHT" if caught else "NOT CAUGHT") + f" (must fail: {', '.join(plant.expect)})"]
    for layer in L.LAYERS:
        verdicts = result.layer(layer)
        bad = [v for v in verdicts if v.status != L.OK]
        worst = max(verdicts, key=lambda v: abs(v.change_pct) if v.change_pct == v.change_pct
                    else 0.0)
        band = result.baseline["layers"][layer]["half_width_pct"]  # type: ignore[index]
        verdict = "FAIL" if bad else "ok"
        lines.append(f"  {layer:<10} {verdict:<4} {len(bad):>3}/{len(verdicts)} outside (band "
                     f"±{band:.1f}%); largest move {worst.statistic} {worst.change_pct:+.1f}%")
    return caught, lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.planted.selftest",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=regress.DEFAULT_BASELINE)
    parser.add_argument("--only", choices=[p.name for p in PLANTS], action="append",
                        help="run only this plant (repeatable)")
    parser.add_argument("--tune", action="store_true",
                        help="run as `make regress` does with TUNE=--tune (twinbench tune)")
    args = parser.parse_args(argv)
    try:
        baseline = regress.load_baseline(args.baseline)
        workload = str(baseline["workload"])
        caught_all = True
        with tempfile.TemporaryDirectory(prefix="twinbench-selftest-") as tmp:
            for plant in PLANTS:
                if args.only and plant.name not in args.only:
                    continue
                caught, lines = describe(plant, run_plant(plant, workload, baseline, Path(tmp),
                                                          args.tune))
                caught_all &= caught
                print("\n".join(lines), flush=True)
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2
    print("regress-selftest: " + ("every planted regression was caught" if caught_all
                                  else "a planted regression went unnoticed"))
    return 0 if caught_all else 1


if __name__ == "__main__":
    sys.exit(main())
