"""``celmut explain``: why is this field on the object, and why did that other policy not apply?

    celmut explain -f pod.yaml POLICY_PATH…                   an object and policies from files
    celmut explain --from-cluster pod/web -n shop [PATH…]     both from the cluster (and files)

Admits the object through the policies (``--operation``, CREATE by default) and prints each field a
mutation changed, with the policy and ``spec.mutations[N]`` that changed it, then every policy
considered but not applied and why: matchConstraints, a matchCondition by name, a PolicyException by
name, an error under ``failurePolicy: Ignore``. ``--field /metadata/labels/team`` shows that field
only: the changes to it or inside it, and, of a mutation that wrote a field around it (a whole list),
the part of the value at that field; when none did, the policies that did not apply say why it is not
there. ``-o json`` prints the same for programs.

An object read from the cluster was admitted already: a field a policy writes with the value the
object has is shown as ``kept``, and the ``celmut.io/mutated-by`` summary, when the webhook recorded
one (``serve --record-provenance`` or a policy annotated ``celmut.io/record-provenance: "true"``),
says who changed it then. Policies are read from the cluster as the webhook reads them, the cluster's
MutatingAdmissionPolicies included; lookups (``resource.Get/List``) go to the cluster.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from celmut.service import flags

if TYPE_CHECKING:
    from celmut.cli.explain_render import Explained

EXIT_CODES = {
    EXIT_OK: "explained",
    EXIT_FAILED: "a policy errored or denied the object",
    EXIT_BAD_INPUT: BAD_INPUT,
}
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "explain",
        help="explain which policy changed each field of an object, and why others did not apply",
        description=__doc__,
    )
    p.add_argument("policies", nargs="*", metavar="POLICY_PATH", help="policy files or directories")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--filename", action="append", metavar="PATH", help="the object(s) to explain")
    source.add_argument("--from-cluster", metavar="KIND/NAME", help="explain this object of the cluster (e.g. pod/web)")
    p.add_argument("-n", "--namespace", default="default", help="the namespace of --from-cluster (default: default)")
    p.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig for --from-cluster (default: in-cluster, else ~/.kube/config)"
    )
    p.add_argument("--field", metavar="POINTER", help="only this field, as a JSON pointer (/metadata/labels/team)")
    p.add_argument("--operation", default="CREATE", choices=OPERATIONS, help="admission operation (default CREATE)")
    p.add_argument("--cluster-resources", action="append", default=[], metavar="PATH", help="objects lookups see (-f)")
    p.add_argument("-o", "--output", default="table", choices=("table", "json"), help="output format (table)")
    flags.add(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.field is not None and not args.field.startswith("/"):
        print(f"error: --field {args.field!r}: expected a JSON pointer such as /metadata/labels/team", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.filename and not args.policies:
        print("error: give the policies to explain it with: celmut explain -f FILE POLICY_PATH…", file=sys.stderr)
        return EXIT_BAD_INPUT
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    explained = _from_cluster(args, backend) if args.from_cluster else _from_files(args, backend)
    if explained is None:
        return EXIT_BAD_INPUT
    from celmut.cli import explain_render

    sys.stdout.write(explain_render.render(explained, args.output, args.field))
    failed = any(not e.allowed or any(n.status == "error" for n in e.provenance.not_applied) for e in explained)
    return EXIT_FAILED if failed else EXIT_OK


def _from_files(args: argparse.Namespace, backend: str) -> list[Explained] | None:
    from celmut.cli import explain_render
    from celmut.compile.pipeline import read_paths
    from celmut.service.offline import OfflineCluster
    from celmut.sources.documents import DocumentError, load_documents

    policies, read_errors = read_paths(*args.policies)
    try:
        objects = [d.content for path in args.filename for d in load_documents(path) if isinstance(d.content, dict)]
        cluster_documents = [d for path in args.cluster_resources for d in load_documents(path)]
    except DocumentError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return None
    if not objects:
        print(f"error: no object in {', '.join(args.filename)}", file=sys.stderr)
        return None
    offline = OfflineCluster.build(policies, cluster_documents, backend=backend, read_errors=read_errors)
    if offline.compilation.errors:
        for error in offline.compilation.errors:
            print(f"error: {error}", file=sys.stderr)
        return None
    runs = offline.admit(objects, args.operation, explain=True)
    return explain_render.explain_runs(runs)


def _from_cluster(args: argparse.Namespace, backend: str) -> list[Explained] | None:
    from celmut import cel
    from celmut.cli import explain_render
    from celmut.compile.pipeline import compile_documents, read_paths
    from celmut.kube import objects
    from celmut.kube.client import Cluster, ClusterError
    from celmut.kube.lookup import CacheSet, ClusterLookup
    from celmut.runtime import AdmissionInput
    from celmut.service.assembly import EngineSettings, assemble_engine

    files, read_errors = read_paths(*args.policies)
    if read_errors:
        for error in read_errors:
            print(f"error: {error}", file=sys.stderr)
        return None
    try:
        cluster = Cluster.connect(args.kubeconfig)
    except ClusterError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return None
    caches = CacheSet(cluster)
    try:
        obj = objects.read_object(cluster, args.from_cluster, args.namespace)
        compilation = compile_documents(objects.read_policies(cluster) + files, backend)
        for error in compilation.errors:  # as the webhook does: a broken policy is skipped, the rest serve
            print(f"warning: skipped: {error}", file=sys.stderr)
        services = cel.Services(resources=ClusterLookup(caches))
        engine = assemble_engine(compilation, EngineSettings(services=services))
        namespace = _namespace_of(obj)
        request = AdmissionInput.from_object(
            obj if args.operation != "DELETE" else None,
            args.operation,
            old_object=obj if args.operation in ("UPDATE", "DELETE") else None,
            namespace_object=objects.read_namespace(cluster, namespace),
            kind_table=engine.options.schemas.kinds,
        )
        result = engine.admit(request, explain=True)
    except (ClusterError, objects.UnknownResource) as ex:
        print(f"error: {ex}", file=sys.stderr)
        return None
    finally:
        caches.stop()
        cluster.close()
    return [explain_render.explain_admission(obj, result)]


def _namespace_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")
