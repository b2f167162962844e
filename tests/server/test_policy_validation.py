"""Invalid policies refused at ``kubectl apply``, as Kyverno refuses them: the controller's leader registers
the policy ValidatingWebhookConfiguration, the API server (the fake's copy of the validating dispatcher)
sends celmut's webhook the creations and updates of its policy kinds, and a policy that would not load is
never stored, with Kyverno's message (pkg/cel/policies/mpol/validate.go, pkg/webhooks/policy/handlers.go).

Around it, what a real cluster does: no other write is ever sent to it, so celmut being down blocks only
its own policy kinds (failurePolicy Fail, as Kyverno's policy webhook); next to Kyverno the
policies.kyverno.io kinds are Kyverno's to validate (one owner); the configuration goes with the ClusterRole
that owns it (uninstall, feature off, rollback); only the leader writes it; it carries the CA bundle."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from celmut.controller.policy_validation import PolicyValidationConfig
from celmut.controller.run import Controller
from celmut.install.webhook_config import WebhookSettings
from celmut.kube.client import Cluster, ClusterError
from tests.controller.support import connect
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.kube.crds import kyvernos_crd, policy_crds
from tests.server.support import RunningServer, admission_request
from tests.server.test_managed_webhook_rules import managed

Obj = dict[str, Any]
VWC = "admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
NAME = "celmut-policy-validation"
MPOL = ("policies.kyverno.io/v1", "mutatingpolicies")
PODMUTATION = ("pod-mutations.cast.ai/v1", "podmutations")
WEBHOOK = "policies.validate.celmut.io"
EVALUATION_FORBIDDEN = (
    "spec.evaluation: Forbidden: disabling both admission and mutateExisting evaluation modes is not allowed"
)


def policy(name: str, expression: str = "[]", **spec: Any) -> Obj:
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {"resourceRules": rules},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
            **spec,
        },
    }


NO_MODE = {"evaluation": {"admission": {"enabled": False}, "mutateExisting": {"enabled": False}}}


def configuration(fake: FakeApiServer) -> Obj | None:
    return next((c for c in fake.store.list(VWC) if c["metadata"]["name"] == NAME), None)


def validated_resources(fake: FakeApiServer) -> set[str]:
    config = configuration(fake) or {}
    return {r for w in config.get("webhooks") or [] for rule in w["rules"] for r in rule["resources"]}


@contextmanager
def guarded(
    fake: FakeApiServer, tmp_path: Path, *, controllers: int = 1, crds: list[Obj] | None = None
) -> Iterator[tuple[RunningServer, list[Controller]]]:
    """celmut as the chart installs it: the webhook behind its Service, the controller keeping both webhook
    configurations, each owned by its chart ClusterRole."""
    for definition in crds if crds is not None else policy_crds():
        if not fake.store.exists("customresourcedefinitions", definition["metadata"]["name"]):
            fake.store.create(definition)
    validation = PolicyValidationConfig(
        WebhookSettings(), name=NAME, owner_cluster_role=NAME, ca_from="celmut", resync_seconds=0.2
    )
    with managed(fake, tmp_path, controllers=controllers, policy_validation=validation) as (servers, started):
        eventually(lambda: configuration(fake) is not None, timeout=15, what="the policy validating webhook")
        yield servers[0], started


def create(fake: FakeApiServer, tmp_path: Path, api: tuple[str, str], obj: Obj) -> Obj:
    """Through the API, as ``kubectl apply`` of a new object does; ClusterError carries the answer."""
    cluster: Cluster = connect(fake, tmp_path, "user")
    try:
        created: Obj = cluster.create(*api, "", obj)
        return created
    finally:
        cluster.close()


def refusal(fake: FakeApiServer, tmp_path: Path, api: tuple[str, str], obj: Obj) -> tuple[int, str]:
    with pytest.raises(ClusterError) as refused:
        create(fake, tmp_path, api, obj)
    return refused.value.status, str(refused.value)


@pytest.mark.fakekube(webhooks=True)
def test_an_invalid_policy_is_refused_at_creation_with_kyvernos_message(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    with guarded(fake_apiserver, tmp_path):
        status, message = refusal(fake_apiserver, tmp_path, MPOL, policy("no-mode", **NO_MODE))
        assert status == 400  # a Failure with no code: the API server makes it 400 (webhookerrors.ToStatusErr)
        assert f'admission webhook "{WEBHOOK}" denied the request: {EVALUATION_FORBIDDEN}' in message
        status, message = refusal(fake_apiserver, tmp_path, MPOL, policy("bad-cel", "[JSONPatch{op: 1}"))
        assert (
            'denied the request: spec.mutations[0].jsonPatch.expression: Invalid value: "[JSONPatch{op: 1}": '
            in message
        )
        assert "ERROR: <input>:1:" in message
        assert not fake_apiserver.store.exists(MPOL[1], "no-mode") and not fake_apiserver.store.exists(
            MPOL[1], "bad-cel"
        )
        create(fake_apiserver, tmp_path, MPOL, policy("fine"))  # a valid one is stored
        bad_preset = {"apiVersion": "pod-mutations.cast.ai/v1", "kind": "PodMutation", "metadata": {"name": "p"}}
        bad_preset["spec"] = {"filterV2": {"workload": {"names": [{"type": "regex", "value": "("}]}}}
        status, message = refusal(fake_apiserver, tmp_path, PODMUTATION, bad_preset)
        assert status == 400 and "spec.filterV2.workload.names[0].value: Invalid value: invalid regular" in message
        cluster = connect(fake_apiserver, tmp_path, "user")
        try:  # an update is validated too
            stored = cluster.get(*MPOL, "", "fine")
            stored["spec"]["evaluation"] = NO_MODE["evaluation"]
            with pytest.raises(ClusterError) as refused:
                cluster.replace(*MPOL, "", "fine", stored)
            assert EVALUATION_FORBIDDEN in str(refused.value)
            cluster.create("v1", "configmaps", "default", {"metadata": {"name": "cm"}})
        finally:
            cluster.close()
    calls = fake_apiserver.validating_webhooks.calls_to(WEBHOOK)  # type: ignore[union-attr]
    assert {c.kind for c in calls} == {"MutatingPolicy", "PodMutation"}  # never the ConfigMap


@pytest.mark.fakekube(webhooks=True)
def test_celmut_down_refuses_only_its_own_policy_kinds(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """failurePolicy Fail as Kyverno's policy webhook: an unchecked policy is never stored, and no other
    write is ever sent to the webhook, so none waits for it."""
    with guarded(fake_apiserver, tmp_path):
        assert configuration(fake_apiserver)["webhooks"][0]["failurePolicy"] == "Fail"  # type: ignore[index]
        create(fake_apiserver, tmp_path, MPOL, policy("before"))
        fake_apiserver.webhooks.register_service("celmut", "celmut")  # type: ignore[union-attr]  # no endpoint left
        status, message = refusal(fake_apiserver, tmp_path, MPOL, policy("while-down"))
        assert status == 500 and f'failed calling webhook "{WEBHOOK}"' in message
        cluster = connect(fake_apiserver, tmp_path, "user")
        try:
            cluster.create("v1", "configmaps", "default", {"metadata": {"name": "cm"}})  # unrelated: written
            cluster.delete(*MPOL, "", "before")  # a DELETE is never sent to it: a policy can always be removed
        finally:
            cluster.close()
        assert not fake_apiserver.store.exists(MPOL[1], "before")


@pytest.mark.fakekube(webhooks=True)
def test_next_to_kyverno_its_policy_kinds_are_left_to_its_webhooks(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """One owner: Kyverno validates the policies.kyverno.io kinds with its own webhooks; celmut keeps
    validating its preset kinds, and takes the others back when Kyverno leaves."""
    crds = [
        kyvernos_crd(),
        *(c for c in policy_crds() if c["metadata"]["name"] != "mutatingpolicies.policies.kyverno.io"),
    ]
    with guarded(fake_apiserver, tmp_path, crds=crds):
        eventually(
            lambda: validated_resources(fake_apiserver) == {"podmutations", "gpuslicings", "podpinningplans"},
            timeout=15,
            what="the policies.kyverno.io kinds left to Kyverno",
        )
        create(fake_apiserver, tmp_path, MPOL, policy("kyvernos", **NO_MODE))  # not celmut's to refuse
        crd = fake_apiserver.store.get("customresourcedefinitions", "mutatingpolicies.policies.kyverno.io")
        crd["metadata"]["labels"] = {"app.kubernetes.io/part-of": "celmut"}  # Kyverno gone, celmut's CRD again
        fake_apiserver.store.update(crd)
        eventually(lambda: "mutatingpolicies" in validated_resources(fake_apiserver), timeout=15, what="the kinds back")
        assert EVALUATION_FORBIDDEN in refusal(fake_apiserver, tmp_path, MPOL, policy("celmuts", **NO_MODE))[1]


@pytest.mark.fakekube(webhooks=True)
def test_the_configuration_goes_with_its_clusterrole_and_only_the_leader_writes_it(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """helm uninstall, policyValidation.enabled false or a rollback to a chart without it deletes the
    ClusterRole; the garbage collector then deletes the configuration — a Fail webhook never outlives
    what serves it. Of two controllers, the standby writes nothing."""
    with guarded(fake_apiserver, tmp_path, controllers=2) as (_, controllers):
        config = configuration(fake_apiserver)
        assert config is not None
        assert [r["name"] for r in config["metadata"]["ownerReferences"]] == [NAME]
        bundle = config["webhooks"][0]["clientConfig"]["caBundle"]  # the mutating one's: callable at once
        assert base64.b64decode(bundle).startswith(b"-----BEGIN CERTIFICATE-----")
        leader = next(c for c in controllers if c.is_leader())
        standby = next(c for c in controllers if c is not leader)
        assert standby.policy_validation is not None and standby.policy_validation.writes == 0
        leader.stop()
        fake_apiserver.store.delete("rbac.authorization.k8s.io/v1/clusterroles", NAME)
        eventually(lambda: configuration(fake_apiserver) is None, timeout=15, what="the configuration collected")


def test_the_endpoint_answers_as_kyvernos_policy_webhook(tmp_path: Path) -> None:
    """``admissionutils.Response(uid, err, warnings...)``: a Failure status with the aggregated field errors, the
    same errors as warnings; a valid policy allowed, a DELETE (no object) allowed."""
    from tests.server.support import running_server

    (tmp_path / "policies").mkdir()
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server, server.client() as client:

        def answer(obj: Obj | None, operation: str = "CREATE") -> Obj:
            request = admission_request(obj, operation=operation, oldObject=None if obj else policy("gone"))
            review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
            reply = client.post("/validate/policies", content=json.dumps(review))
            assert reply.status_code == 200, reply.text
            response: Obj = reply.json()["response"]
            return response

        refused = answer(policy("p", **NO_MODE))
        assert refused["allowed"] is False and refused["status"] == {
            "status": "Failure",
            "message": EVALUATION_FORBIDDEN,
        }
        assert refused["warnings"] == [EVALUATION_FORBIDDEN]
        both = answer(policy("p", "1 +", **NO_MODE, matchConstraints={}))
        assert both["status"]["message"].startswith("[spec.matchConstraints: Required value: a matchConstraints")
        assert answer(policy("p"))["allowed"] is True
        assert answer(None, "DELETE")["allowed"] is True
        assert (
            'celmut_policy_validations_total{kind="MutatingPolicy",result="refused"} 2.0' in client.get("/metrics").text
        )
