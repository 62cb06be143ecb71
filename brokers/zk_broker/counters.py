"""ZkCounters: what the zk coordinator counts, as its part of the counters contract
(brokers/core/counters.py).

The bridge (bridge.py) counts requests as it makes them, the direct session (direct.py) its
connections, the coordinator its session and election events; ``ZkCoordinator.counters()``
gathers those tallies into one snapshot of this class. ``coordination_ops`` equals
``zk_requests``: a request to ZooKeeper is this twin's unit of coordination.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.counters import CoordinatorCounters, gauge, total


@dataclass(kw_only=True)
class ZkCounters(CoordinatorCounters):
    zk_requests: int = total(
        "ZooKeeper requests this broker made, through kazoo or the direct session (a multi is "
        "one)")
    zk_reads: int = total("of which getData, getChildren and exists")
    zk_writes: int = total("of which create, setData and delete")
    zk_other: int = total("of which any other single operation (sync, ...)")
    zk_multi: int = total("of which multis (transactions)")
    zk_direct_requests: int = total("of which carried by the direct (data path) session")
    zk_request_timeouts: int = total("kazoo requests that outlived the request timeout")
    zk_watch_events: int = total("watch notifications delivered to the coordinator")
    zk_direct_connects: int = total("times the direct session (re)connected")
    zk_direct_disconnects: int = total("times the direct session lost its connection")
    zk_session_suspended: int = total("kazoo session SUSPENDED transitions")
    zk_session_lost: int = total("kazoo session LOST transitions (the session expired)")
    zk_reconnects: int = total("times kazoo reported the session CONNECTED again")
    controller_elections_won: int = total("times this broker became the controller")
    is_controller: float = gauge("1 while this broker is the controller, else 0")
