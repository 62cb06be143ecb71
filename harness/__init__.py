"""The harness: the ``twinbench`` CLI, ZooKeeper provisioning, cluster launcher, runs."""
