"""Flags several surfaces share.

``--cel-engine compiled|interpreted``: the CEL engine of the commands that compile CEL (eval,
apply, test, compile, explain, serve, controller). Without the flag, ``CELMUT_CEL_ENGINE`` decides,
and then ``compiled`` (:mod:`celmut.cel_engines`). A former name (``celpy``, ``planner``, ``auto``, the
removed ``cpp``) still works, with a one-line warning: ``warning: …`` on stderr from the one-shot
commands, a log line from the long-running ones. The one-shot commands pass the engine to the
compiler; the long-running ones (serve, controller) make it their process's default, which their
worker processes inherit.

Adding the flag to a parser does not import the CEL layer (``celmut --version`` and ``--help`` never
load it).

``--policy-selector`` (serve, controller): which cluster MutatingPolicies are celmut's
(:mod:`celmut.policy.selection`); a bad selector is refused by argparse (exit 2, naming it).

``--http-allow`` and friends (serve, controller): the allow-list of CEL's HTTP calls.

``--policies``, ``--skip-unsupported``, ``--opt-out-label``, ``--log-level`` (serve, controller): what a
long-running command loads, leaves alone and logs; :func:`start_process` is how both begin with these
flags, and :func:`policies_problem` the one line saying why policy files stop them from starting.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from celmut import cel_engines, logs
from celmut.policy.selection import AUTO, OWNED_BY_CELMUT, PolicySelection, PolicySelectorError
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL

if TYPE_CHECKING:  # the CEL layer loads only when a command runs
    from celmut.cel.lookups import HttpPolicy

EXIT_BAD_INPUT = 2
ENV_VAR = cel_engines.ENV_VAR
log = logging.getLogger(__name__)


class EngineChoices(tuple[str, ...]):
    """``--cel-engine``'s choices: the current engines, which ``--help``, shell completion and the
    error for an unknown name list, and which also contain the former names, still accepted."""

    def __contains__(self, name: object) -> bool:
        return name in cel_engines.CHOICES


CHOICES = EngineChoices(cel_engines.ENGINES)


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cel-engine",
        choices=CHOICES,
        default=None,
        help=f"CEL engine: compiled (each expression compiled to Python: the default) or interpreted (the "
        f"reference evaluator, slower) (default: ${ENV_VAR}, else compiled)",
    )


def add_authorizer(parser: argparse.ArgumentParser) -> None:
    """``--authorizer``: what the CEL ``authorizer`` answers offline (:mod:`celmut.service.offline_authorizer`)."""
    parser.add_argument(
        "--authorizer",
        metavar="allow|deny|FILE",
        default=None,
        help="answer the CEL authorizer's checks (MutatingAdmissionPolicies): allow, deny, or a FILE of rules "
        "(users/groups, verbs, apiGroups, resources, namespaces, names, nonResourceURLs); without it a check is "
        "an error",
    )


def chosen(args: argparse.Namespace, *, logged: bool = False) -> str | None:
    """The engine ``--cel-engine`` or else ``CELMUT_CEL_ENGINE`` names; for a former name, its
    deprecation warning on stderr (``logged``: in the log instead); None (after printing why) when
    the name is unknown."""
    try:
        engine, deprecation = cel_engines.normalize(getattr(args, "cel_engine", None), os.environ)
    except cel_engines.UnknownCelEngine as ex:
        print(f"error: {ex}", file=sys.stderr)
        return None
    if deprecation is not None and logged:
        log.warning(deprecation)
    elif deprecation is not None:
        print(f"warning: {deprecation}", file=sys.stderr)
    return engine


def use_for_process(args: argparse.Namespace) -> bool:
    """Make the chosen engine this process's default (``CELMUT_CEL_ENGINE``, by its current name, so
    worker processes neither warn again nor differ); False (after printing why) when it is unknown."""
    engine = chosen(args, logged=True)
    if engine is None:
        return False
    if getattr(args, "cel_engine", None) is not None or ENV_VAR in os.environ:
        os.environ[ENV_VAR] = engine
    return True


def add_policies(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policies", action="append", default=[], metavar="PATH", help="policy files or directories")


SKIP_HINT = "--skip-unsupported skips the others with one warning"


def add_skip_unsupported(parser: argparse.ArgumentParser) -> None:
    """``--skip-unsupported`` (apply, compile, serve, controller): the same meaning everywhere."""
    parser.add_argument(
        "--skip-unsupported",
        action="store_true",
        help="skip documents among the policies that celmut does not serve (a ConfigMap, a classic "
        "ClusterPolicy …) with one warning listing them, instead of failing",
    )


def policies_problem(errors: Sequence[Exception]) -> str:
    """One line saying why the policy files stop a long-running command from starting ('' when nothing
    does): the documents celmut does not serve, named with their files, and what to do about them; then
    the invalid policies, each naming its file and field."""
    from celmut.policy.unsupported import UnsupportedDocument  # the policy models load only when a command runs

    unsupported = [e for e in errors if isinstance(e, UnsupportedDocument)]
    invalid = [str(e) for e in errors if not isinstance(e, UnsupportedDocument)]
    parts = []
    if unsupported:
        named = ", ".join(f"{u.source} ({u.what}: {u.reason})" for u in unsupported)
        parts.append(
            f"{len(unsupported)} document(s) among the policies are not policies celmut serves: {named}; "
            "move them out of the policy paths, or give --skip-unsupported to serve the rest"
        )
    if invalid:
        parts.append(f"{len(invalid)} invalid: " + "; ".join(invalid))
    return "; ".join(parts)


def add_opt_out_label(parser: argparse.ArgumentParser, *, effect: str, note: str = "") -> None:
    """``--opt-out-label``; ``effect`` says what the command does not do to such objects."""
    parser.add_argument(
        "--opt-out-label",
        default=DEFAULT_OPT_OUT_LABEL,
        metavar="LABEL",
        help=f"objects carrying this label, or whose controller owners carry it, {effect} "
        f"(default {DEFAULT_OPT_OUT_LABEL}{note})",
    )


def add_log_level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))


def add_engine_and_http(parser: argparse.ArgumentParser) -> None:
    """The flags a long-running command (serve, controller) ends with: ``--cel-engine`` and the HTTP
    allow-list (after its own groups, so that ``--help`` lists them last)."""
    add(parser)
    add_http(parser)


def start_process(args: argparse.Namespace) -> HttpPolicy | None:
    """Begin a long-running command: configure logging, make the chosen CEL engine the process's
    default; the HTTP allow-list, or None (after printing why) when the flags are unusable (exit 2)."""
    logs.configure(args.log_level)
    if not use_for_process(args):
        return None
    return http_policy(args)


def policy_selector(text: str) -> str:
    """argparse type of ``--policy-selector``: the text, once known to be ``auto`` or a label selector."""
    try:
        PolicySelection(text)
    except PolicySelectorError as ex:
        raise argparse.ArgumentTypeError(str(ex)) from None
    return text


def add_policy_selector(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy-selector",
        type=policy_selector,
        default=AUTO,
        metavar="SELECTOR",
        help=f"the cluster MutatingPolicies celmut serves, a label selector as for kubectl get -l "
        f"(e.g. {OWNED_BY_CELMUT}; '' for all); default {AUTO}: all of them, or once Kyverno is detected "
        f"(its policy CRDs or webhooks) only those labelled {OWNED_BY_CELMUT}",
    )


def add_preset_failure_policy(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset-failure-policy",
        choices=("Ignore", "Fail"),
        default=None,
        help="the failurePolicy of the policies presets compile to (PodMutation, spot, GPU slicing, pinning), "
        "so that they are served by the webhook whose call failure policy is this, as in CAST AI's chart "
        "(the chart passes webhook.failurePolicy); default: the presets' own, Ignore",
    )


def add_cluster_policies(parser: argparse.ArgumentParser, *, admission_policies: str) -> None:
    """Which cluster policies a long-running command takes: ``--serve-admission-policies`` (help: "with
    --from-cluster, also " + ``admission_policies``) and ``--policy-selector``."""
    parser.add_argument(
        "--serve-admission-policies", action="store_true", help=f"with --from-cluster, also {admission_policies}"
    )
    add_policy_selector(parser)


def add_http(parser: argparse.ArgumentParser) -> None:
    """The HTTP allow-list of CEL's ``http.Get``/``http.Post`` (Kyverno's http library)."""
    group = parser.add_argument_group(
        "CEL HTTP calls (http.Get/http.Post)",
        "Denied unless the URL matches --http-allow, and only to public addresses: a host resolving to "
        "a loopback, private (RFC 1918), link-local (cloud metadata), CGNAT, multicast or reserved "
        "address is refused, also inside IPv6 (mapped, 6to4, Teredo, NAT64); connections go to the "
        "vetted address (no second DNS lookup), without credentials in URLs or redirects.",
    )
    group.add_argument(
        "--http-allow",
        action="append",
        default=[],
        metavar="URL",
        help="a URL prefix (https://api.example.com/teams/) or pattern with * (https://*.example.com/) "
        "that CEL may call; repeat for more (default: none, every call is denied)",
    )
    group.add_argument(
        "--http-allow-network",
        action="append",
        default=[],
        metavar="CIDR",
        help="a network CEL may reach even though it is private, e.g. the cluster's Service CIDR 10.96.0.0/12 "
        "(the URL must still match --http-allow)",
    )
    group.add_argument(
        "--http-allow-private-networks",
        action="store_true",
        help="allow every non-public address, cloud metadata endpoints included (not recommended)",
    )
    group.add_argument(
        "--http-timeout", type=float, default=5.0, metavar="SECONDS", help="timeout of one HTTP call (default 5)"
    )


def http_policy(args: argparse.Namespace) -> HttpPolicy | None:
    """The allow-list the flags describe; None (after printing why) when a CIDR or URL is invalid."""
    for network in args.http_allow_network:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            print(f"error: --http-allow-network {network!r} is not a CIDR (e.g. 10.96.0.0/12)", file=sys.stderr)
            return None
    for url in args.http_allow:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            print(f"error: --http-allow {url!r} is not an http(s) URL with a host", file=sys.stderr)
            return None
    if args.http_timeout <= 0:
        print("error: --http-timeout must be positive", file=sys.stderr)
        return None
    from celmut.cel.lookups import HttpPolicy

    return HttpPolicy(
        allow=tuple(args.http_allow),
        allow_private_networks=args.http_allow_private_networks,
        allow_networks=tuple(args.http_allow_network),
        timeout_seconds=args.http_timeout,
    )
