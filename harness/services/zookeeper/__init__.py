"""ZooKeeper provisioning: find or start the real ZooKeeper the zk broker is coordinated by.

Order (first match wins):

1. an address the user gives (``--option zookeeper.connect=HOST:PORT[,HOST:PORT...]`` or
   ``ZOOKEEPER_CONNECT``);
2. a local server (or a 3-node ensemble on loopback) started from the ZooKeeper jars: Debian's
   ``zookeeper`` package (``/usr/share/java/zookeeper.jar``) or a release under
   ``ZOOKEEPER_HOME``, with a generated config bound to 127.0.0.1 on free ports;
3. a testcontainers ``zookeeper`` container, only when a Docker engine answers (cleaned up by
   the harness itself: labelled with its PID, swept when that process died);
4. otherwise ``ZooKeeperUnavailable``: one message saying how to get ZooKeeper.

Readiness is polled, never slept for: ``ruok`` must answer ``imok`` *and* ``srvr`` must report a
``Mode`` (a server answers ``imok`` some 100 ms before it serves requests; during that window
``srvr`` says "not currently serving requests"). Servers are ``harness.cluster.processes``
ManagedProcesses: stopped by PID (SIGTERM, a bounded wait, then SIGKILL), and stopped at exit if
this process forgot them, so a crashed run does not leave JVMs behind on a shared machine.

Coordination cost is read from the servers' four-letter-word counters (``mntr``/``srvr``);
``ZooKeeperHandle.request_counters()`` sums them over the ensemble for a run log.

Layout (one concern per module; everything below is importable from
``harness.services.zookeeper``)::

    errors.py       ZooKeeperUnavailable, ZooKeeperStartError, HOW_TO_GET_ZOOKEEPER
    four_letter.py  four-letter words: four_letter, mntr/srvr and their parsers, server_mode
    discovery.py    finding Java and the ZooKeeper jars (find_java, find_classpath)
    config.py       ZooKeeperConfig (the knobs), Member, render_config (zoo.cfg text; pure)
    ensemble.py     servers as ChildProcesses of machines (here, or hosts over SSH):
                    ZooKeeperEnsemble, ZooKeeperServer
    provision.py    provision()/provisioned() in the order above, provision_on() (one server
                    per zookeeper host of a hosts file), ZooKeeperHandle,
                    parse_connect_string, docker_engine_answers, sweep_stale_containers
    build_image.sh  the container image from Debian's zookeeper package, for engines that
                    reach no registry (run by harness/setup_system.sh when it is absent)
"""

from harness.cluster.machines import free_ports
from harness.services.zookeeper.config import LOOPBACK, Member, ZooKeeperConfig, render_config
from harness.services.zookeeper.discovery import (
    DEBIAN_JAVA_DIR,
    MAIN_CLASS,
    find_classpath,
    find_java,
)
from harness.services.zookeeper.ensemble import ZooKeeperEnsemble, ZooKeeperServer
from harness.services.zookeeper.errors import (
    HOW_TO_GET_ZOOKEEPER,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
)
from harness.services.zookeeper.four_letter import (
    SERVING_MODES,
    four_letter,
    mntr,
    parse_mntr,
    parse_srvr,
    server_mode,
    srvr,
)
from harness.services.zookeeper.provision import (
    CONTAINER_IMAGE,
    OWNER_LABEL,
    ZooKeeperHandle,
    docker_engine_answers,
    parse_connect_string,
    provision,
    provision_on,
    provisioned,
    sweep_stale_containers,
)

__all__ = [
    "CONTAINER_IMAGE",
    "DEBIAN_JAVA_DIR",
    "HOW_TO_GET_ZOOKEEPER",
    "LOOPBACK",
    "MAIN_CLASS",
    "OWNER_LABEL",
    "SERVING_MODES",
    "Member",
    "ZooKeeperConfig",
    "ZooKeeperEnsemble",
    "ZooKeeperHandle",
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "ZooKeeperUnavailable",
    "docker_engine_answers",
    "find_classpath",
    "find_java",
    "four_letter",
    "free_ports",
    "mntr",
    "parse_connect_string",
    "parse_mntr",
    "parse_srvr",
    "provision",
    "provision_on",
    "provisioned",
    "render_config",
    "server_mode",
    "srvr",
    "sweep_stale_containers",
]
