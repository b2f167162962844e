"""The webhook's voice on provenance (issue 18): ``auditAnnotations`` naming the pointers each applied
policy changed and why the others did not apply, the opt-in ``celmut.io/mutated-by`` summary, and
``celmut_mutations_total`` — over the real HTTPS server, and through the fake API server's admission
chain, which adds audit annotations as kube-apiserver does (``<webhook>/<key>``, invalid keys dropped)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonpatch as rfc6902
import kubernetes.client
import pytest
import yaml

from celmut.runtime import AdmissionInput
from celmut.runtime.provenance import MUTATED_BY_ANNOTATION, from_outcomes, pointers_by_policy
from celmut.server.audit import MAX_VALUE_BYTES, is_valid_key, provenance_annotations
from tests.fakekube import FakeApiServer
from tests.fakekube.webhooks import audit_key_error
from tests.runtime.helpers import admit, engine, jsonpatch, mpol, pod

from .in_cluster import celmut_in_cluster, wait_for_policies
from .support import admission_request, decoded_patch, running_server

DATA = Path(__file__).resolve().parents[1] / "data" / "provenance"
POLICIES = str(DATA / "policies.yaml")
SKIPPED = {
    "prod-only": "matchCondition is-prod",
    "tier-label": "PolicyException shop/skip-web",
    "flaky": "error (failurePolicy Ignore): spec.mutations[0].jsonPatch.expression: no such key: missing",
}
APPLIED = {"add-team": {"add": ["/metadata/labels/team", "/metadata/annotations"]}}


def shop_pod() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DATA / "pod.yaml").read_text())
    return loaded


def test_the_response_names_each_policys_pointers_and_each_skip_with_its_reason(tmp_path: Path) -> None:
    with running_server(tmp_path, [POLICIES]) as server:
        review = server.review(admission_request(shop_pod()))
        response = review["response"]
        annotations = response["auditAnnotations"]
        assert set(annotations) == {"applied", "skipped"}
        assert json.loads(annotations["applied"]) == APPLIED
        assert json.loads(annotations["skipped"]) == SKIPPED  # deployments-only never selected pods: left out
        for key in annotations:  # as kube-apiserver checks them once prefixed with the webhook's name
            assert is_valid_key(key) and audit_key_error(f"fail.mutate.celmut.io/{key}") == ""
        assert MUTATED_BY_ANNOTATION not in json.dumps(decoded_patch(review))  # not asked for

        with server.client() as client:
            metrics = client.get("/metrics").text
        for policy, outcome in [("add-team", "applied"), ("prod-only", "skipped"), ("tier-label", "excepted"), ("flaky", "error")]:
            assert f'celmut_mutations_total{{outcome="{outcome}",policy="{policy}"}} 1.0' in metrics
        assert 'policy="deployments-only"' not in metrics.split("celmut_mutations_total", 1)[1].split("# HELP")[0]


def test_record_provenance_writes_the_summary_on_the_object(tmp_path: Path) -> None:
    with running_server(tmp_path, [POLICIES], record_provenance=True) as server:
        review = server.review(admission_request(shop_pod()))
    admitted = rfc6902.apply_patch(shop_pod(), decoded_patch(review))  # as the API server applies it
    annotations = admitted["metadata"]["annotations"]
    assert annotations["owner"] == "payments"
    assert json.loads(annotations[MUTATED_BY_ANNOTATION]) == {
        "add-team": ["/metadata/labels/team", "/metadata/annotations"]
    }
    applied = json.loads(review["response"]["auditAnnotations"]["applied"])
    assert applied["celmut"] == {"add": ["/metadata/annotations/celmut.io~1mutated-by"]}


def test_a_denied_request_reports_the_failing_policy_and_nothing_applied() -> None:
    failing = mpol("must-work", jsonpatch('[JSONPatch{op: "add", path: "/x", value: object.metadata.missing}]'))
    first = mpol("a-first", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/a", value: "1"}]'))
    result = admit(engine(first + "---" + failing), pod())
    assert not result.allowed
    annotations = provenance_annotations(result)
    assert "applied" not in annotations
    assert json.loads(annotations["skipped"]) == {
        "must-work": "error (failurePolicy Fail): spec.mutations[0].jsonPatch.expression: no such key: missing"
    }


@pytest.mark.parametrize("record", [False, True], ids=["audit annotations only", "with the mutated-by summary"])
def test_the_per_request_attribution_agrees_with_the_provenance_model(record: bool) -> None:
    """The webhook attributes pointers without building provenance records (``pointers_by_policy``):
    the same policies, ops and pointers as ``from_outcomes(...).by_policy()``, celmut's own change
    included when the summary is recorded; and steps (explaining) fall back to the model."""
    eng = engine(Path(POLICIES).read_text(), cluster=[], record_provenance=record)
    result = eng.admit(AdmissionInput.from_object(shop_pod()))
    model = from_outcomes(result.outcomes, result.object, patch=result.patch)
    found = pointers_by_policy(result.outcomes, result.object, result.patch)
    assert found == (model.by_policy(), {m.policy for m in model.applied})
    assert ("celmut" in found[0]) is record
    explained = eng.admit(AdmissionInput.from_object(shop_pod()), explain=True)
    assert pointers_by_policy(explained.outcomes, explained.object, explained.patch) is None


def test_each_value_stays_within_10_kib() -> None:
    """kube-apiserver truncates a ValidatingAdmissionPolicy's audit value at 10 KiB; celmut's stay under it
    and say how many entries they left out."""
    name = "a-policy-with-a-long-name-" + "x" * 150
    many = "---".join(
        mpol(f"{name}-{i:03d}", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/a", value: "1"}]'),
             extra="  matchConditions: [{name: never, expression: 'false'}]")
        for i in range(80)
    )
    skipped = provenance_annotations(admit(engine(many), pod()))["skipped"]
    assert len(skipped.encode()) <= MAX_VALUE_BYTES
    shown = json.loads(skipped)
    assert shown["…"] == f"+{80 - (len(shown) - 1)} more" and len(shown) > 40


def test_through_the_api_server_each_webhook_adds_its_own_annotations(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """The chart's two webhooks each run the policies of their failurePolicy: kube-apiserver keeps both
    webhooks' annotations under their own names, and drops none."""
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    with celmut_in_cluster(fake_apiserver, tmp_path, policy_paths=(POLICIES,)) as servers:
        wait_for_policies(servers, "add-team", "flaky")
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        created = core.create_namespaced_pod("shop", shop_pod())
        assert created.metadata.labels["team"] == "payments"
    calls = fake_apiserver.webhooks.calls_to(kind="Pod")
    assert calls and all(call.audit_dropped == () for call in calls)
    recorded = {key: json.loads(value) for call in calls for key, value in call.audit_annotations}
    assert recorded == {
        "fail.mutate.celmut.io/applied": APPLIED,
        "fail.mutate.celmut.io/skipped": {k: v for k, v in SKIPPED.items() if k != "flaky"},
        "ignore.mutate.celmut.io/skipped": {"flaky": SKIPPED["flaky"]},
    }


def test_the_fake_api_server_drops_keys_kube_apiserver_refuses() -> None:
    """The model the test above relies on: checkKeyFormat and IsQualifiedName."""
    assert audit_key_error("fail.mutate.celmut.io/applied") == ""
    assert audit_key_error("fail.mutate.celmut.io/add-team/x")  # two slashes
    assert audit_key_error("fail.mutate.celmut.io/" + "a" * 64)  # a name over 63 characters
    assert audit_key_error("fail.mutate.celmut.io/-leading")
    assert not is_valid_key("a/b") and not is_valid_key("a" * 64) and is_valid_key("skipped")



IGNORED_LABEL = {
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "MutatingPolicy",
    "metadata": {"name": "cost-center"},
    "spec": {
        "failurePolicy": "Ignore",
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": {
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
        },
        "mutations": [
            {
                "patchType": "JSONPatch",
                "jsonPatch": {"expression": '[JSONPatch{op: "add", path: "/metadata/labels/cost-center", value: "42"}]'},
            }
        ],
    },
}


def test_a_reinvoked_webhook_answers_so_that_no_annotation_is_dropped(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """With reinvocationPolicy IfNeeded, the Ignore webhook's change makes kube-apiserver call the Fail
    webhook again; its second answer changes nothing, so it carries no 'applied' and the same
    'skipped': nothing the API server would refuse to overwrite."""
    from celmut.install.manifests import InstallOptions, webhook_configuration

    extra = tmp_path / "cost-center.yaml"
    extra.write_text(yaml.safe_dump(IGNORED_LABEL))
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    configuration = webhook_configuration(InstallOptions(reinvocation_policy="IfNeeded"))
    with celmut_in_cluster(
        fake_apiserver, tmp_path, policy_paths=(POLICIES, str(extra)), configuration=configuration
    ) as servers:
        wait_for_policies(servers, "add-team", "cost-center")
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        created = core.create_namespaced_pod("shop", shop_pod())
        assert created.metadata.labels == {"app": "web", "team": "payments", "cost-center": "42"}
    calls = fake_apiserver.webhooks.calls_to(webhook="fail.mutate.celmut.io", kind="Pod")
    assert [c.reinvoke for c in calls] == [False, True]
    assert all(call.audit_dropped == () for call in fake_apiserver.webhooks.calls_to(kind="Pod"))
    first, again = (dict(c.audit_annotations) for c in calls)
    assert "fail.mutate.celmut.io/applied" in first and "fail.mutate.celmut.io/applied" not in again
    assert again["fail.mutate.celmut.io/skipped"] == first["fail.mutate.celmut.io/skipped"]
