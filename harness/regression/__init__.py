"""The code-vs-code regression: this tree's brokers against a base version's, on this machine.

``make regress`` runs the regress workload (workloads/regress.yaml) on four arms at once,
interleaved session by session as the twins always are: ``zk`` and ``dsbs`` from this tree
(head) and ``zk@base`` and ``dsbs@base`` from the base (a git ref, by default the accepted one
in results/baseline/base.json, or a directory). spark_analysis/regress.py then judges head
against base per architecture, layer by layer, each band set by the spread of the run's own
pairs (docs/regression.md).

Layout:
- ``base.py``      the base: a worktree of the ref (or a directory) and its environment
- ``arms.py``      an architecture entry relaunched from another tree or a planted module
- ``accepted.py``  results/baseline/base.json: the ref ``make regress`` compares with
- ``__main__.py``  ``python -m harness.regression run|accept``
"""
