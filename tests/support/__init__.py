"""What the test tiers share: helpers, fake brokers, and programs tests run as child processes.

Every module here is ordinary, linted code; a test never embeds a program in a string.

Helpers::

    brokers.py        start real broker processes on free ports (readiness by listening=)
    clusters.py       the contract suite's clusters: single, zk and dsbs, as users start them
    ops.py            Kafka operations tests repeat (create, produce, fetch, leaders, eventually)
    batches.py        an independent RecordBatch v2 builder/parser for storage tests
    zk_fixtures.py    a local ZooKeeper (or ensemble) for a module or a test, waits, pid checks
    faulty_fs.py      filesystems that fail on demand: a full tmpfs, an ext4 that shuts down
    usage.py          a broker process's memory and descriptors while an attack runs
    security.py       throwaway CA and certificates (trustme), SASL users, client settings
    cli.py            the twinbench command as a bounded child process, output captured
    sshd.py           test hosts: network namespaces running OpenSSH, with keys made per test

Fake brokers (test doubles for the load client, never for the brokers under test)::

    memory_broker.py  MemoryCluster: in-memory partition logs behind N loopback listeners,
                      with injectable leader moves, lost and duplicated batches
    null_broker.py    a forked server that acknowledges every Produce: the client's ceiling

Child programs (``python -m tests.support.NAME ...``, killed by the test that starts them)::

    storage_writer.py appends deterministic batches under every_batch until SIGKILLed
    zk_member.py      one ZkCoordinator registered in ZooKeeper
    dsbs_member.py    one DsbsCoordinator gossiping on loopback

The regression's selftest (``make regress-selftest``; the plants are harness/regression/plants)::

    regress_selftest.py  A/A with this tree as its own base (no false alarm, controls caught),
                         then a subtle plant at twice the measured dsbs cost band (caught)
"""
