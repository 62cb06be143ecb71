"""The nemesis: seeded fault schedules against a real cluster, and a checker of what clients saw.

In the manner of Jepsen's queue and Kafka workloads, a run starts a cluster of real broker
processes, each in its own network namespace, writes numbered records with an acks=all
producer and consumes them with a committing consumer group, while a schedule drawn from a
seed kills, pauses, resumes and restarts brokers and cuts them off, one way or both. Then it
heals everything, reads every partition back, and checks what the clients saw.

Layout:

* ``schedule.py``: the fault schedule of a seed (pure; the same seed gives the same steps).
* ``checker.py``: the checks over what the clients recorded (pure): acknowledged records lost,
  reordered or rewritten, records a group consumed again below an acknowledged commit,
  committed offsets seen moving back, two leaders shown for one leader epoch.
* ``run.py``: one run: the cluster, the clients, the schedule applied, the history recorded.
* ``__main__.py``: ``python -m harness.nemesis``: seeds x architectures, a table and a
  versioned result file (``make nemesis``).

Every failure names its seed and prints its schedule, so it replays with ``--seeds <seed>``.
"""
