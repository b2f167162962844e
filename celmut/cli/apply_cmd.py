"""``celmut apply POLICY_PATH… -r RESOURCE…``: mutate resources offline, like ``kyverno apply``.

Prints the mutated resources in input order, then the mutateExisting targets they changed: as YAML
(a ``---`` stream), JSON (one object, or a ``v1`` ``List`` as ``kubectl get -o json`` prints), kubectl
names (``-o name``: ``pod/web``) or RFC 6902 patches (``-o patch``); or, with ``--diff``, a unified diff
of each object a policy changed, like ``kubectl diff``. Any output but ``patch`` pipes into
``kubectl apply -f -``. A path ``-`` reads standard input, for the policies or the resources.

Lookups (``resource.Get/List``, namespaces, params) are served from ``--cluster-resources``; CRDs given
there provide the schemas of custom resources. Existing objects for mutateExisting policies come from
``--target-resources``; without ``-r`` only those are mutated (a policy-event pass).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from celmut.cli import console, inputs, output
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from celmut.errors import ConfigurationError
from celmut.service import flags

if TYPE_CHECKING:
    from celmut.runtime.mutate_existing import TargetResult
    from celmut.service.offline import ResourceRun

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
EXIT_CODES = {
    EXIT_OK: "every request was admitted (mutated or not)",
    EXIT_FAILED: "a policy errored or denied a request, or a mutateExisting target failed",
    EXIT_BAD_INPUT: BAD_INPUT,
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("apply", help="apply policies to resources offline", description=__doc__)
    p.add_argument("policies", nargs="+", metavar="POLICY_PATH", help="policy files or directories ('-': stdin)")
    p.add_argument(
        "-r", "--resource", action="append", default=[], metavar="PATH", help="resources to admit ('-': stdin)"
    )
    p.add_argument("--cluster-resources", action="append", default=[], metavar="PATH", help="objects lookups see")
    p.add_argument("--target-resources", action="append", default=[], metavar="PATH", help="existing objects")
    p.add_argument("--values", metavar="FILE", help="Kyverno CLI values file")
    p.add_argument("--operation", default="CREATE", choices=OPERATIONS, help="admission operation (default CREATE)")
    p.add_argument("--old-resource", action="append", default=[], metavar="PATH", help="old objects, for UPDATE")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument(
        "-o", "--output", default="yaml", choices=(*output.OBJECT_FORMATS, "patch"), help="output format (yaml)"
    )
    shown.add_argument("--diff", action="store_true", help="print a unified diff of each changed object instead")
    p.add_argument("--detailed-results", action="store_true", help="print every policy's outcome to stderr")
    inputs.add_skip_unsupported(p)
    console.add_color_flag(p)
    p.add_argument(
        "--explain",
        action="store_true",
        help="instead of the objects, print per resource each field changed with the policy and mutation that "
        "changed it, and each policy not applied with the reason (a table; -o json for JSON)",
    )
    flags.add(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from celmut.compile.pipeline import read_paths
    from celmut.service.offline import OfflineCluster
    from celmut.sources.kyverno_values import load_values

    if not args.resource and not args.target_resources:
        raise ConfigurationError(
            "nothing to apply the policies to: give resources with -r PATH ('-' for standard input), or "
            "existing objects for mutateExisting policies with --target-resources PATH"
        )
    inputs.check_stdin(
        {
            "the policies": args.policies,
            "-r": args.resource,
            "--cluster-resources": args.cluster_resources,
            "--target-resources": args.target_resources,
            "--old-resource": args.old_resource,
            "--values": [args.values] if args.values else [],
        }
    )
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    policies, read_errors = read_paths(*args.policies)
    resources = inputs.objects(args.resource)
    old_objects = inputs.objects(args.old_resource)
    cluster_documents = inputs.object_documents(args.cluster_resources + args.target_resources)
    values = load_values(args.values) if args.values else None
    offline = OfflineCluster.build(
        policies, cluster_documents, values, backend, read_errors, skip_unsupported=args.skip_unsupported
    )
    if not inputs.report(offline.compilation, skip_unsupported=args.skip_unsupported):
        return EXIT_BAD_INPUT
    if not offline.compilation.compiled.policies:
        raise ConfigurationError(f"no policies found in {', '.join(args.policies)}")
    runs = offline.admit(resources, args.operation, old_objects, explain=args.explain)
    scanned = offline.scan()
    if args.explain:
        from celmut.cli import explain_render

        sys.stdout.write(explain_render.render(explain_render.explain_runs(runs, scanned), _explain_format(args)))
    elif args.diff:
        _print_diffs(runs, scanned, console.palette(args))
    else:
        _print_output(args.output, runs, scanned)
    _print_summary(runs, scanned, detailed=args.detailed_results)
    failed = any(not r.result.allowed or r.result.errored for r in runs) or any(
        t.outcome.status == "error" for r in runs for t in r.targets
    )
    return EXIT_FAILED if failed else EXIT_OK


def _explain_format(args: argparse.Namespace) -> str:
    return "json" if args.output == "json" else "table"


def _targets(runs: list[ResourceRun], scanned: list[TargetResult]) -> list[TargetResult]:
    return [t for r in runs for t in r.targets if t.changed] + [t for t in scanned if t.changed]


def _admitted(run: ResourceRun) -> dict[str, Any]:
    result = run.result
    return result.object if result.allowed and result.object is not None else run.resource


def _print_output(fmt: str, runs: list[ResourceRun], scanned: list[TargetResult]) -> None:
    from celmut.service.offline import reference

    if fmt == "patch":
        patches = [{"resource": reference(r.resource), "patch": r.result.patch} for r in runs]
        patches += [{"resource": t.reference, "patch": t.patch} for t in _targets(runs, scanned)]
        print(json.dumps(patches, indent=2))
        return
    objects = [_admitted(r) for r in runs]
    objects += [t.mutated for t in _targets(runs, scanned) if t.mutated is not None]
    sys.stdout.write(output.render(objects, fmt))


def _print_diffs(runs: list[ResourceRun], scanned: list[TargetResult], colors: console.Palette) -> None:
    pairs = [(r.resource, _admitted(r)) for r in runs]
    pairs += [(t.target, t.mutated) for t in _targets(runs, scanned) if t.mutated is not None]
    for before, after in pairs:
        sys.stdout.write(output.unified_diff(before, after, colors))


def _print_summary(runs: list[ResourceRun], scanned: list[TargetResult], *, detailed: bool) -> None:
    from celmut.service.offline import reference

    for run in runs:
        result = run.result
        if not result.allowed:
            print(f"denied: {reference(run.resource)}: {result.message}", file=sys.stderr)
        for warning in result.warnings:
            print(f"warning: {reference(run.resource)}: {warning}", file=sys.stderr)
        if detailed:
            for outcome in result.outcomes:
                reason = f" ({outcome.reason})" if outcome.reason else ""
                print(f"{reference(run.resource)}: {outcome.policy}: {outcome.status}{reason}", file=sys.stderr)
    targets = [t for r in runs for t in r.targets] + scanned
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
