"""``celmut serve``: run the mutating admission webhook over TLS.

Policies come from ``--policies`` files and directories (reloaded when they change; a broken change
is reported and the last good set stays) and, with ``--from-cluster``, from the cluster. TLS is
mandatory: ``--tls-cert``/``--tls-key`` (reloaded when the files change) or ``--self-signed`` for
development (prints the CA bundle). Exit code 2 when the policies or TLS files are unusable at start.
"""

from __future__ import annotations

import argparse

from celmut import logs
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL
from celmut.server import DEFAULT_BACKGROUND_USER
from celmut.service import flags


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the admission webhook", description=__doc__)
    p.add_argument("--policies", action="append", default=[], metavar="PATH", help="policy files or directories")
    p.add_argument("--from-cluster", action="store_true", help="also load policies and lookups from the cluster")
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for --from-cluster (default: in-cluster)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8443, help="port to listen on (default 8443)")
    p.add_argument("--tls-cert", metavar="FILE", help="serving certificate (PEM)")
    p.add_argument("--tls-key", metavar="FILE", help="serving key (PEM)")
    p.add_argument("--self-signed", action="store_true", help="create a CA and serving certificate (development)")
    p.add_argument("--cert-dir", metavar="DIR", help="where --self-signed writes its files")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--timeout", type=float, default=10.0, help="the webhook timeout in seconds (default 10)")
    p.add_argument("--reload-interval", type=float, default=2.0, help="seconds between policy file checks")
    p.add_argument(
        "--background-user",
        action="append",
        metavar="USERNAME",
        help="the controller's identity: skipBackgroundRequests policies ignore its requests "
        f"(default {DEFAULT_BACKGROUND_USER})",
    )
    p.add_argument(
        "--opt-out-label",
        default=DEFAULT_OPT_OUT_LABEL,
        metavar="LABEL",
        help="objects carrying this label, or whose controller owners carry it, are never mutated "
        f"(default {DEFAULT_OPT_OUT_LABEL}; the webhook configuration's objectSelector)",
    )
    p.add_argument(
        "--serve-admission-policies",
        action="store_true",
        help="with --from-cluster, also serve the cluster's MutatingAdmissionPolicies: only for an API server "
        "without the MutatingAdmissionPolicy plugin (one with it applies them itself, before celmut)",
    )
    p.add_argument(
        "--record-provenance",
        action="store_true",
        help="write celmut.io/mutated-by (each policy that changed the object, and its fields) on every object "
        'a policy mutates; without it, only policies annotated celmut.io/record-provenance: "true" record themselves',
    )
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    flags.add(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from celmut.server.run import ServeConfig, serve  # FastAPI and uvicorn load only for this command

    logs.configure(args.log_level)
    if not flags.use_for_process(args):
        return 2
    if args.tls_cert is None and not args.self_signed:
        print("error: TLS is required: give --tls-cert and --tls-key, or --self-signed")
        return 2
    if not args.policies and not args.from_cluster:
        print("error: give --policies PATH and/or --from-cluster")
        return 2
    config = ServeConfig(
        policy_paths=args.policies,
        host=args.host,
        port=args.port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        self_signed=args.self_signed,
        cert_dir=args.cert_dir,
        workers=args.workers,
        timeout_seconds=args.timeout,
        reload_interval=args.reload_interval,
        from_cluster=args.from_cluster,
        kubeconfig=args.kubeconfig,
        background_users=tuple(args.background_user or (DEFAULT_BACKGROUND_USER,)),
        opt_out_label=args.opt_out_label,
        serve_admission_policies=args.serve_admission_policies,
        record_provenance=args.record_provenance,
    )
    return serve(config)
