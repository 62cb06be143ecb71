"""shared-dir: an architecture defined in the tests, to hold the registry to its promise.

A third coordination design, deliberately minimal: the brokers coordinate through a directory
they all share (one machine). Membership is a file per broker, a topic a file created once
(``O_EXCL``: the directory is the arbiter), a partition's leader a fixed function of the
members, a group's coordinator likewise, committed offsets in the coordinating broker, producer
ids striped by node id. No failure detection and no replication: it is a plugin proof, not a
design to measure.

Everything it is lives here, and nothing outside this package names it: the broker program
(``__main__.py``, brokers/core's options plus ``--shared-dir``), its Coordinator
(``coordinator.py``, on the core's single-node one) and its registry entry (``entry.py``),
registered by the environment (``TWINBENCH_ARCHITECTURES=shared-dir=tests.support.
shared_dir_arch.entry:SHARED_DIR``). tests/integration/test_architecture_plugin.py runs the
smoke workload on it through `twinbench run` and analyses the run.

Layout:
- ``coordinator.py``  SharedDirCoordinator
- ``__main__.py``     ``python -m tests.support.shared_dir_arch``: one broker
- ``entry.py``        its Architecture entry: launch, options, coordination counters, labels
"""
