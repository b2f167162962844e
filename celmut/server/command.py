"""``celmut serve``: run the mutating admission webhook over TLS.

Policies come from ``--policies`` files and directories (reloaded when they change; a broken change
is reported and the last good set stays) and, with ``--from-cluster``, from the cluster. TLS is
mandatory: ``--tls-cert``/``--tls-key`` (reloaded when the files change) or ``--self-signed`` for
development (prints the CA bundle). Exit code 2 when the policies or TLS files are unusable at start.

Every connection is bounded (how many, and how long each stage may take) and every admission runs
on a bounded pool of threads, so neither idle clients nor a slow policy can starve the others.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from celmut.errors import ConfigurationError
from celmut.server import DEFAULT_BACKGROUND_USER
from celmut.server.limits import ConnectionLimits
from celmut.service import cluster_data_flags, flags

if TYPE_CHECKING:  # the CEL layer loads only when the command runs
    from celmut.service.settings import ServiceSettings

_LIMITS = ConnectionLimits()
_EVALUATION_THREADS = 4  # celmut.server.app.DEFAULT_EVALUATION_THREADS (that module loads FastAPI)

# The flag of each ConnectionLimits field: (flag, field, type, metavar, help); the field's default is the flag's.
_LIMIT_FLAGS = (
    (
        "--max-connections",
        "max_connections",
        int,
        "N",
        "open connections at most; one more closes the one idle longest (default %(default)s)",
    ),
    (
        "--tls-handshake-timeout",
        "handshake_timeout",
        float,
        "SECONDS",
        "close a connection whose TLS handshake takes longer (default %(default)s)",
    ),
    (
        "--header-timeout",
        "header_timeout",
        float,
        "SECONDS",
        "close a connection whose request headers are not complete this long after it opened, or "
        "after the first byte of a request on a kept-alive connection (default %(default)s)",
    ),
    (
        "--body-timeout",
        "body_timeout",
        float,
        "SECONDS",
        "answer 408 when a request body is not complete this long after its headers (default %(default)s)",
    ),
    (
        "--keep-alive-timeout",
        "keep_alive_timeout",
        float,
        "SECONDS",
        "close a connection idle this long between requests (default %(default)s)",
    ),
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the admission webhook", description=__doc__)
    flags.add_policies(p)
    flags.add_skip_unsupported(p)
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
    flags.add_opt_out_label(p, effect="are never mutated", note="; the webhook configuration's objectSelector")
    flags.add_cluster_policies(
        p,
        admission_policies="serve the cluster's MutatingAdmissionPolicies: only for an API server without the "
        "MutatingAdmissionPolicy plugin (one with it applies them itself, before celmut)",
    )
    p.add_argument(
        "--record-provenance",
        action="store_true",
        help="write celmut.io/mutated-by (each policy that changed the object, and its fields) on every object "
        'a policy mutates; without it, only policies annotated celmut.io/record-provenance: "true" record themselves',
    )
    flags.add_preset_failure_policy(p)
    flags.add_log_level(p)
    limits = p.add_argument_group("connections and admissions (each bounded; see docs/security.md)")
    for flag, field, kind, metavar, text in _LIMIT_FLAGS:
        limits.add_argument(flag, type=kind, default=getattr(_LIMITS, field), metavar=metavar, help=text)
    limits.add_argument(
        "--evaluation-threads",
        type=int,
        default=_EVALUATION_THREADS,
        metavar="N",
        help="admissions evaluated at once, off the event loop; each may build up to 32 MiB of CEL values "
        "(default %(default)s)",
    )
    flags.add_engine_and_http(p)
    cluster_data_flags.add_image_data(p)
    p.set_defaults(run=run)


def service_settings(args: argparse.Namespace) -> ServiceSettings | None:
    """The settings every surface shares, with the webhook's own engine flags (``--timeout``,
    ``--background-user``, ``--record-provenance``); None (after printing why) when unusable."""
    from celmut.service.settings import from_flags

    return from_flags(
        args,
        timeout_seconds=args.timeout,
        background_usernames=frozenset(args.background_user or (DEFAULT_BACKGROUND_USER,)),
        record_provenance=args.record_provenance,
    )


def run(args: argparse.Namespace) -> int:
    from celmut.server.run import ServeConfig, serve  # FastAPI and uvicorn load only for this command

    service = service_settings(args)
    if service is None:
        return 2
    limits = ConnectionLimits(**{field: getattr(args, flag[2:].replace("-", "_")) for flag, field, *_ in _LIMIT_FLAGS})
    problem = limits.problem() or ("--evaluation-threads must be positive" if args.evaluation_threads < 1 else "")
    if problem:
        print(f"error: {problem}")
        return 2
    if args.tls_cert is None and not args.self_signed:
        raise ConfigurationError("TLS is required: give --tls-cert and --tls-key, or --self-signed")
    if not args.policies and not args.from_cluster:
        raise ConfigurationError("give --policies PATH and/or --from-cluster")
    config = ServeConfig(
        service=service,
        host=args.host,
        port=args.port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        self_signed=args.self_signed,
        cert_dir=args.cert_dir,
        workers=args.workers,
        reload_interval=args.reload_interval,
        limits=limits,
        evaluation_threads=args.evaluation_threads,
    )
    return serve(config)
