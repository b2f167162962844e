"""``celmut eval EXPRESSION``: compile and evaluate one CEL expression in a policy environment.

The expression sees the same variables and libraries a policy does, bound from the files given
(``--object``, ``--request`` …; ``-`` reads standard input once). Prints the result as JSON. Compile
errors show the position with a caret; evaluation errors name the problem but never dump inputs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from celmut.cli.inputs import check_stdin
from celmut.errors import ConfigurationError
from celmut.service import flags
from celmut.sources.documents import DocumentError, describe_type, load_single

EXIT_CODES = {
    EXIT_OK: "the result was printed",
    EXIT_FAILED: "the evaluation failed (no such key, a failed conversion, the cost limit …)",
    EXIT_BAD_INPUT: BAD_INPUT + "; a CEL compile error; an input the expression reads that was not given",
}
FILE_FLAGS = ("object", "old_object", "request", "namespace_object", "params")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("eval", help="evaluate one CEL expression", description=__doc__)
    p.add_argument("expression", help="the CEL expression")
    p.add_argument("--object", metavar="FILE", help="YAML/JSON file bound to `object`")
    p.add_argument("--old-object", metavar="FILE", help="YAML/JSON file bound to `oldObject`")
    p.add_argument("--namespace-object", metavar="FILE", help="Namespace bound to `namespaceObject`")
    p.add_argument("--params", metavar="FILE", help="object bound to `params` (kubernetes profile)")
    p.add_argument("--request", metavar="FILE", help="AdmissionRequest or AdmissionReview bound to `request`")
    p.add_argument("--var", action="append", default=[], metavar="NAME=JSON", help="bind `variables.NAME` (repeatable)")
    p.add_argument("--profile", choices=("kyverno", "kubernetes"), default="kyverno", help="CEL environment")
    p.add_argument("--compact", action="store_true", help="print JSON on one line")
    flags.add(p)
    flags.add_authorizer(p)
    p.set_defaults(run=run)


def _parse_vars(items: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise ConfigurationError(f"--var {item!r}: expected NAME=JSON")
        try:
            values[name] = json.loads(text)
        except json.JSONDecodeError as ex:
            raise ConfigurationError(f"--var {name}: invalid JSON: {ex.msg}") from None
    return values


def _load(path: str | None) -> dict[str, Any] | None:
    """The object in ``path`` (every input eval binds is a map: an object, a request, params)."""
    if path is None:
        return None
    value = load_single(path)
    if not isinstance(value, dict):
        raise DocumentError(path, f"must hold a map (an object), not {describe_type(value)}")
    return value


def run(args: argparse.Namespace) -> int:
    from celmut import cel
    from celmut.cel import types
    from celmut.policy.errors import caret_snippet
    from celmut.service import offline_authorizer

    check_stdin({f"--{name.replace('_', '-')}": [getattr(args, name)] for name in FILE_FLAGS if getattr(args, name)})
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    variables = _parse_vars(args.var)
    obj, old = _load(args.object), _load(args.old_object)
    request = _load(args.request)
    if isinstance(request, dict) and request.get("kind") == "AdmissionReview":
        request = request.get("request") or {}
    if isinstance(request, dict):
        obj = request.get("object") if obj is None else obj
        old = request.get("oldObject") if old is None else old
    namespace_object, params = _load(args.namespace_object), _load(args.params)
    env = cel.Environment(args.profile, variables={name: types.DYN for name in variables}, backend=backend)
    try:
        program = env.compile(args.expression)
    except cel.CelCompileError as ex:
        for issue in ex.issues:
            snippet = caret_snippet(ex.source, issue.line, issue.column)
            where = f"line {issue.line}, column {issue.column}: " if issue.line else ""
            shown = f"error: compile error at {where}{issue.message}" + (f"\n{snippet}" if snippet else "")
            print(shown, file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        activation = cel.Activation(
            object=obj,
            old_object=old,
            request=request,
            namespace_object=namespace_object,
            params=params,
            variable_values=variables,
            services=cel.Services(authorizer=offline_authorizer.from_flag(args.authorizer)),
        )
        result = program.evaluate(activation)
    except cel.CelError as ex:
        missing = _missing_input(program.references, obj=obj, params=params, namespace_object=namespace_object)
        if missing:
            print(f"error: {missing} ({ex.kind} error: {ex.message})", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"{ex.kind} error: {ex.message}", file=sys.stderr)
        return EXIT_FAILED
    indent = None if args.compact else 2
    print(json.dumps(cel.to_plain(result), indent=indent, ensure_ascii=False))
    return EXIT_OK


def _missing_input(references: frozenset[str], **given: Any) -> str:
    """Why a failed evaluation may have failed: it reads a variable that no flag bound."""
    inputs = (
        ("obj", "object", "--object", "give --object FILE, or --request FILE with an object"),
        ("params", "params", "--params", "give --params FILE"),
        ("namespace_object", "namespaceObject", "--namespace-object", "give --namespace-object FILE"),
    )
    for key, variable, flag, remedy in inputs:
        if variable in references and given[key] is None:
            return f"no {flag} given: the expression reads `{variable}`; {remedy}"
    return ""
