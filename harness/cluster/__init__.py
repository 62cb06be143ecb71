"""Cluster mechanics: what a cluster is, where its processes run, and how they are started,
probed, broken and stopped. `twinbench cluster`, `twinbench fault`, the driver and the tests all
act on clusters through here.

Layout:
- ``spec.py``             ClusterSpec: a cluster before it starts, every check done
- ``layout.py``           Layout: which machine runs each process
- ``running.py``          ProcessCluster: services, then brokers; readiness; faults; stop by PID
- ``processes.py``        child processes: start, wait for a readiness line or probe, stop by
                          PID, the atexit safety net
- ``machines.py``         where a process runs and its files are: this machine or a host
                          (harness/remote/)
- ``netns.py``            one network namespace per broker (``--network netns``), for partitions
- ``fault_actions.py``    the fault vocabulary (kill, pause, partition, a service's own) and
                          what each one does to a ProcessCluster
- ``control_socket.py``   how ``twinbench fault`` reaches a running cluster: state file, Unix
                          socket
- ``external.py``         `twinbench run --bootstrap`: a cluster twinbench did not start
- ``certs.py``            throwaway CA, certificates and SASL users for a run; security levels
- ``kafka_probe.py``      a blocking Kafka-protocol probe for readiness checks and tests
- ``client_security.py``  a client's side of a TLS/SASL listener
"""
