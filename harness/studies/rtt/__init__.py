"""rtt: the comparison against the network's round-trip time.

``rtt_ms: [0, 1, 5]`` (netns workloads; root) sweeps round-trip times, one cell each (cell id
suffix ``-rtt<ms>``): a delay line (harness/netdelay) adds the time between every two brokers
and between each broker and the root namespace's load client and ZooKeeper, as separate
machines would. The sessions are the paper's; records.csv and coordination.csv carry the
delay line's columns. The analysis side is spark_analysis/studies/rtt (docs/rtt.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.netdelay.control import MAX_RTT_MS
from harness.schema import Ctx
from harness.studies.study import Study


def _parse(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]
           ) -> tuple[float, ...] | None:
    if "rtt_ms" not in data:
        return None
    values = []
    for v in ctx.string_list("rtt_ms", data["rtt_ms"]):
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= MAX_RTT_MS:
            raise ctx.fail("rtt_ms", f"must be round-trip times in [0, {MAX_RTT_MS:g}] ms, "
                           f"got {v!r}")
        values.append(float(v))
    if core["network"] != "netns":
        raise ctx.fail("rtt_ms", "the delay is put between network namespaces: give "
                       "network: netns (root)")
    for key in ("faults", "metadata", "rate_search"):
        if data.get(key) is not None:
            raise ctx.fail("rtt_ms", f"applies to the paper's sessions and to fixed rates, "
                           f"not to {key} workloads")
    return tuple(values)


RTT: Study[tuple[float, ...]] = Study(
    name="rtt",
    summary="the comparison against the round-trip time a delay line adds (netns, root)",
    keys=("rtt_ms",),
    parse=_parse,
    manifest=lambda rtts: {"rtt_ms": list(rtts or ())},
    refuse_external=lambda rtts: ("rtt_ms delays the network of a cluster twinbench starts in "
                                  "namespaces; not --bootstrap"),
)
