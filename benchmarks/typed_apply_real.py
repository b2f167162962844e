"""Typed-apply cases run through a real kube-apiserver and through celmut, compared.

Each case of ``tests/typed_apply/`` (scalar types per schema type, int-or-string fields, quantities,
maps of strings, list-map keys, byte fields, integer ranges, nulls, unknown fields, lists and maps
the expression builds, the order of the steps; ApplyConfigurations and JSONPatches, on built-in kinds
and on a custom resource with a structural schema) becomes a native MutatingAdmissionPolicy with its
binding (``failurePolicy: Fail``), scoped by an object selector to objects labelled for that case
alone. Once every policy takes effect, the case's object is created with a server-side dry run
(admission runs, nothing is stored) and the API server's answer is compared with celmut's on the
same policy and object (the offline engine, as ``celmut apply`` runs it):

* denied by the policy: celmut denies with the same reason (what follows ``denied request:``, or the
  ``Internal error occurred:`` of a JSONPatch the API server cannot decode); a case whose message
  lists several errors in Go's random map order is sent several times and any order it showed agrees;
* admitted: celmut admits, with the same value at the case's field; a request admitted and then
  refused by the object's own validation (which celmut does not run) counts as admitted.

Prints one line per case, the count of agreeing cases per family and in all; with ``--record FILE``
writes the API server's answers as JSON, which the test suite replays without a cluster
(tests/runtime/test_typed_apply.py). Installs the cases' CustomResourceDefinition
(``typedapplycases.typed-apply.celmut.io``) and removes it, the policies and the namespace it
created. Not part of CI.

    python benchmarks/typed_apply_real.py [--kubeconfig PATH] [--record tests/data/typed-apply/v1.36.2.json]
        [--only ID,...] [--repeat 8]

Needs ``kubectl`` on PATH and a kubeconfig allowed to manage MutatingAdmissionPolicies and
CustomResourceDefinitions (the development rig's admin kubeconfig on a kube-apiserver v1.36).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.typed_apply.cases import CASES  # noqa: E402
from tests.typed_apply.model import CRD, Case, agrees, at, map_documents, reason, run  # noqa: E402

LABEL = "celmut-typed-apply-case"
CANARIES = [
    Case(
        "canary-configmap", "canary", "", "configmaps", 'Object{data: {"canary": "yes"}}', ("ok", "data.canary", "yes")
    ),
    Case(
        "canary-crd",
        "canary",
        "",
        "typedapplycases",
        'Object{spec: Object.spec{title: "canary"}}',
        ("ok", "spec.title", "canary"),
    ),
]


def kubectl(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True, check=check, timeout=120)


def apply(documents: list[dict[str, Any]]) -> None:
    kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}))


def labelled(case: Case, namespace: str, value: str) -> dict[str, Any]:
    obj = case.object()
    obj["metadata"]["namespace"] = namespace
    obj["metadata"].setdefault("labels", {})[LABEL] = value
    return obj


def dry_run(obj: dict[str, Any]) -> tuple[str, str, Any]:
    """(outcome, reason, the created object or the full message): ``allowed``, ``denied`` (by a
    policy, or a JSONPatch result the API server cannot decode) or ``invalid`` (admitted, then
    refused by the object's validation)."""
    done = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(obj), check=False)
    if done.returncode == 0:
        return "allowed", "", json.loads(done.stdout)
    message = done.stderr.strip()
    for marker, keep in (("denied request: ", False), ("Internal error occurred: ", True)):
        if marker in message:
            cause = message.split(marker, 1)[1]
            return "denied", (marker + cause) if keep else cause, message
    return "invalid", "", message


def field_of(obj: Any, path: str) -> Any:
    try:
        return at(obj, path)
    except (KeyError, IndexError, TypeError):
        return "<absent>"


def wait_until_active(namespace: str, values: dict[str, str], seconds: float = 120) -> None:
    """Until both canaries (applied last) mutate their objects: the API server loads new policies
    asynchronously, and learns a new custom resource's schema from its OpenAPI every few seconds."""
    deadline = time.monotonic() + seconds
    pending = list(CANARIES)
    while pending and time.monotonic() < deadline:
        canary = pending[0]
        outcome, _, answer = dry_run(labelled(canary, namespace, values[canary.id]))
        if outcome == "allowed" and field_of(answer, canary.expect[1]) == canary.expect[2]:
            pending.pop(0)
            continue
        time.sleep(1)
    if pending:
        raise SystemExit("the policies did not take effect in time")
    time.sleep(2)


def answer_of(case: Case, namespace: str, value: str, name: str, repeat: int) -> dict[str, Any]:
    """The API server's answer to ``case``, sent ``repeat`` times when its message may vary; the
    run's own policy name reads ``typed-apply-case`` in the recorded message."""
    answers = [dry_run(labelled(case, namespace, value)) for _ in range(repeat if case.varies else 1)]
    outcome, _, first = answers[0]
    fields: dict[str, Any] = {}
    if outcome == "allowed" and case.expect[0] != "error":
        fields = {case.expect[1]: field_of(first, case.expect[1])}
    record: dict[str, Any] = {
        "id": case.id,
        "family": case.family,
        "upstream": case.upstream,
        "resource": case.resource,
        "patchType": case.patch_type,
        "expression": case.expression,
        "outcome": outcome,
        "reasons": sorted({cause for _, cause, _ in answers if cause}),
        "message": "" if outcome == "allowed" else str(first).replace(name, "typed-apply-case"),
        "fields": fields,
    }
    if case.obj is not None:
        record["object"] = case.obj
    if case.variables:
        record["variables"] = dict(case.variables)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--record", type=Path, help="write the API server's answers here (JSON)")
    parser.add_argument("--only", default="", help="comma-separated case ids")
    parser.add_argument("--repeat", type=int, default=8, help="sends of a case whose message varies (default 8)")
    args = parser.parse_args()
    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig
    wanted = set(filter(None, args.only.split(",")))
    cases = [case for case in CASES if not wanted or case.id in wanted]
    run_id = uuid.uuid4().hex[:6]
    namespace = f"celmut-typed-apply-{run_id}"
    names = {case.id: f"celmut-typed-apply-{run_id}-{index}" for index, case in enumerate([*cases, *CANARIES])}
    values = {case.id: f"{run_id}-{index}" for index, case in enumerate([*cases, *CANARIES])}
    version = json.loads(kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    kubectl("create", "namespace", namespace)
    kubectl("apply", "-f", "-", stdin=json.dumps(CRD))
    try:
        kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD['metadata']['name']}")
        apply([doc for c in cases for doc in map_documents(c, names[c.id], {"matchLabels": {LABEL: values[c.id]}})])
        apply([doc for c in CANARIES for doc in map_documents(c, names[c.id], {"matchLabels": {LABEL: values[c.id]}})])
        wait_until_active(namespace, values)
        answers, agreed = [], collections.Counter[str]()
        for case in cases:
            record = answer_of(case, namespace, values[case.id], names[case.id], args.repeat)
            answers.append(record)
            result = run("MutatingAdmissionPolicy", case)
            same = agrees(result, record)
            agreed[case.family] += same
            shown = record["outcome"] if record["outcome"] != "denied" else " | ".join(record["reasons"])
            mine = (
                reason(result)
                if not result.allowed
                else json.dumps({p: at(result.object, p) for p in record["fields"]})
            )
            print(
                f"{'agree   ' if same else 'DISAGREE'} {case.family:15} {case.id:58} {shown}"
                + ("" if same else f"\n    celmut: {mine}")
            )
        totals = collections.Counter(case.family for case in cases)
        print()
        for family, total in totals.items():
            print(f"  {family:15} {agreed[family]:3} of {total}")
        print(f"\n{sum(agreed.values())} of {len(cases)} cases agree with kube-apiserver {version}")
        if args.record:
            args.record.parent.mkdir(parents=True, exist_ok=True)
            args.record.write_text(json.dumps({"server": version, "cases": answers}, indent=1) + "\n")
    finally:
        for name in names.values():
            kubectl("delete", "mutatingadmissionpolicybinding", name, "--ignore-not-found", check=False)
            kubectl("delete", "mutatingadmissionpolicy", name, "--ignore-not-found", check=False)
        kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false", check=False)
        kubectl("delete", "crd", CRD["metadata"]["name"], "--ignore-not-found", "--wait=false", check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
