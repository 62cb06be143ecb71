"""The arms of a code-vs-code regression run: each architecture twice, head and base.

Every arm is an architecture entry (harness/architectures): ``zk`` and ``dsbs`` as registered
(head: this tree's brokers), and ``zk@base`` and ``dsbs@base``, the same entries whose broker
processes run the base tree's code (harness/regression/base.py). Registered in this process only
(architectures.registered), they run like any architecture: interleaved session by session,
each on its own clusters, one run log each, in the mirrored order of ``__main__.arm_order``.

The positive controls (controls.py) are built the same way, with a planted module
(plants/) in place of the twin's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from harness.architectures.entry import Architecture, Launch, Node, ProcessSpec


def relaunched(entry: Architecture, name: str, *, python: str | None = None,
               env: Mapping[str, str] | None = None, module: str | None = None,
               display: str = "base") -> Architecture:
    """``entry`` under ``name``, its brokers run on ``python`` with ``env`` added, or as
    ``python -m module`` (a planted entry point taking the same arguments). Not compared in
    ``--arch all`` and never the baseline: it exists for one run's pairs."""

    def command(launch: Launch) -> Callable[[Node], ProcessSpec]:
        original = entry.command(launch)

        def process(node: Node) -> ProcessSpec:
            spec = original(node)
            argv = list(spec.argv)
            if python is not None:
                argv[0] = python
            if module is not None:
                argv[argv.index("-m") + 1] = module
            return dataclasses.replace(spec, argv=tuple(argv),
                                       env={**spec.env, **(env or {})})
        return process

    labels = dataclasses.replace(
        entry.labels, display_name=f"{entry.labels.display_name} ({display})",
        short_name=f"{entry.labels.short_name}@{display}", baseline=False)
    return dataclasses.replace(entry, name=name, labels=labels, command=command,
                               compared=False)
