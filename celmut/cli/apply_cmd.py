"""``celmut apply POLICY_PATH… -r RESOURCE…``: mutate resources offline, like ``kyverno apply``.

Prints the mutated resources in input order, then the mutateExisting targets they changed: as YAML
(a ``---`` stream), JSON (one object, or a ``v1`` ``List`` as ``kubectl get -o json`` prints), kubectl
names (``-o name``: ``pod/web``) or RFC 6902 patches (``-o patch``); or, with ``--diff``, a unified diff
of each object a policy changed, like ``kubectl diff``; or, with ``--table``, kyverno apply's results
table. Any output but ``patch`` pipes into ``kubectl apply -f -``: a denied resource is never printed
nor written to ``--output-file``/``--output-dir`` (its denial is on standard error, and the exit code
is 1). A path ``-`` reads standard input, for the policies or the resources; a resource path holding
no document is an error. Standard error ends with kyverno apply's counts (``pass: N, fail: N, warn:
N, error: N, skip: N``).

A resource without ``metadata.namespace`` is admitted in ``default``, as kyverno apply reads it and as
the API server fills it for kubectl's default namespace (a cluster-scoped kind keeps none); the
printed resource stays without it, so the output still follows kubectl's current namespace.

Lookups (``resource.Get/List``, namespaces, params) are served from ``--cluster-resources``
(Kyverno's ``ClusterResource`` wrapper is unwrapped); CRDs given there provide the schemas of custom
resources, and a ``GlobalContextEntry`` there serves ``globalContext.Get`` from those resources.
``--context-file`` (a Kyverno ``Context``) serves ``image.GetMetadata``, more objects and global
context values. Existing objects for mutateExisting policies come from ``--target-resources``; without
``-r`` only those are mutated (a policy-event pass).

Kyverno's ``-o/--output PATH`` writes the mutated resources to a file or directory; celmut's ``-o`` is
the output format (yaml, json, name, patch), so that meaning is ``--output-file FILE`` or
``--output-dir DIR`` here.

``-c/--cluster`` admits the objects of the current kubeconfig context instead of files, and lookups
read that cluster; nothing is written to it. ``--warn-no-pass`` exits with ``--warn-exit-code`` when
no policy passed on any resource, as kyverno apply's does (checked after failures, errors and
warnings: a failure still exits 1).
"""
# --warn-no-pass follows kyverno's cmd/cli/kubectl-kyverno/commands/apply/command.go (``exit``); -c is
# celmut.cli.apply_cluster.

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celmut.cli import apply_cluster, console, inputs, output
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from celmut.errors import ConfigurationError
from celmut.service import flags

if TYPE_CHECKING:
    from celmut.kube.client import Cluster
    from celmut.kube.read_only import ReadOnlyLookup
    from celmut.runtime.mutate_existing import TargetResult
    from celmut.service.offline import OfflineCluster, ResourceRun

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
FORMATS = (*output.OBJECT_FORMATS, "patch")
EXIT_CODES = {
    EXIT_OK: "every request was admitted (mutated or not)",
    EXIT_FAILED: "a policy errored or denied a request, or a mutateExisting target failed",
    EXIT_BAD_INPUT: BAD_INPUT,
}


def output_format(value: str) -> str:
    """argparse type of ``-o``: a format; a path gets the flag that writes files (kyverno's ``-o``)."""
    if value in FORMATS:
        return value
    if "/" in value or "." in value:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an output format ({', '.join(FORMATS)}): celmut's -o is the format; to write the "
            f"mutated resources to a file as kyverno apply -o does, use --output-file {value} (--output-dir for a "
            "directory)"
        )
    raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from {', '.join(FORMATS)})")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("apply", help="apply policies to resources offline, like kyverno apply", description=__doc__)
    p.add_argument("policies", nargs="+", metavar="POLICY_PATH", help="policy files or directories ('-': stdin)")
    p.add_argument(
        "-r", "--resource", "--resources", action="append", default=[], metavar="PATH",
        help="resources to admit ('-': stdin)",
    )  # fmt: skip
    p.add_argument(
        "-e", "--exception", "--exceptions", dest="exceptions", action="append", default=[], metavar="PATH",
        help="PolicyException files or directories, as kyverno apply -e (exceptions may also sit among the policies)",
    )  # fmt: skip
    p.add_argument("--cluster-resources", action="append", default=[], metavar="PATH", help="objects lookups see")
    p.add_argument(
        "--target-resources", "--target-resource", action="append", default=[], metavar="PATH", help="existing objects"
    )
    p.add_argument("-f", "--values-file", "--values", dest="values", metavar="FILE", help="Kyverno CLI values file")
    p.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a value, as in a values file's "
        "globalValues (e.g. request.operation=UPDATE); comma-separated or repeated; not with --values-file",
    )
    p.add_argument("-u", "--userinfo", metavar="FILE", help="Kyverno UserInfo file: the requests' userInfo")
    p.add_argument("--context-file", metavar="FILE", help="Kyverno Context file: image data, objects, global context")
    p.add_argument("--operation", default="CREATE", choices=OPERATIONS, help="admission operation (default CREATE)")
    p.add_argument("--old-resource", action="append", default=[], metavar="PATH", help="old objects, for UPDATE")
    p.add_argument(
        "-o", "--output", default="yaml", type=output_format, metavar="{" + ",".join(FORMATS) + "}",
        help="output format (yaml); kyverno's -o PATH is --output-file/--output-dir",
    )  # fmt: skip
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--diff", action="store_true", help="print a unified diff of each changed object instead")
    shown.add_argument("-t", "--table", action="store_true", help="print kyverno apply's results table instead")
    shown.add_argument(
        "--policy-report",
        action="store_true",
        help="print the ClusterPolicyReport/PolicyReports kyverno apply --policy-report prints instead (-o json: JSON)",
    )
    shown.add_argument(
        "--explain",
        action="store_true",
        help="instead of the objects, print per resource each field changed with the policy and mutation that "
        "changed it, and each policy not applied with the reason (a table; -o json for JSON)",
    )
    written = p.add_mutually_exclusive_group()
    written.add_argument("--output-file", metavar="FILE", help="write the mutated resources to FILE (YAML)")
    written.add_argument(
        "--output-dir", metavar="DIR", help="write each mutated resource to DIR/<name>-mutated.yaml (kyverno's layout)"
    )
    p.add_argument(
        "--detailed-results",
        action="store_true",
        help="print every policy's outcome to stderr; with --table, add the MESSAGE column",
    )
    p.add_argument(
        "--warn-exit-code", type=int, default=0, metavar="N", help="exit N when a request returned warnings and "
        "nothing failed (default 0)"
    )  # fmt: skip
    p.add_argument(
        "--warn-no-pass", action="store_true", help="exit with --warn-exit-code when no policy passed on any "
        "resource (nothing matched, or everything was skipped), as kyverno apply"
    )  # fmt: skip
    p.add_argument(
        "--continue-on-fail",
        action="store_true",
        help="accepted for kyverno apply: celmut always applies the policies to every resource",
    )
    inputs.add_skip_unsupported(p)
    console.add_color_flag(p)
    flags.add(p)
    flags.add_authorizer(p)
    apply_cluster.add_flags(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from celmut import heap
    from celmut.cli import apply_report

    # Thousands of resources are millions of long-lived objects: at the default thresholds the cyclic
    # collector walks them over and over, a quarter of reading 2,000 Pods (issue 30).
    heap.tune()
    apply_cluster.check(args)
    if not args.resource and not args.target_resources and not args.cluster:
        raise ConfigurationError(
            "nothing to apply the policies to: give resources with -r PATH ('-' for standard input), "
            "existing objects for mutateExisting policies with --target-resources PATH, or --cluster"
        )
    inputs.check_stdin(
        {
            "the policies": args.policies,
            "--exception": args.exceptions,
            "-r": [] if args.cluster else args.resource,
            "--cluster-resources": args.cluster_resources,
            "--target-resources": args.target_resources,
            "--old-resource": args.old_resource,
            "--values-file": [args.values] if args.values else [],
            "--userinfo": [args.userinfo] if args.userinfo else [],
            "--context-file": [args.context_file] if args.context_file else [],
        }
    )
    apply_report.check_destination(args.output_file, args.output_dir)
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    connection = apply_cluster.connect(args) if args.cluster else None
    try:
        return _apply(args, backend, connection)
    finally:
        if connection is not None:
            connection[0].close()


def _apply(args: argparse.Namespace, backend: str, connection: tuple[Cluster, ReadOnlyLookup] | None) -> int:
    from celmut.cli import apply_report

    offline, resources, defaulted, old_objects = _load(args, backend, connection)
    if not inputs.report(offline.compilation, skip_unsupported=args.skip_unsupported):
        return EXIT_BAD_INPUT
    compiled = offline.compilation.compiled
    if not compiled.policies:
        raise ConfigurationError(f"no policies found in {', '.join(args.policies)}")
    count = len({(p.kind, p.namespace, p.name) for p in compiled.policies})
    excepting = f" with {len(compiled.exceptions)} exception(s)" if compiled.exceptions else ""
    print(f"Applying {count} policy rule(s) to {len(resources)} resource(s){excepting}...", file=sys.stderr)
    runs = offline.admit(resources, args.operation, old_objects, explain=args.explain)
    scanned = offline.scan()
    # A denied object is never printed nor written: `celmut apply … | kubectl apply -f -` must not
    # create what the webhook would have refused (its denial is on stderr, and the exit code is 1).
    admitted = [(r, stripped) for r, stripped in zip(runs, defaulted, strict=True) if r.result.allowed]
    objects = [_printed(r, stripped) for r, stripped in admitted]
    objects += [t.mutated for t in _targets(runs, scanned) if t.mutated is not None]
    denied = len(runs) - len(admitted)
    left_out = f" ({denied} denied, not written)" if denied else ""
    if args.output_file:
        apply_report.write_file(Path(args.output_file), objects)
        print(f"wrote {len(objects)} resources to {args.output_file}{left_out}", file=sys.stderr)
    elif args.output_dir:
        paths = apply_report.write_directory(Path(args.output_dir), objects)
        print(f"wrote {len(objects)} resources to {len(paths)} files in {args.output_dir}{left_out}", file=sys.stderr)
    targets = [t for r in runs for t in r.targets] + scanned
    found = apply_report.results(runs, targets)
    if args.explain:
        from celmut.cli import explain_render

        sys.stdout.write(explain_render.render(explain_render.explain_runs(runs, scanned), _explain_format(args)))
    elif args.table:
        sys.stdout.write(apply_report.table(found, console.palette(args), detailed=args.detailed_results))
    elif args.policy_report:
        from celmut.cli import apply_policy_report
        from celmut.runtime.report_results import exception_results_of

        found_reports = apply_policy_report.reports(
            runs, compiled.policies, scanned=scanned, exception_results=exception_results_of(compiled.exceptions)
        )
        sys.stdout.write(apply_policy_report.render(found_reports, "json" if args.output == "json" else "yaml"))
    elif args.diff:
        _print_diffs(admitted, runs, scanned, console.palette(args))
    elif not (args.output_file or args.output_dir):
        _print_output(args.output, [r for r, _ in admitted], runs, scanned, objects)
    warnings = _print_details(runs, targets, detailed=args.detailed_results)
    print(apply_report.summary(found, warnings), file=sys.stderr)
    failed = any(not r.result.allowed or r.result.errored for r in runs) or any(
        t.outcome.status == "error" for t in targets
    )
    if failed:
        return EXIT_FAILED
    if warnings and args.warn_exit_code:
        return int(args.warn_exit_code)
    if args.warn_no_pass and not any(r.result == "pass" for r in found):
        print("exit as no objects satisfied a policy (--warn-no-pass)", file=sys.stderr)
        return int(args.warn_exit_code)
    return EXIT_OK


def _load(
    args: argparse.Namespace, backend: str, connection: tuple[Cluster, ReadOnlyLookup] | None = None
) -> tuple[OfflineCluster, list[dict[str, Any]], list[bool], list[dict[str, Any]]]:
    """The offline cluster, the resources (namespace defaulted), per resource whether celmut set its
    namespace, and the old objects (defaulted too)."""
    from celmut import kinds
    from celmut.compile.pipeline import read_paths
    from celmut.service import kyverno_files, offline_authorizer
    from celmut.service.assembly import is_crd
    from celmut.service.offline import OfflineCluster
    from celmut.service.offline_context import ContextFileEntry, StaticGlobalContext, StaticImages
    from celmut.sources.documents import Document
    from celmut.sources.kyverno_values import Values, load_values

    if args.values and args.set:
        raise ConfigurationError("pass the values either with --set or with --values-file, not both (as kyverno)")
    policies, read_errors = read_paths(*args.policies)
    exceptions, exception_errors = read_paths(*args.exceptions)
    for document in exceptions:
        if not kyverno_files.is_policy_exception(document.content):
            what = kyverno_files.describe(document.content)
            raise ConfigurationError(f"{document.source}: {what}: not a PolicyException (given with --exception)")
    policies, read_errors = policies + exceptions, read_errors + exception_errors
    policies, unbound = kyverno_files.bind_unbound_admission_policies(policies)
    for note in unbound:
        console.warning(note)
    cluster = kyverno_files.unwrap_cluster_resources(
        inputs.object_documents(args.cluster_resources, "--cluster-resources")
    )
    cluster += inputs.object_documents(args.target_resources, "--target-resources")
    images, entries = StaticImages(), StaticGlobalContext()
    if args.context_file:
        context = kyverno_files.load_context(args.context_file)
        cluster += [Document(f"{args.context_file} spec.resources", i, o) for i, o in enumerate(context.resources)]
        images = StaticImages(context.images)
        entries.entries.update({n: ContextFileEntry(n, v) for n, v in context.global_context.items()})
        for warning in context.warnings:
            console.warning(warning)
    values = load_values(args.values) if args.values else Values(global_values=_set_values(args.set))
    user_info = kyverno_files.load_user_info(args.userinfo) if args.userinfo else None
    offline = OfflineCluster.build(
        policies,
        cluster,
        values,
        backend,
        read_errors,
        skip_unsupported=args.skip_unsupported,
        images=images,
        global_context=entries,
        user_info=user_info,
        authorizer=offline_authorizer.from_flag(args.authorizer),
        lookups=connection[1] if connection is not None else None,
    )
    table = kinds.KindTable([d.content for d in [*cluster, *policies] if is_crd(d.content)])
    if connection is not None:  # the cluster's objects: stored with their namespace, printed as read
        live = apply_cluster.objects(connection[0], offline.compilation.compiled, args)
        return offline, live, [False] * len(live), []
    given = inputs.objects(args.resource, "-r")
    resources = [kyverno_files.default_namespace(obj, table) for obj in given]
    old_objects = [
        kyverno_files.default_namespace(obj, table) for obj in inputs.objects(args.old_resource, "--old-resource")
    ]
    return offline, resources, [new is not old for new, old in zip(resources, given, strict=True)], old_objects


def _set_values(items: list[str]) -> dict[str, Any]:
    """``--set k=v,k2=v2`` (repeatable) as global values."""
    values: dict[str, Any] = {}
    for item in items:
        for pair in filter(None, (p.strip() for p in item.split(","))):
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise ConfigurationError(f"--set {pair!r}: expected KEY=VALUE")
            values[key.strip()] = value.strip()
    return values


def _explain_format(args: argparse.Namespace) -> str:
    return "json" if args.output == "json" else "table"


def _targets(runs: list[ResourceRun], scanned: list[TargetResult]) -> list[TargetResult]:
    return [t for r in runs for t in r.targets if t.changed] + [t for t in scanned if t.changed]


def _assumed_away(obj: dict[str, Any], defaulted: bool) -> dict[str, Any]:
    """``obj`` without the namespace celmut assumed for it (``defaulted``)."""
    if not defaulted:
        return obj
    return {**obj, "metadata": {k: v for k, v in (obj.get("metadata") or {}).items() if k != "namespace"}}


def _printed(run: ResourceRun, defaulted: bool) -> dict[str, Any]:
    """The admitted object as printed: without the namespace celmut assumed for it."""
    result = run.result
    return _assumed_away(result.object if result.object is not None else run.resource, defaulted)


def _print_output(
    fmt: str,
    admitted: list[ResourceRun],
    runs: list[ResourceRun],
    scanned: list[TargetResult],
    objects: list[dict[str, Any]],
) -> None:
    from celmut.service.offline import reference

    if fmt == "patch":
        patches = [{"resource": reference(r.resource), "patch": r.result.patch} for r in admitted]
        patches += [{"resource": t.reference, "patch": t.patch} for t in _targets(runs, scanned)]
        print(json.dumps(patches, indent=2))
        return
    sys.stdout.write(output.render(objects, fmt))


def _print_diffs(
    admitted: list[tuple[ResourceRun, bool]],
    runs: list[ResourceRun],
    scanned: list[TargetResult],
    colors: console.Palette,
) -> None:
    pairs = [(_assumed_away(r.resource, d), _printed(r, d)) for r, d in admitted]
    pairs += [(t.target, t.mutated) for t in _targets(runs, scanned) if t.mutated is not None]
    for before, after in pairs:
        sys.stdout.write(output.unified_diff(before, after, colors))


def _print_details(runs: list[ResourceRun], targets: list[TargetResult], *, detailed: bool) -> int:
    """Denials, warnings and (``detailed``) every outcome on stderr; the number of warnings."""
    from celmut.service.offline import reference

    warnings = 0
    for run in runs:
        result = run.result
        if not result.allowed:
            print(f"denied: {reference(run.resource)}: {result.message}", file=sys.stderr)
        for warning in result.warnings:
            warnings += 1
            print(f"warning: {reference(run.resource)}: {warning}", file=sys.stderr)
        if detailed:
            for outcome in result.outcomes:
                reason = f" ({outcome.reason})" if outcome.reason else ""
                print(f"{reference(run.resource)}: {outcome.policy}: {outcome.status}{reason}", file=sys.stderr)
    if detailed:
        for target in targets:
            reason = f" ({target.outcome.reason})" if target.outcome.reason else ""
            print(f"target {target.reference}: {target.policy}: {target.outcome.status}{reason}", file=sys.stderr)
    mutated = sum(1 for r in runs if r.result.changed)
    errors = sum(1 for r in runs if r.result.errored) + sum(1 for t in targets if t.outcome.status == "error")
    changed_targets = sum(1 for t in targets if t.changed)
    print(
        f"{len(runs)} resources: {mutated} mutated, {errors} with errors; {changed_targets} existing targets mutated",
        file=sys.stderr,
    )
    return warnings
