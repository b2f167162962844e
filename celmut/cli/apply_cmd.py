"""``celmut apply POLICY_PATH… -r RESOURCE…``: mutate resources offline, like ``kyverno apply``.

Prints the mutated resources in input order (then mutated mutateExisting targets) as YAML, JSON or
RFC 6902 patches. Lookups (``resource.Get/List``, namespaces, params) are served from
``--cluster-resources``; existing objects for mutateExisting come from ``--target-resources``.
Exit codes: 0 success, 1 a policy errored or denied a request, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from celmut.compile.pipeline import read_paths
from celmut.runtime.mutate_existing import TargetResult
from celmut.service import flags
from celmut.service.offline import OfflineCluster, ResourceRun, reference
from celmut.sources.documents import Document, DocumentError, load_documents, load_single
from celmut.sources.kyverno_values import parse_values

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("apply", help="apply policies to resources offline", description=__doc__)
    p.add_argument("policies", nargs="+", metavar="POLICY_PATH", help="policy files or directories")
    p.add_argument("-r", "--resource", action="append", default=[], metavar="PATH", help="resources to admit")
    p.add_argument("--cluster-resources", action="append", default=[], metavar="PATH", help="objects lookups see")
    p.add_argument("--target-resources", action="append", default=[], metavar="PATH", help="existing objects")
    p.add_argument("--values", metavar="FILE", help="Kyverno CLI values file")
    p.add_argument("--operation", default="CREATE", choices=OPERATIONS, help="admission operation (default CREATE)")
    p.add_argument("--old-resource", action="append", default=[], metavar="PATH", help="old objects, for UPDATE")
    p.add_argument("-o", "--output", default="yaml", choices=("yaml", "json", "patch"), help="output format")
    p.add_argument("--detailed-results", action="store_true", help="print every policy's outcome to stderr")
    p.add_argument(
        "--explain",
        action="store_true",
        help="instead of the objects, print per resource each field changed with the policy and mutation that "
        "changed it, and each policy not applied with the reason (a table; -o json for JSON)",
    )
    flags.add(p)
    p.set_defaults(run=run)


def _documents(paths: list[str]) -> list[Document]:
    return [d for path in paths for d in load_documents(path)]


def _contents(documents: list[Document]) -> list[dict[str, Any]]:
    return [d.content for d in documents if isinstance(d.content, dict)]


def run(args: argparse.Namespace) -> int:
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    policies, read_errors = read_paths(*args.policies)
    try:
        resources = _contents(_documents(args.resource))
        old_objects = _contents(_documents(args.old_resource))
        cluster_documents = _documents(args.cluster_resources) + _documents(args.target_resources)
        values = parse_values(load_single(args.values)) if args.values else None
    except DocumentError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return EXIT_BAD_INPUT
    offline = OfflineCluster.build(policies, cluster_documents, values, backend, read_errors)
    if offline.compilation.errors:
        for error in offline.compilation.errors:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for warning in offline.compilation.compiled.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    runs = offline.admit(resources, args.operation, old_objects, explain=args.explain)
    scanned = offline.scan()
    if args.explain:
        from celmut.cli import explain_render

        sys.stdout.write(explain_render.render(explain_render.explain_runs(runs, scanned), _explain_format(args)))
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


def _print_output(fmt: str, runs: list[ResourceRun], scanned: list[TargetResult]) -> None:
    objects = [r.result.object if r.result.allowed and r.result.object is not None else r.resource for r in runs]
    objects += [t.mutated for t in _targets(runs, scanned) if t.mutated is not None]
    if fmt == "yaml":
        print(yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False), end="")
    elif fmt == "json":
        print(json.dumps(objects[0] if len(objects) == 1 else objects, indent=2))
    else:
        patches = [{"resource": reference(r.resource), "patch": r.result.patch} for r in runs]
        patches += [{"resource": t.reference, "patch": t.patch} for t in _targets(runs, scanned)]
        print(json.dumps(patches, indent=2))


def _print_summary(runs: list[ResourceRun], scanned: list[TargetResult], *, detailed: bool) -> None:
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
