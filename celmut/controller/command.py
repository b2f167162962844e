"""``celmut controller``: apply mutateExisting policies (and PodMutations with ``restartPolicy:
immediate``) to what already exists in the cluster.

Work is keyed by target and de-duplicated; writes are patches guarded by resourceVersion and
rate-limited (``--rate``). ``--dry-run`` does one pass, writes nothing and reports every target with
the exact patch that would be applied (JSON with ``--report FILE``, a table on a terminal); exit 1
when a target's policies failed. The dry-run report is streamed as targets finish, in the order they
are processed, one target per line: ``{"targets": [...], "summary": {...}}``. Otherwise the
controller runs until interrupted, serving ``/healthz``, ``/readyz`` and ``/metrics`` over TLS on
``--metrics-port``. With ``CELMUT_TLS_SECRET`` (plus ``CELMUT_TLS_SERVICE`` and ``POD_NAMESPACE``)
in its environment, as the Helm chart sets them, the leader also keeps the webhook's certificates
and CA bundle valid.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import tempfile
import threading
from pathlib import Path

from celmut import crashes
from celmut.controller import webhook_flags
from celmut.service import cluster_data_flags, flags

log = logging.getLogger("celmut.controller")

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$")


def duration(text: str) -> float:
    """Seconds from ``90``, ``45s``, ``10m``, ``1h30m`` (as kubectl and Go durations write them)."""
    try:
        return float(text)
    except ValueError:
        pass
    match = _DURATION.match(text.strip())
    if not text.strip() or match is None:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}; use e.g. 30s, 10m or 1h")
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds or 0)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("controller", help="mutate existing resources in the background", description=__doc__)
    flags.add_policies(p)
    flags.add_skip_unsupported(p)
    p.add_argument("--from-cluster", action="store_true", help="also load policies from the cluster")
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig (default: in-cluster, else ~/.kube/config)")
    p.add_argument("--leader-elect", action="store_true", help="only the holder of a Lease writes")
    p.add_argument("--lease-namespace", default="celmut", help="namespace of the leader Lease (default celmut)")
    p.add_argument("--lease-name", default="celmut-controller", help="name of the leader Lease")
    p.add_argument("--dry-run", action="store_true", help="one pass that writes nothing; report what would change")
    p.add_argument(
        "--rate",
        type=float,
        default=100.0,
        metavar="PER_SECOND",
        help="writes per second, patches and report writes together (default 100)",
    )
    p.add_argument("--scan-interval", type=duration, default=3600.0, metavar="DURATION", help="periodic scan (1h)")
    p.add_argument("--report", metavar="FILE", help="write the JSON report here ('-' for stdout)")
    p.add_argument(
        "--workers", type=int, default=0, help="reconcile threads (default: from --rate, 2 up to 100/s, ~1 per 50/s)"
    )
    p.add_argument("--evictions-per-minute", type=float, default=60.0, help="pod replacement rate (default 60)")
    p.add_argument(
        "--allow-immediate-restart",
        action="store_true",
        help="let PodMutations with restartPolicy immediate evict running pods that do not match (default: off, "
        "as in CAST AI, where the value is reserved for future use; the PodMutation's status says which)",
    )
    p.add_argument("--metrics-port", type=int, default=8444, help="TLS port for health and metrics (0: off)")
    p.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of the status endpoint (default 127.0.0.1; the chart passes 0.0.0.0 for the kubelet's probes)",
    )
    flags.add_opt_out_label(p, effect="are left alone")
    p.add_argument("--tls-cert", metavar="FILE", help="certificate for the status endpoint (default: self-signed)")
    p.add_argument("--tls-key", metavar="FILE", help="key for the status endpoint")
    flags.add_cluster_policies(
        p,
        admission_policies="load the cluster's MutatingAdmissionPolicies (an API server with the "
        "MutatingAdmissionPolicy plugin applies them itself)",
    )
    p.add_argument(
        "--kyverno-exceptions-namespace",
        default="",
        metavar="NS",
        help="with --from-cluster: while Kyverno is detected, keep in NS one Kyverno PolicyException per "
        "MutatingPolicy celmut serves, so that Kyverno skips it (Kyverno must have policy exceptions on and "
        "read NS); default: none",
    )
    webhook_flags.add_flags(p)
    flags.add_preset_failure_policy(p)
    _add_report_flags(p)
    flags.add_log_level(p)
    flags.add_engine_and_http(p)
    cluster_data_flags.add_image_data(p)
    p.set_defaults(run=run)


def _add_report_flags(p: argparse.ArgumentParser) -> None:
    """The background PolicyReports (``controller/report_loop.py``)."""
    p.add_argument(
        "--background-reports",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write a wgpolicyk8s.io PolicyReport per resource the policies match, as Kyverno's background "
        "scan does (default on; written only where the report CRDs are served)",
    )
    p.add_argument(
        "--admission-reports",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="report the policies the background scan does not run from the admissions the controller "
        "sees (process: admission review; default on)",
    )
    p.add_argument(
        "--report-interval", type=duration, default=2.0, metavar="DURATION", help="report writes coalesce (2s)"
    )
    p.add_argument(
        "--report-max-results", type=int, default=1000, metavar="N", help="results per report (Kyverno's 1000)"
    )
    _add_event_flags(p)


def _omitted(text: str) -> frozenset[str]:
    from celmut.kube.event_recorder import parse_omitted

    try:
        return parse_omitted(text)
    except ValueError as ex:
        raise argparse.ArgumentTypeError(str(ex)) from None


def _add_event_flags(p: argparse.ArgumentParser) -> None:
    """The controller's Events, with Kyverno's flag names and values."""
    p.add_argument(
        "--events",
        choices=("per-object", "aggregated"),
        default="per-object",
        help="per-object (the default, as Kyverno posts them): each Event on its own object — a PolicyViolation "
        "on each resource a scan finds failing and one on the policy — kept bounded as client-go's "
        "EventCorrelator keeps them; aggregated (for very large clusters): only the policy's Events, one per "
        "policy, reason and namespace with a count",
    )
    p.add_argument(
        "--omitEvents",
        dest="omit_events",
        type=_omitted,
        default="PolicyApplied,PolicySkipped",
        metavar="REASONS",
        help="Events not to post, comma-separated: PolicyViolation, PolicyApplied, PolicyError, PolicySkipped "
        "(default PolicyApplied,PolicySkipped, as Kyverno's chart; an empty value posts them all)",
    )
    p.add_argument(
        "--maxQueuedEvents",
        dest="max_queued_events",
        type=int,
        default=1000,
        metavar="N",
        help="Events waiting to be written beyond which new ones are dropped and counted (default 1000, Kyverno's)",
    )


def run(args: argparse.Namespace) -> int:
    from celmut.service.settings import from_flags

    service = from_flags(args)
    if service is None:
        return 2
    if not args.policies and not args.from_cluster:
        print("error: give --policies PATH and/or --from-cluster", file=sys.stderr)
        return 2
    if args.policies:  # unusable policy files stop the start (exit 2), as they do for serve
        from celmut.compile.pipeline import compile_paths

        compilation = compile_paths(*args.policies, skip_unsupported=args.skip_unsupported)
        if compilation.errors:
            print(f"error: cannot start: {flags.policies_problem(compilation.errors)}", file=sys.stderr)
            return 2
    from celmut.controller.report_loop import ReportingConfig
    from celmut.controller.run import Controller, ControllerConfig
    from celmut.kube.client import Cluster, ClusterError
    from celmut.kube.tls_manager import TlsConfig

    try:  # self-managed webhook TLS: CELMUT_TLS_SECRET etc., as the Helm chart and `celmut manifests` set
        tls = TlsConfig.from_environment(os.environ)
        webhook_rules = webhook_flags.rules_config(args)
        policy_validation = webhook_flags.policy_validation_config(args)
        tls = webhook_flags.tls_for_url(tls, webhook_rules)
        cluster = Cluster.connect(service.kubeconfig)
    except (ValueError, ClusterError) as ex:
        print(f"error: {ex}", file=sys.stderr)
        return 2
    config = ControllerConfig(
        service=service,
        tls=tls,
        dry_run=args.dry_run,
        rate=args.rate,
        scan_interval=args.scan_interval,
        workers=args.workers,
        evictions_per_minute=args.evictions_per_minute,
        allow_immediate_restart=args.allow_immediate_restart,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        kyverno_exceptions_namespace=args.kyverno_exceptions_namespace,
        webhook_rules=webhook_rules,
        policy_validation=policy_validation,
        events=args.events,
        omit_events=args.omit_events,
        max_queued_events=args.max_queued_events,
        reports=ReportingConfig(
            background=args.background_reports,
            admission=args.admission_reports,
            interval=args.report_interval,
            max_results=args.report_max_results,
        ),
    )
    controller = Controller(config, cluster)
    if args.dry_run:
        return _dry_run(controller, args.report)
    return _run_forever(controller, args)


def _dry_run(controller: object, report: str | None) -> int:
    """One pass, its report streamed as targets finish: to a temporary file next to ``report``,
    renamed into place once the pass is complete (a failed pass leaves no half report), or to stdout
    ('-'); the table (no ``--report``, or a terminal) is printed at the end."""
    from celmut.controller.report import Progress, ReportWriter
    from celmut.controller.run import Controller
    from celmut.kube.client import ClusterError

    assert isinstance(controller, Controller)
    partial = None
    if report and report != "-":
        folder = os.path.dirname(os.path.abspath(report))
        partial = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, suffix=".partial", delete=False)  # noqa: SIM115
    json_out = sys.stdout if report == "-" else partial
    table_out = sys.stdout if not report or (sys.stdout.isatty() and report != "-") else None
    writer = ReportWriter(json_out, table_out)
    try:
        try:
            controller.run_once(Progress(), writer)
        finally:
            controller.stop()
    except ClusterError as ex:
        print(f"error: {ex}", file=sys.stderr)
        if partial is not None:
            partial.close()
            os.unlink(partial.name)
        return 2
    writer.close()
    if partial is not None and report:
        partial.close()
        os.replace(partial.name, report)
    return 1 if writer.failed() else 0


def _run_forever(controller: object, args: argparse.Namespace) -> int:
    from celmut.controller.run import Controller
    from celmut.controller.status import serve_status, status_app

    assert isinstance(controller, Controller)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    deaths = crashes.install(on_death=stop.set)  # a dead background thread stops the controller: exit 70

    def not_ready() -> str:
        return deaths.failure() or controller.not_ready()

    controller.start()
    status = None
    if args.metrics_port:
        cert, key = args.tls_cert, args.tls_key
        if not cert or not key:
            from celmut.kube import certs

            material = certs.self_signed(Path(tempfile.mkdtemp(prefix="celmut-controller-tls-")), ["localhost"])
            cert, key = str(material.cert_file), str(material.key_file)
        status = serve_status(
            status_app(controller.metrics, not_ready, deaths.failure), args.metrics_host, args.metrics_port, cert, key
        )
    log.info("controller running", extra={"identity": controller.config.identity, "dryRun": False})
    if sys.stderr.isatty():
        threading.Thread(target=_show_progress, args=(controller, stop), daemon=True).start()
    stop.wait()
    controller.stop()
    if status is not None:
        status.stop()
    if args.report:
        controller.report.write(args.report)
    return crashes.EXIT_CODE if deaths.failure() else 0


def _show_progress(controller: object, stop: threading.Event) -> None:
    """A progress bar for each scan while it is being worked off (interactive runs only)."""
    from celmut.controller.report import Progress
    from celmut.controller.run import Controller

    assert isinstance(controller, Controller)
    progress, shown = Progress(), (0, 0)
    while not stop.wait(0.2):
        done, total = controller.scan_progress()
        if total and (done, total) != shown:
            progress.update(done, total, final=done >= total)
            shown = (done, total)
