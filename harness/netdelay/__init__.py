"""A network delay for clusters in network namespaces: round-trip time on one machine.

This kernel has no netem, so the delay is a netfilter queue: iptables rules in each broker's
namespace queue the packets arriving there, the kernel keeps them, and one small process tells
it when each may go on (the packets never cross into user space, only their ids do).
``twinbench run`` with a workload's ``rtt_ms`` and ``twinbench cluster --rtt-ms`` use it
through ``harness.cluster``; ``python -m harness.bench.perf_delay`` measures what it adds.

Layout::

    nfqueue.py  the kernel's netfilter queue messages: bind, read packet ids, batch verdicts
                (sans-IO)
    line.py     DelayLine: per queue a FIFO of (due, id); what is due when (sans-IO), and the
                stats: packets, time held, lateness, packets that bypassed it
    daemon.py   the process: one socket per namespace, select until the next due time,
                config on SIGHUP, stats on SIGUSR1 (``python -m harness.netdelay.daemon``)
    control.py  NetworkDelay: the rules (which source waits how long), the daemon as a
                ManagedProcess, set_rtt, stats and their change over a session
"""
