"""``celmut compile FILE…``: print the policies that presets compile to.

PodMutations, spot webhook values files, GPU slicing configurations and pod pinning plans become
ordinary MutatingPolicies; this prints them as YAML so they can be read, tested, edited and applied
anywhere a hand-written policy runs. Policies already written as policies are checked, not printed.
``-`` reads standard input.

``--to-map`` prints instead, for every MutatingPolicy and every preset, the Kubernetes
MutatingAdmissionPolicy and binding that apply it natively — the API server runs them itself, with
no webhook at all — exactly as the controller generates them for
``spec.autogen.mutatingAdmissionPolicy.enabled`` (names ``mpol-<name>``, PolicyExceptions folded in,
the namespace and object selectors of celmut's webhook for ``--namespace`` and the exclusions kept;
``--unscoped`` leaves them out).
When one cannot be converted, nothing is printed and the first construct in the way is named (exit 2).
MutatingAdmissionPolicies and bindings among the files are printed unchanged.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import yaml

from celmut.cli import inputs
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_OK
from celmut.errors import ConfigurationError
from celmut.service import flags

if TYPE_CHECKING:
    from celmut.sources.documents import Document

EXIT_CODES = {
    EXIT_OK: "the policies were printed",
    EXIT_BAD_INPUT: BAD_INPUT + "; no preset among the files; with --to-map, a policy that cannot be converted",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compile", help="print the policies presets compile to", description=__doc__)
    p.add_argument("paths", nargs="+", metavar="FILE", help="preset files or directories ('-': stdin)")
    inputs.add_skip_unsupported(p)
    p.add_argument(
        "--to-map",
        action="store_true",
        help="print the MutatingAdmissionPolicies and bindings that apply the policies and presets natively",
    )
    p.add_argument(
        "--map-api-version",
        choices=("v1", "v1beta1", "v1alpha1"),
        default="v1",
        help="with --to-map: the admissionregistration.k8s.io version to write (v1: Kubernetes 1.36+; default v1)",
    )
    p.add_argument(
        "--opt-out-label",
        default=None,
        metavar="LABEL",
        help="with --to-map: objects carrying this label are left alone, as celmut's webhook leaves them "
        "(default celmut.io/ignore; '' for none)",
    )
    p.add_argument(
        "--namespace",
        default="celmut",
        metavar="NS",
        help="with --to-map: celmut's namespace, which the MAPs, like the webhook, never reach (default celmut)",
    )
    p.add_argument(
        "--exclude-namespace", action="append", default=[], metavar="NS", help="with --to-map: never reached (repeat)"
    )
    p.add_argument(
        "--fail-exclude-namespace",
        action="append",
        default=None,
        metavar="NS",
        help="with --to-map: never reached by failurePolicy Fail policies (repeat; default kube-system)",
    )
    p.add_argument(
        "--unscoped",
        action="store_true",
        help="with --to-map: only the policies' own match, without the webhook's namespace and object selectors",
    )
    flags.add(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from celmut.compile.pipeline import compile_documents
    from celmut.compile.presets import registry as presets

    inputs.check_stdin({"FILE": args.paths})
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    documents = inputs.documents(args.paths)
    # Everything is compiled (so what is printed is known to compile, and nothing is skipped silently);
    # what is printed is what the presets generate.
    compilation = compile_documents(documents, backend, skip_unsupported=args.skip_unsupported)
    if not inputs.report(compilation, skip_unsupported=args.skip_unsupported):
        return EXIT_BAD_INPUT
    expanded, _ = presets.expand(documents)
    if args.to_map:
        print(yaml.safe_dump_all(_native(args, expanded), sort_keys=False, width=120), end="")
        return EXIT_OK
    generated = [d.content for d in expanded if d.path.startswith("<generated")]
    if not generated:
        raise ConfigurationError("no preset documents found (PodMutation, spot values, GPU slicing, pinning plan)")
    print(yaml.safe_dump_all(generated, sort_keys=False, width=120), end="")
    return EXIT_OK


def _native(args: argparse.Namespace, documents: list[Document]) -> list[dict[str, Any]]:
    """The MutatingAdmissionPolicies and bindings of every policy, in file order; raises naming the first
    policy that cannot be converted (nothing is printed then: half a set must not be applied)."""
    from celmut.compile import to_map
    from celmut.compile.presets.base import GENERATED_BY
    from celmut.compile.presets.yaml_format import readable
    from celmut.policy.loader import load_policy_documents
    from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL

    policies = load_policy_documents(documents)
    api_version = f"{to_map.GROUP}/{args.map_api_version}"
    label = DEFAULT_OPT_OUT_LABEL if args.opt_out_label is None else args.opt_out_label
    scopes = {} if args.unscoped else _webhook_scopes(args, label)
    out: list[dict[str, Any]] = []
    for policy in policies.mutating_policies:
        try:
            natives = to_map.convert(
                policy,
                policies.exceptions,
                api_version=api_version,
                opt_out_label=label,
                scope=scopes.get(policy.failure_policy),
            )
        except to_map.NotConvertible as ex:
            origin = ((policy.raw.get("metadata") or {}).get("annotations") or {}).get(GENERATED_BY)
            where = f"{origin}: " if origin else f"{policy.source}: "
            raise ConfigurationError(
                f"{where}{policy.kind} {policy.name} cannot run as a MutatingAdmissionPolicy: {ex.reason}"
            ) from None
        out += [readable(document) for native in natives for document in (native.policy, native.binding)]
    native_kinds = ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
    out += [d.content for d in documents if (d.content or {}).get("kind") in native_kinds]  # as they are, in order
    if not out:
        raise ConfigurationError("no MutatingPolicy or preset to convert among the files")
    return out


def _webhook_scopes(args: argparse.Namespace, opt_out_label: str) -> dict[str, dict[str, Any]]:
    """failurePolicy -> the namespace and object selectors celmut's webhook for it has with these settings
    (``celmut manifests``' and the chart's), which the controller copies into a generated MAP."""
    from celmut.install.webhook_config import WebhookSettings, map_scopes

    fail_excluded = ("kube-system",) if args.fail_exclude_namespace is None else args.fail_exclude_namespace
    settings = WebhookSettings(
        own_namespace=args.namespace,
        excluded_namespaces=tuple(n for n in args.exclude_namespace if n),
        fail_excluded_namespaces=tuple(n for n in fail_excluded if n),
        opt_out_label=opt_out_label,
    )
    return map_scopes(settings)
