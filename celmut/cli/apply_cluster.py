"""``celmut apply --cluster``: kyverno apply's ``-c/--cluster``, read-only.

The resources come from the cluster of the current kubeconfig context (``--kubeconfig``,
``--context``): every object of the resources the policies' ``matchConstraints.resourceRules`` name,
in ``-n NAMESPACE`` or everywhere; ``-r NAME`` then keeps the objects of that name, and a name no
object has is an error, as in Kyverno (``cmd/cli/kubectl-kyverno/utils/common/fetch.go``,
``whenClusterIsTrue``: with ``--cluster``, ``--resource`` values are names, not files). Lookups
(``resource.Get/List``, namespaces) read the same cluster. Nothing is written: the mutated objects
are printed, as for files, and ``resource.Post`` fails with a message saying so.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from celmut.cli import console
from celmut.errors import ConfigurationError

if TYPE_CHECKING:
    from celmut.compile.compiled import CompiledPolicySet
    from celmut.kube.client import Cluster
    from celmut.kube.read_only import ReadOnlyLookup

CLUSTER_ONLY = ("namespace", "kubeconfig", "context")


def add_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the live cluster (kyverno apply --cluster; read-only)")
    group.add_argument(
        "-c", "--cluster", action="store_true",
        help="admit the cluster's objects of the kinds the policies match (with -r NAME: those named NAME); "
        "lookups read the cluster; nothing is written",
    )  # fmt: skip
    group.add_argument("-n", "--namespace", help="with --cluster: only objects in this namespace")
    group.add_argument("--kubeconfig", metavar="FILE", help="with --cluster: kubeconfig (default: ~/.kube/config)")
    group.add_argument("--context", help="with --cluster: the kubeconfig context (default: the current one)")


def check(args: argparse.Namespace) -> None:
    """A cluster-only flag without ``--cluster`` is an error naming it (it would do nothing)."""
    if args.cluster:
        return
    for name in CLUSTER_ONLY:
        if getattr(args, name) is not None:
            raise ConfigurationError(f"--{name} is read with --cluster only (apply to the cluster's objects)")


def connect(args: argparse.Namespace) -> tuple[Cluster, ReadOnlyLookup]:
    from celmut.kube.client import Cluster
    from celmut.kube.read_only import ReadOnlyLookup

    cluster = Cluster.connect(args.kubeconfig, context=args.context)
    return cluster, ReadOnlyLookup(cluster)


def objects(cluster: Cluster, compiled: CompiledPolicySet, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The cluster objects to admit: those the policies match, narrowed to ``-r`` names."""
    from celmut.kube.read_only import list_matching

    rules = [rule for policy in compiled.policies if not policy.json_mode for rule in policy.match.resource_rules]
    found, notes = list_matching(cluster, rules, args.namespace or "")
    for note in dict.fromkeys(notes):
        console.warning(note)
    if not args.resource:
        return found
    chosen: list[dict[str, Any]] = []
    for name in args.resource:
        named = [obj for obj in found if (obj.get("metadata") or {}).get("name") == name]
        if not named:
            where = f"namespace {args.namespace}" if args.namespace else "the cluster"
            raise ConfigurationError(f"-r {name}: no object of the kinds the policies match is named {name} in {where}")
        chosen += named
    return chosen
