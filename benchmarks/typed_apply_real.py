"""ApplyConfiguration cases run through a real kube-apiserver and through celmut, compared.

Each case of ``tests/typed_apply_cases.py`` (scalar types per schema type, int-or-string fields,
quantities, maps of strings, list-map keys, byte fields, integer ranges, nulls, unknown fields) becomes
a native MutatingAdmissionPolicy with its binding (``failurePolicy: Fail``), scoped by an object
selector to objects labelled for that case alone. Once every policy takes effect, the case's object
is created with a server-side dry run (admission runs, nothing is stored), and the API server's answer
— allowed with the mutated object, or denied with its message — is compared with celmut's on the same
policy and object (the offline engine, as ``celmut apply`` runs it). Prints one line per case and the
count of agreeing cases; with ``--record FILE`` writes the API server's answers as JSON, which the
test suite replays without a cluster (tests/runtime/test_typed_apply.py). Removes everything it
created. Not part of CI.

    python benchmarks/typed_apply_real.py [--kubeconfig PATH] [--record tests/data/typed-apply/v1.36.2.json]
        [--only ID,...]

Needs ``kubectl`` on PATH and a kubeconfig allowed to manage MutatingAdmissionPolicies (the
development rig's admin kubeconfig on a kube-apiserver v1.36).
"""

from __future__ import annotations

import argparse
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

from celmut.runtime import AdmissionInput  # noqa: E402
from tests.runtime.test_typed_apply import GROUPS, at, base_object, policy_engine  # noqa: E402
from tests.typed_apply_cases import CASES, Case  # noqa: E402

LABEL = "celmut-typed-apply-case"


def kubectl(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True, check=check, timeout=60)


def policy_documents(case: Case, name: str, run: str) -> list[dict[str, Any]]:
    group = GROUPS[case.resource]
    rules = [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": [case.resource]}]
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": rules},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": case.expression}}],
        },
    }
    selector = {"matchLabels": {LABEL: f"{run}-{case.id}"}}
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "matchResources": {"objectSelector": selector}},
    }
    return [policy, binding]


def case_object(case: Case, namespace: str, run: str) -> dict[str, Any]:
    obj = base_object(case.resource)
    obj["metadata"]["namespace"] = namespace
    obj["metadata"]["labels"][LABEL] = f"{run}-{case.id}"
    return obj


def dry_run(obj: dict[str, Any]) -> tuple[bool, Any]:
    """(allowed, the mutated object or the API server's message)."""
    done = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(obj), check=False)
    if done.returncode == 0:
        return True, json.loads(done.stdout)
    return False, done.stderr.strip()


def cause_of(message: str) -> str:
    """The API server's reason, without the policy and binding it names."""
    for marker in ("denied request: ", "error: "):
        if marker in message:
            message = message.split(marker, 1)[1]
    return message.removeprefix("Internal error occurred: ").strip()


def fields_of(case: Case, obj: dict[str, Any]) -> dict[str, Any]:
    path = case.expect[1] if case.expect[0] == "ok" else None
    if path is None:
        return {}
    try:
        return {path: at(obj, path)}
    except (KeyError, IndexError, TypeError):
        return {path: None}


CANARY = Case("canary", "canary", "", "configmaps", 'Object{data: {"canary": "yes"}}', ("ok", "data.canary", "yes"))


def wait_until_active(namespace: str, run: str, seconds: float = 90) -> None:
    """Until the canary policy (applied last) mutates its ConfigMap: the API server loads new policies
    asynchronously, the canary after the cases' own."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        allowed, answer = dry_run(case_object(CANARY, namespace, run))
        if allowed and (answer.get("data") or {}).get("canary") == "yes":
            time.sleep(2)
            return
        time.sleep(1)
    raise SystemExit("the policies did not take effect in time")


def celmut_answer(case: Case) -> tuple[bool, str, dict[str, Any]]:
    result = policy_engine("MutatingAdmissionPolicy", case.resource, case.expression).admit(
        AdmissionInput.from_object(base_object(case.resource))
    )
    return result.allowed, result.message, result.object if result.allowed else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--record", type=Path, help="write the API server's answers here (JSON)")
    parser.add_argument("--only", default="", help="comma-separated case ids")
    args = parser.parse_args()
    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig
    wanted = set(filter(None, args.only.split(",")))
    cases = [case for case in CASES if not wanted or case.id in wanted]
    run = uuid.uuid4().hex[:6]
    namespace = f"celmut-typed-apply-{run}"
    names = {case.id: f"celmut-typed-apply-{run}-{index}" for index, case in enumerate(cases)}
    names["canary"] = f"celmut-typed-apply-{run}-canary"
    version = json.loads(kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    kubectl("create", "namespace", namespace)
    try:
        documents = [doc for case in cases for doc in policy_documents(case, names[case.id], run)]
        kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}))
        canary = policy_documents(CANARY, names["canary"], run)
        kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": canary}))
        wait_until_active(namespace, run)
        answers, agree = [], 0
        for case in cases:
            allowed, answer = dry_run(case_object(case, namespace, run))
            message = "" if allowed else str(answer)
            record = {
                "id": case.id,
                "family": case.family,
                "upstream": case.upstream,
                "resource": case.resource,
                "expression": case.expression,
                "allowed": allowed,
                "message": message,
                "cause": "" if allowed else cause_of(message),
                "fields": fields_of(case, answer) if allowed else {},
            }
            answers.append(record)
            ok, text, obj = celmut_answer(case)
            same = ok == allowed and (
                (allowed and all(at(obj, p) == v for p, v in record["fields"].items()))
                or (not allowed and record["cause"] in text)
            )
            agree += same
            print(
                f"{'agree   ' if same else 'DISAGREE'} {case.family:15} {case.id:45} "
                f"{'allowed' if allowed else record['cause']}" + ("" if same else f"\n    celmut: {text or obj}")
            )
        print(f"\n{agree} of {len(cases)} cases agree with kube-apiserver {version}")
        if args.record:
            args.record.parent.mkdir(parents=True, exist_ok=True)
            args.record.write_text(json.dumps({"server": version, "cases": answers}, indent=1) + "\n")
    finally:
        for name in names.values():
            kubectl("delete", "mutatingadmissionpolicybinding", name, "--ignore-not-found", check=False)
            kubectl("delete", "mutatingadmissionpolicy", name, "--ignore-not-found", check=False)
        kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false", check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
