"""Multi-host runs: the twins and the load clients deployed over SSH (asyncssh) onto the hosts
of a hosts file (harness/hosts.py), for `twinbench cluster --hosts` and `twinbench run --hosts`.

Layout (the driver's side first, then what runs on the hosts)::

    ssh.py       SshFleet (one connection per host, on an event loop of its own thread;
                 keepalives; HostLost when one vanishes), RemoteMachine (a host as a
                 harness.cluster.machines.Machine: processes, files by SFTP, free ports, clock
                 offset), RemoteProcess (a service under a keeper, as a ChildProcess)
    deploy.py    which hosts a command needs (the roles check), the fleet over them, each
                 cluster's Layout
    part.py      RemotePart: a load worker on a client host as one part of the load
                 (harness/driver/load.py)
    channel.py   JSON lines between the driver and the remote programs; heartbeat and watchdog
    keeper.py    [remote] runs one service (broker, ZooKeeper server); stops it by PID when
                 told, when the session ends, or when the driver falls silent
    worker.py    [remote] runs one part of the load (producers and consumers) per request
    probe.py     [remote] free ports, a clock echo, where java and the ZooKeeper jars are

Nothing started on a host outlives the run there: every remote program ends at end of input
(the driver's process died) or after the hosts file's ``watchdog_s`` without a heartbeat (the
driver's host or the link vanished), and stops what it started by PID first
(harness/remote/channel.py).
"""
