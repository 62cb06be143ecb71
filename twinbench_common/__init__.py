"""What every part of twinbench may import: it imports nothing of the project itself.

The analysis (``spark_analysis``) promises to import no broker, harness or load-client code
(docs/architecture.md, "Imports point one way"), yet its command-line errors are the same
one-line errors as everyone else's, it shows architectures by the labels the harness writes
into run manifests, and it reads the run logs the harness writes; the definitions they share
live here.

Layout:
- ``errors.py``   the root of the project's errors and ``UserError``, the one-line CLI error
- ``labels.py``   ``ArchLabels``: how an architecture is shown, as the harness writes it into
                  run manifests and the analysis reads it back
- ``runlog/``     the run-log format: every table of a run directory, its columns and versions
"""
