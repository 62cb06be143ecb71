"""security: what listener security costs each architecture.

``security: [none, tls, sasl_ssl]`` is swept like a policy: one side per level, every side's cluster
up at once and its sessions interleaved with the others', with throwaway certificates and users made
for the run (harness/cluster/certs.py). The sessions are the paper's. The analysis side is
spark_analysis/studies/security (docs/security.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.cluster.certs import SECURITY_LEVELS
from harness.schema import Ctx
from harness.studies.study import Study

PLAINTEXT: tuple[str, ...] = ("none",)


def _parse(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]
           ) -> tuple[str, ...] | None:
    if "security" not in data:
        return None
    levels = tuple(ctx.choice("security", v, tuple(SECURITY_LEVELS))
                   for v in ctx.string_list("security", data["security"]))
    if levels != PLAINTEXT:
        for key, sessions in (("faults", "fault"), ("metadata", "metadata")):
            if data.get(key) is not None:
                raise ctx.fail("security", f"{sessions} sessions connect in plaintext; "
                               "security applies to split and streaming sessions only")
    return None if levels == PLAINTEXT else levels


def levels(config: tuple[str, ...] | None) -> tuple[str, ...]:
    """The security levels a workload sweeps (plaintext alone when it says none)."""
    return config or PLAINTEXT


SECURITY: Study[tuple[str, ...]] = Study(
    name="security",
    summary="plaintext, TLS and SASL_SSL clusters of every architecture, interleaved",
    keys=("security",),
    parse=_parse,
    manifest=lambda config: {"security": list(levels(config))},
    refuse_external=lambda config: (
        "security sets the listeners of clusters twinbench starts; an external cluster's is "
        "its own (give the load client's settings with --client-config)"),
    refuse_hosts=lambda config: ("security's throwaway certificates are made on this machine "
                                 "for its clusters; not with --hosts (yet)"),
)
