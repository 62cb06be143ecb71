"""The ZooKeeper-coordinated broker (issue 3): a Coordinator backed by ZooKeeper via kazoo."""
