"""``celmut playground``: try policies in the browser and see every field they change, and why.

Serves a page on http://127.0.0.1:8080 (``--port``, ``--open`` opens it in the browser): paste policies
(presets included) and resources, optionally cluster objects, a Kyverno Context, a UserInfo, the
operation and old objects; it shows the mutated objects side by side with the policy and
``spec.mutations[N]`` that set each field, every policy's outcome and why, the response patch,
warnings, audit annotations, each policy's time and CEL cost, and the native MutatingAdmissionPolicy
each policy converts to (or why not). A CEL scratch pad, the preset compiler, a link holding the whole
page (in the URL fragment: nothing is sent anywhere) and "export as a Kyverno CLI test" are beside it.

With ``--kubeconfig`` (and ``--context``) the page is connected to that cluster, read-only: it lists
its namespaces and objects to load as resources (a workload can be run as its pods), and lookups and
``namespaceObject`` read the cluster. Nothing is ever written to it: the client sends GET requests only.

Everything runs on this machine, with the webhook's bounds (3 MiB requests, the CEL cost budget and
deadline, no outbound HTTP from CEL). It binds 127.0.0.1 and speaks plain HTTP there; another address
serves it to the network, which requires TLS (``--tls-cert``/``--tls-key`` or ``--self-signed``):
see docs/security.md.
"""

from __future__ import annotations

import argparse

from celmut.errors import ConfigurationError
from celmut.playground.guard import is_loopback

EXIT_CODES = {
    0: "stopped by SIGTERM or SIGINT",
    2: "bad flags (a non-loopback --host without TLS, unusable TLS files, a port in use, an unusable kubeconfig)",
}
DEFAULT_PORT = 8080


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "playground", help="try policies in the browser: the diff, who changed what, why", description=__doc__
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT}; 0: any)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; any other needs --tls-cert/--tls-key or --self-signed)",
    )
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument("--tls-cert", metavar="FILE", help="serving certificate (PEM), for a non-loopback --host")
    p.add_argument("--tls-key", metavar="FILE", help="serving key (PEM)")
    p.add_argument("--self-signed", action="store_true", help="create a CA and serving certificate (prints the CA)")
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name the page is reached by (checked against the Host header; repeatable)",
    )
    p.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="connect the page to this cluster, read-only: load its objects, and lookups read it (nothing is written)",
    )
    p.add_argument("--context", help="with --kubeconfig: the kubeconfig context (default: the current one)")
    p.add_argument(
        "--examples",
        metavar="DIR",
        help="a checkout holding policies/, presets/ and examples/ for the Examples menu (default: the one "
        "celmut runs from, else the current directory)",
    )
    p.set_defaults(run=run)


def check(args: argparse.Namespace) -> None:
    """The flags' rules (docs/security.md): TLS off the loopback, both TLS files or neither."""
    if not 0 <= args.port <= 65535:
        raise ConfigurationError(f"--port {args.port}: must be 0-65535")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ConfigurationError("give --tls-cert and --tls-key together")
    if args.self_signed and args.tls_cert:
        raise ConfigurationError("give --tls-cert/--tls-key or --self-signed, not both")
    if args.context and not args.kubeconfig:
        raise ConfigurationError("--context is read with --kubeconfig only (the cluster the page connects to)")
    if not is_loopback(args.host) and not (args.tls_cert or args.self_signed):
        raise ConfigurationError(
            f"--host {args.host} serves the playground beyond this machine: give --tls-cert and --tls-key, or "
            "--self-signed (see docs/security.md); on 127.0.0.1 it needs none"
        )


def run(args: argparse.Namespace) -> int:
    from celmut.playground.server import ServerConfig, serve  # FastAPI and uvicorn load only here

    check(args)
    config = ServerConfig(
        host=args.host,
        port=args.port,
        open_browser=args.open,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        self_signed=args.self_signed,
        allowed_hosts=tuple(args.allowed_host),
        examples=args.examples,
        kubeconfig=args.kubeconfig,
        context=args.context,
    )
    return serve(config)
