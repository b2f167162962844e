"""Issue 28: Kyverno's own reporting tests, run unchanged. Every chainsaw test stored under
tests/data/kyverno-chainsaw (kyverno/kyverno ``test/conformance/chainsaw/mutating-policies/reporting/``,
``mutating-admission-policy-reports/`` and ``mutating-policies/existing/reject-all-modes-disabled``) is one case, run by :mod:`tests.chainsaw.runner` against the
fake API server with celmut's webhook and controller in the loop. A case that cannot run here is skipped
with the reason; nothing in the upstream files is edited (the declared divergences are in the runner).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chainsaw.cases import cases, run_case
from tests.fakekube import FakeApiServer

CASES = cases("mutating-policies/reporting/", "mutating-admission-policy-reports/")

#: Cases that cannot run here, and why.
SKIPPED: dict[str, str] = {
    "mutating-admission-policy-reports/background/mutating-admission-policy-exclude": (
        "its configmap.yaml and policy.yaml are not in the stored upstream snapshot, and its check is a "
        "script (kubectl get policyreports) that needs kubectl against a real API server"
    ),
    "mutating-admission-policy-reports/background/with-binding-fail": (
        "its configmap.yaml and report-assert.yaml are not in the stored upstream snapshot"
    ),
    "mutating-admission-policy-reports/background/generated-reporting-opt-in": (
        "it reads the generated MutatingAdmissionPolicy through admissionregistration.k8s.io/v1beta1, which the "
        "fake API server does not serve (it serves MutatingAdmissionPolicy at v1 only); and celmut deliberately "
        "generates no MAP from this policy: it has a matchConstraints.objectSelector, which Kyverno's generator "
        "drops (the MAP would mutate every ConfigMap and Namespace), so the policy stays in celmut's webhook and its "
        "status says why. The labels it checks are carried (tests/controller/test_generator.py)"
    ),
    "mutating-admission-policy-reports/background/with-binding-pass": (
        "its configmap.yaml (the ConfigMap the MutatingAdmissionPolicy mutates) is not in the stored upstream snapshot"
    ),
}


#: Cases that run and fail at one known assertion — because the stored upstream files disagree with Kyverno
#: itself, or because celmut lacks what they check: (where it fails, why). Failing anywhere else, or not
#: failing, fails the test (fixing celmut or the data must update this table).
EXPECTED_FAILURES: dict[str, tuple[str, str]] = {
    "mutating-policies/reporting/admission": (
        "verify-policy-report/report.yaml: no PolicyReport matches:\n  "
        ".results[0].properties.process: expected 'admission review', found 'background scan'",
        "report.yaml as stored (72059afd) expects process 'admission review'; Kyverno's results.go selectProcess "
        "names the process after the policy's evaluation settings ('background scan' for this background-enabled "
        "policy), as the same file at ab7db575 and audit-annotations/report.yaml expect: celmut follows results.go",
    ),
    "mutating-policies/reporting/mutate-existing-background-policy-report": (
        "check reports/report.yaml: no PolicyReport matches:\n  .results[0].message: expected 'pass', found 'success'",
        "report.yaml (21ac184c) expects message 'pass' on the target mutateExisting patched; the same path "
        "(pkg/background/mpol/processor.go audit) reports 'success' in mutate-existing/report-assert.yaml "
        "(4ab279c1), which celmut follows",
    ),
}

#: Operations not run in a case, and why (``<step>/<file>``).
SKIPPED_OPERATIONS: dict[str, dict[str, str]] = {
    case: {
        "create good deployment/good-deployment-assert.yaml": (
            "snapshot skew: good-deployment-assert.yaml (09fa3155) expects image "
            "public.ecr.aws/docker/library/nginx:latest, the stored good-deployment.yaml (64b78654) creates nginx:latest"
        )
    }
    for case in (
        "mutating-policies/reporting/with-exceptions",
        "mutating-policies/reporting/with-exception-skip-result",
    )
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.fakekube(webhooks=True, native_map=True, garbage_collection=True)
def test_kyverno_chainsaw_reporting_test(case: str, fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    run_case(
        case,
        fake_apiserver,
        tmp_path,
        skipped=SKIPPED,
        expected_failures=EXPECTED_FAILURES,
        skipped_operations=SKIPPED_OPERATIONS,
    )
