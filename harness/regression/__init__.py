"""The code-vs-code regression: this tree's brokers against a base version's, on this machine.

``make regress`` runs the regress workload (workloads/regress.yaml) on every arm at once,
interleaved session by session as the twins always are: ``zk`` and ``dsbs`` from this tree
(head), ``zk@base`` and ``dsbs@base`` from the base (a git ref, by default the accepted one in
results/baseline/base.json, or a directory), and the positive controls (head with a known
regression planted). spark_analysis/regress.py then judges head against base per architecture,
and each control against head, layer by layer, each band set by the spread of the run's own
pairs (docs/regression.md).

Layout:
- ``base.py``      the base: a worktree of the ref (or a directory) and its environment
- ``arms.py``      an architecture entry relaunched from another tree or a planted module
- ``controls.py``  the positive controls every run carries, and what each must fail
- ``plants/``      the planted regressions: entry points that patch one thing, then run a twin
- ``accepted.py``  results/baseline/base.json: the ref ``make regress`` compares with
- ``__main__.py``  ``python -m harness.regression run|accept``
"""
