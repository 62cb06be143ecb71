"""The ``twinbench`` command line.

Subcommands follow the stages of docs/architecture.md ("From a workload file to a figure").
User mistakes (bad arguments, missing files, unreachable services) print one line
``twinbench: error: ...`` and exit 2; a traceback means a bug in twinbench.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from brokers.core.atomic_file import replace_file
from brokers.core.cli import OneLineParser, add_broker_arguments, serve, single_node
from brokers.core.errors import BrokerHalted, KafkaStorageError, UserError
from harness import architectures, services
from harness.architectures.options import Options, split_assignments
from harness.cluster.certs import SECURITY_LEVELS
from harness.cluster.fault_actions import ACTIONS

if TYPE_CHECKING:  # what add_subparsers returns (argparse's own name for it is private)
    from harness.cluster.external import External
    from harness.cluster.layout import Layout
    from harness.cluster.running import ProcessCluster
    from harness.cluster.spec import ClusterSpec
    from harness.remote.ssh import SshFleet

    Subcommands = argparse._SubParsersAction[OneLineParser]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="twinbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    broker = sub.add_parser("broker", help="run one single-node broker in the foreground")
    add_broker_arguments(broker)

    _add_cluster(sub)
    _add_fault(sub)
    _add_run(sub)
    _add_analyze(sub)
    hosts = sub.add_parser("hosts", help="the machines of a multi-host run (hosts file)")
    hosts_sub = hosts.add_subparsers(dest="hosts_command", required=True,
                                     parser_class=OneLineParser)
    check = hosts_sub.add_parser("check", help="one line per host: reachable, same twinbench "
                                 "version, clock offset")
    check.add_argument("file", type=Path, metavar="FILE", help="hosts file (YAML)")
    tune = sub.add_parser("tune", help="the machine settings measurements depend on: show, "
                                       "apply the recommended ones (root), reset")
    tune.add_argument("action", nargs="?", choices=("show", "apply", "reset"), default="show")
    return parser


def options_classes() -> dict[str, type[Options]]:
    """Every architecture's and service's Options class, by name."""
    out: dict[str, type[Options]] = {a.name: a.options for a in architectures.entries()}
    return out | {n: services.get(n).options for n in services.names()}


def _add_options(parser: argparse.ArgumentParser) -> None:
    """``--option NAME.KEY=VALUE``: any architecture's or service's own knob, listed from the
    registries' Options classes."""
    knobs = [f"{name}.{f.name}" for name, options in options_classes().items()
             for f in options.knobs()]
    parser.add_argument("--option", "-o", action="append", default=[], metavar="NAME.KEY=VALUE",
                        help="an option of an architecture or a service, over the workload's "
                        f"(repeatable; known: {', '.join(knobs)})")


def _add_cluster(sub: Subcommands) -> None:
    """``twinbench cluster``: one architecture's brokers in the foreground."""
    arches = architectures.entries()
    cluster = sub.add_parser("cluster", help="start a cluster of one architecture in the "
                                             "foreground")
    cluster.add_argument("--arch", choices=architectures.names(), required=True,
                         help="; ".join(f"{a.name}: {a.summary}" for a in arches))
    cluster.add_argument("--brokers", type=int, default=3, help="broker processes (default 3)")
    cluster.add_argument("--port", type=int, default=0,
                         help="broker i listens on PORT+i (default: free ports)")
    cluster.add_argument("--data-dir", type=Path, default=None,
                         help="keep broker data here (default: a temporary directory)")
    _add_options(cluster)
    cluster.add_argument("--flush", default="os", metavar="every_batch|interval_ms:N|os")
    cluster.add_argument("--metadata-check", choices=("cached", "per_request"), default="cached")
    cluster.add_argument("--num-partitions", type=int, default=1, metavar="N",
                         help="partitions of an auto-created topic (num.partitions; default 1)")
    cluster.add_argument("--auto-create-topics", action=argparse.BooleanOptionalAction,
                         default=True, help="brokers create a topic a client names in "
                         "Metadata (auto.create.topics.enable; default on)")
    cluster.add_argument("--network", choices=("loopback", "netns"), default="loopback",
                         help="netns: each broker in its own network namespace (root), so "
                              "`twinbench fault partition` can cut one off")
    cluster.add_argument("--hosts", type=Path, default=None, metavar="FILE",
                         help="run the brokers on the broker hosts and ZooKeeper on the "
                              "zookeeper hosts of this hosts file, over SSH")
    cluster.add_argument("--rtt-ms", type=float, default=None, metavar="MS",
                         help="with --network netns: round-trip time added between every two "
                              "hosts (brokers; the client and ZooKeeper in the root "
                              "namespace) by a delay line (harness/netdelay; needs iptables)")
    sec = cluster.add_argument_group(
        "security", "every broker's listener: TLS with PEM files, SASL with a credentials file")
    sec.add_argument("--security", choices=tuple(SECURITY_LEVELS), default="none",
                     help="tls or sasl_ssl: secure the cluster with throwaway certificates and "
                     "users made for it (SCRAM-SHA-512 first); prints client_config=FILE, "
                     "librdkafka properties a client can use as they are")
    sec.add_argument("--security-protocol", default="PLAINTEXT",
                     choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
                     help="the brokers' listener protocol (default PLAINTEXT)")
    sec.add_argument("--ssl-certfile", type=Path, metavar="PEM",
                     help="certificate chain every broker presents")
    sec.add_argument("--ssl-keyfile", type=Path, metavar="PEM", help="its private key")
    sec.add_argument("--ssl-ca-location", type=Path, metavar="PEM",
                     help="CA that signed it, trusted by the harness's own clients")
    sec.add_argument("--sasl-mechanisms", default="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                     metavar="M[,M...]", help="mechanisms the brokers offer (default "
                     "%(default)s); the harness's own clients use the first")
    sec.add_argument("--sasl-credentials-file", type=Path, metavar="FILE",
                     help="user=password lines (mode 0600) every broker accepts; the "
                     "harness's own clients log in as the first user")
    cluster.add_argument("--metrics", action="store_true",
                         help="every broker serves Prometheus metrics; also start Prometheus "
                         "(Debian's package) scraping them, print prometheus=HOST:PORT, and "
                         "write a Grafana dashboard into --report-dir (dashboard=FILE)")
    cluster.add_argument("--report-dir", type=Path, default=Path("results/report"),
                         metavar="DIR", help="with --metrics: where the Grafana dashboard "
                         "goes, grafana-dashboard-<arch>.json, kept after the cluster stops "
                         "(default %(default)s, the analysis's report directory)")
    cluster.add_argument("--state", type=Path, default=None, metavar="FILE",
                         help="also write the cluster state file here (default: "
                              "$XDG_RUNTIME_DIR or /tmp, twinbench-<uid>/cluster.json)")


def _add_fault(sub: Subcommands) -> None:
    """``twinbench fault``: one fault into a running cluster."""
    fault = sub.add_parser("fault", help="inject a fault into a running `twinbench cluster`")
    fault.add_argument("action", choices=tuple(ACTIONS),
                       help="kill|pause|resume|restart|partition|heal --broker N; "
                            "stop-zookeeper; start-zookeeper [--server I]; "
                            "kill-zookeeper --server I")
    fault.add_argument("--broker", type=int, default=None, metavar="N", help="broker node id")
    fault.add_argument("--server", type=int, default=None, metavar="I",
                       help="ZooKeeper server index (0-based) in the cluster's ensemble")
    fault.add_argument("--state", type=Path, default=None, metavar="FILE",
                       help="the cluster's state file (default: the newest cluster's)")


def _add_run(sub: Subcommands) -> None:
    """``twinbench run``: a workload file against one or both architectures."""
    run = sub.add_parser("run", help="run a workload file against one or both architectures")
    # No argparse choices: a comma-separated list is valid too; architectures.expand says
    # what is wrong with a bad one, naming every registered architecture.
    run.add_argument("--arch", default=None, metavar="NAME[,NAME...]|all",
                     help=f"the architecture(s) to run: one of "
                          f"{', '.join(architectures.names())}, several comma-separated, or "
                          f"{architectures.ALL} (= {architectures.BOTH}: "
                          f"{', '.join(architectures.compared())}), interleaved session by "
                          "session, one run log each (or --bootstrap)")
    run.add_argument("--bootstrap", default=None, metavar="HOST:PORT[,...]",
                     help="instead of --arch: a Kafka-protocol cluster twinbench did not start "
                          "(needs --label NAME: the run log's architecture)")
    run.add_argument("--client-config", type=Path, default=None, metavar="FILE",
                     help="with --bootstrap: the load client's connection settings (YAML)")
    run.add_argument("--metrics-url", default=None, metavar="[http://]HOST:PORT[/PATH][,...]",
                     help="with --bootstrap: every broker's Prometheus endpoint; sampled into "
                          "metrics.csv, and the coordination counters of twinbench's twins "
                          "read from them")
    run.add_argument("--workload", required=True, metavar="FILE",
                     help="workload file, or the name of a shipped one (paper, smoke, aa...)")
    run.add_argument("--tries", type=int, default=None,
                     help="override the workload's tries")
    run.add_argument("--out", type=Path, default=Path("results/runs"),
                     help="parent of the run directory (default results/runs)")
    run.add_argument("--seed", type=int, default=None,
                     help="seed for topic names (default: random, recorded in the manifest)")
    run.add_argument("--label", default=None, help="label recorded in the run log")
    _add_options(run)
    run.add_argument("--hosts", type=Path, default=None, metavar="FILE",
                     help="run ZooKeeper, the brokers and the load clients on the hosts of "
                          "this hosts file (by their roles), over SSH")
    run.add_argument("--tune", action="store_true",
                     help="set `twinbench tune`'s recommended machine settings for the run and "
                          "restore them afterwards (root; otherwise a warning)")
    progress = run.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None,
                          help="progress bar and summary even when stdout is not a terminal")
    progress.add_argument("--quiet", dest="progress", action="store_false",
                          help="no progress bar or summary table")


def _add_analyze(sub: Subcommands) -> None:
    """``twinbench analyze``: run logs to tables, figures and a report."""
    analyze = sub.add_parser("analyze", help="run logs -> tables, figures and report (PySpark)")
    # Text, not Path: a URI (hdfs://, s3a://, file://) would lose its "//" to pathlib.
    analyze.add_argument("runs", nargs="*", metavar="RUN_DIR",
                         help="run directories or directories holding runs (default "
                              "results/runs); on a Spark cluster a path every executor can "
                              "read, or a URI such as hdfs://... or s3a://...")
    analyze.add_argument("--out", type=Path, default=Path("results/report"),
                         help="report directory (default results/report)")
    analyze.add_argument("--master", default="local[*]", help="Spark master URL")
    analyze.add_argument("--no-figures", action="store_true", help="tables and report only")
    analyze.add_argument("--reference", default=None, metavar="NAME",
                         help="the architecture or external label every ratio is relative to "
                              "(default zk), e.g. kafka-zk to compare kafka-kraft with it")
    analyze.add_argument("--check-regression", action="store_true",
                         help="the inputs are a regression run (make regress): judge head "
                              "against base layer by layer, add it to report.md, and fail "
                              "(exit 1) when a statistic leaves its band")


def cmd_broker(args: argparse.Namespace) -> int:
    return serve(args, single_node)


def cmd_cluster(args: argparse.Namespace) -> int:
    """Start a cluster, print where it is, then watch it until SIGINT/SIGTERM: a broker that
    exits is reported as ``exited=<id> code=<status>`` and the others keep serving; faults
    arrive from ``twinbench fault`` over the control socket (harness/cluster/control_socket.py)."""

    from brokers.core.config import FlushPolicy
    from harness.cluster.spec import ClusterSpec

    FlushPolicy.parse(args.flush)  # validate before starting anything
    if args.metrics:
        try:
            args.report_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--report-dir {args.report_dir}: {exc.strerror or exc}") from None
    throwaway = _throwaway_security(args)
    spec = ClusterSpec(
        arch=args.arch, brokers=args.brokers, port=args.port, data_dir=args.data_dir,
        options=split_assignments(args.option), flush=args.flush,
        metadata_check=args.metadata_check, network=args.network, rtt_ms=args.rtt_ms,
        num_partitions=args.num_partitions,
        auto_create_topics=args.auto_create_topics,
        security_protocol=args.security_protocol, ssl_certfile=args.ssl_certfile,
        ssl_keyfile=args.ssl_keyfile, ssl_ca_location=args.ssl_ca_location,
        sasl_mechanisms=tuple(m.strip().upper() for m in args.sasl_mechanisms.split(",")
                              if m.strip()),
        sasl_credentials_file=args.sasl_credentials_file, metrics=args.metrics,
    )
    try:
        return _serve_cluster(args, spec)
    finally:
        if throwaway is not None:
            shutil.rmtree(throwaway, ignore_errors=True)


def _throwaway_security(args: argparse.Namespace) -> Path | None:
    """``--security tls|sasl_ssl``: certificates and users made for this cluster, written into
    ``args`` as if given explicitly; returns their directory (removed when the cluster
    stops), None for ``--security none``."""
    if args.security == "none":
        return None
    given = [name for name in ("ssl_certfile", "ssl_keyfile", "ssl_ca_location",
                               "sasl_credentials_file") if getattr(args, name) is not None]
    if given or args.security_protocol != "PLAINTEXT":
        raise UserError("--security makes its own certificates and users; drop "
                        "--security-protocol and the --ssl-*/--sasl-* files")
    from harness.cluster.certs import cluster_settings, make_run_security

    directory = Path(tempfile.mkdtemp(prefix="twinbench-security-"))
    settings = cluster_settings(args.security, make_run_security(directory))
    settings["sasl_mechanisms"] = ",".join(settings["sasl_mechanisms"])
    for name, value in settings.items():
        setattr(args, name, value)
    return directory


def _serve_cluster(args: argparse.Namespace, spec: ClusterSpec) -> int:
    """The cluster of ``spec`` in the foreground, until SIGINT/SIGTERM."""
    import signal

    from harness.cluster.running import ProcessCluster

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    lock = threading.Lock()  # the watch loop and the control thread share the cluster
    with contextlib.ExitStack() as stack:
        cluster = ProcessCluster(spec, _hosts_layout(args, stack, stop))
        if args.hosts is not None and args.data_dir is not None:
            cluster.collect_to = args.data_dir / "hosts"
        stack.enter_context(cluster)
        _watch_cluster(args, cluster, stop, lock)
    return 0


def _hosts_layout(args: argparse.Namespace, stack: contextlib.ExitStack, stop: threading.Event
                  ) -> Layout:
    """``--hosts``: the fleet of SSH connections (closed with ``stack``) and the layout on it;
    a host that vanishes ends the command (``stop``). Without it: everything here."""
    from harness.cluster.layout import LOCAL_LAYOUT

    if args.hosts is None:
        return LOCAL_LAYOUT
    from harness.hosts import load_hosts
    from harness.remote.deploy import cluster_layout, open_fleet

    fleet = stack.enter_context(open_fleet(load_hosts(args.hosts), [args.arch], clients=False))
    fleet.on_lost(lambda _lost: stop.set())
    stack.callback(_raise_lost, fleet)
    for machine in fleet.machines.values():
        m = machine.manifest()
        print(f"host={m['name']} address={m['address']} clock_offset_ms={m['clock_offset_ms']} "
              f"rtt_ms={m['rtt_ms']}", flush=True)
    return cluster_layout(fleet, args.arch)


def _raise_lost(fleet: SshFleet) -> None:
    if fleet.lost is not None:
        raise fleet.lost


def _watch_cluster(args: argparse.Namespace, cluster: ProcessCluster, stop: threading.Event,
                   lock: threading.Lock) -> None:
    """Publish the cluster, serve faults, report exits, until ``stop``."""
    import os

    from harness.cluster import fault_actions
    from harness.cluster.control_socket import ControlServer, default_state, socket_path

    spec = cluster.spec
    own_state = cluster.root / "cluster.json"
    shared_state = args.state or default_state()
    control = socket_path(cluster.root)

    def publish() -> None:
        for path in (own_state, shared_state):
            cluster.write_state(path, pid=os.getpid(), control=str(control),
                                state_file=str(own_state))

    def on_request(message: dict) -> str:
        with lock:
            line = fault_actions.handle(cluster, message)
            publish()
        print(line, flush=True)
        return line

    server = ControlServer(control, on_request).start()
    prometheus = None
    try:
        publish()
        for name, running in cluster.services.items():
            print(f"{name}={running.endpoint}", flush=True)
        print(f"bootstrap={cluster.bootstrap}", flush=True)
        if spec.protocol.value != "PLAINTEXT":
            properties = cluster.root / "client.properties"
            replace_file(properties, "".join(
                f"{k}={v}\n" for k, v in
                spec.client_security().librdkafka_properties().items()),
                sync_file=False, sync_dir=False, mode=0o600)
            print(f"client_config={properties}", flush=True)
        if args.metrics:
            from harness.grafana import write_dashboard
            from harness.prometheus import PrometheusUnavailable, start_prometheus

            # What `twinbench run --bootstrap ... --metrics-url` takes to read this cluster.
            print(f"metrics={','.join(b.metrics for b in cluster.brokers)}", flush=True)
            try:
                prometheus = start_prometheus([b.metrics for b in cluster.brokers], args.arch,
                                              cluster.root / "prometheus")
            except PrometheusUnavailable as exc:
                # The brokers' endpoints serve anyway (metrics= in the state file): one line,
                # and the cluster stays up without a Prometheus of its own.
                print(f"twinbench: warning: {exc}; not starting Prometheus", file=sys.stderr,
                      flush=True)
            else:
                print(f"prometheus={prometheus.address}", flush=True)
            dashboard = write_dashboard(
                args.report_dir / f"grafana-dashboard-{args.arch}.json", [args.arch])
            print(f"dashboard={dashboard}", flush=True)
        print(f"state={own_state}", flush=True)
        while not stop.wait(0.2):
            with lock:
                exits = cluster.poll_exits()
                if exits:
                    publish()
            for node, code in exits:
                print(f"exited={node} code={code}", flush=True)
    finally:
        server.close()
        if prometheus is not None:
            prometheus.stop()
        # The shared copy points at the newest cluster: remove it only if it is ours.
        with contextlib.suppress(OSError, ValueError):
            if json.loads(shared_state.read_text("utf-8")).get("pid") == os.getpid():
                shared_state.unlink()


def cmd_fault(args: argparse.Namespace) -> int:
    from harness.cluster.control_socket import default_state, load_state, request

    target = ACTIONS[args.action].target
    if target == "broker" and args.broker is None:
        raise UserError(f"{args.action} needs --broker N")
    if target == "server" and args.server is None:
        raise UserError(f"{args.action} needs --server I")
    path = args.state or default_state()
    state = load_state(path)
    if target == "broker":
        ids = [b["node_id"] for b in state.get("brokers", [])]
        if args.broker not in ids:
            raise UserError(f"no broker {args.broker} in the cluster of {path} (brokers: "
                            f"{', '.join(map(str, ids))})")
    answer = request(state, {"action": args.action, "broker": args.broker,
                             "server": args.server})
    if not answer.get("ok"):
        raise UserError(str(answer.get("error", "the cluster refused the fault")))
    print(answer.get("line", ""))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """``twinbench run``: check the arguments, then run the workload on each architecture."""
    from harness.driver import RunOptions, run
    from harness.workload import load_workload

    if args.tries is not None and args.tries < 1:
        raise UserError("--tries must be at least 1")
    external = _external(args)
    options = split_assignments(args.option)
    if external is None:
        arches = architectures.expand(args.arch)
        wanted = {*arches, *(s for a in arches for s in architectures.get(a).services)}
        for name in options:
            if name not in wanted:
                raise UserError(f"--option {name}.*: the run measures no {name} (it measures "
                                f"{', '.join(sorted(wanted))})")
        classes = options_classes()
        for name, block in options.items():
            classes[name].parse(block, name)  # a bad value is one line, before anything runs
    workload = load_workload(args.workload)  # validated before anything starts
    hosts = None
    if args.hosts is not None:
        from harness.hosts import load_hosts

        hosts = load_hosts(args.hosts)
    outcome = run(RunOptions(
        arch=args.arch or "", workload=workload, out=args.out, tries=args.tries, seed=args.seed,
        label=args.label, options=options,
        progress=args.progress, external=external, hosts=hosts, tune=args.tune,
    ))
    return outcome.exit_code


def cmd_tune(args: argparse.Namespace) -> int:
    from harness import conditions

    if args.action == "apply":
        for path, old in conditions.apply().items():
            print(f"{path}: {old} -> tuned")
    elif args.action == "reset":
        for path, value in conditions.reset().items():
            print(f"{path}: restored {value}")
    values = conditions.read_knobs()
    for line in conditions.describe(values):
        print(line)
    print(f"tuned={'yes' if conditions.tuned(values) else 'no'}")
    return 0


def _external(args: argparse.Namespace) -> External | None:
    """--bootstrap/--label/--client-config, or None for a run on a twin (--arch)."""
    from harness.cluster.external import External, load_client_config

    if args.bootstrap is None:
        if args.arch is None:
            raise UserError("give --arch (a twin, or both) or --bootstrap (a cluster twinbench "
                            "did not start)")
        if args.client_config is not None:
            raise UserError("--client-config only applies with --bootstrap")
        if args.metrics_url is not None:
            raise UserError("--metrics-url only applies with --bootstrap (a twin's metrics: the "
                            "workload's metrics: true)")
        return None
    if args.arch is not None:
        raise UserError("--bootstrap runs against a cluster twinbench did not start; drop "
                        "--arch")
    if args.option:
        raise UserError("--option sets architectures twinbench starts, not --bootstrap")
    if not args.label:
        raise UserError("--bootstrap needs --label NAME: what to call the external cluster "
                        "in the run log and the report (e.g. kafka-kraft)")
    client = load_client_config(args.client_config) if args.client_config else {}
    metrics = External.metrics_urls(args.metrics_url) if args.metrics_url is not None else ()
    return External(args.label, args.bootstrap, client,
                    str(args.client_config) if args.client_config else None, metrics)


def cmd_hosts(args: argparse.Namespace) -> int:
    import asyncio

    from harness.hosts import check_hosts, load_hosts

    hosts = load_hosts(args.file)
    statuses = asyncio.run(check_hosts(hosts))
    for status in statuses:
        print(status.line())
    return 0 if all(s.ok for s in statuses) else 1


def cmd_analyze(args: argparse.Namespace) -> int:
    from spark_analysis.cli import analyze_command

    return analyze_command(args)


COMMANDS = {"broker": cmd_broker, "cluster": cmd_cluster, "fault": cmd_fault,
            "run": cmd_run, "analyze": cmd_analyze, "hosts": cmd_hosts, "tune": cmd_tune}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        if list(argv if argv is not None else sys.argv[1:]) == ["--version"]:
            # What `twinbench hosts check` compares across hosts.
            from harness.hosts import local_version

            print(local_version())
            return 0
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except (UserError, OSError) as exc:
        # OSError here is the environment (port in use, permissions, disk full), not a bug.
        _where(exc)
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2
    except (BrokerHalted, KafkaStorageError) as exc:
        # A broker's data directory failed (at start-up or while serving): one line, exit 1.
        _where(exc)
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _where(exc: BaseException) -> None:
    """With TWINBENCH_TRACEBACK=1 in the environment, the traceback behind a one-line error:
    for reports of an error whose cause the line does not show."""
    if os.environ.get("TWINBENCH_TRACEBACK") == "1":
        traceback.print_exception(exc, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
