"""Issue 19: the controller's leader keeps a native MutatingAdmissionPolicy for each MutatingPolicy with
``spec.autogen.mutatingAdmissionPolicy.enabled`` — as Kyverno's generator does
(kyverno pkg/controllers/admissionpolicygenerator: generate-map.go, map.go, polex.go; builder.go) — and
repairs, regenerates and deletes it as the cluster changes. Against the fake API server, through the
real client; the fake's garbage collector is on where deletion with the policy is the point."""

from __future__ import annotations

import copy
import datetime
from pathlib import Path
from typing import Any

import pytest

from celmut.controller.generator import CONDITION_TYPE, NO_API, AdmissionPolicyGenerator
from celmut.kube.client import Cluster
from tests.fakekube import FakeApiServer
from tests.fakekube.defaults import admission_policy_defaults
from tests.kube.conftest import eventually, label_policy
from tests.kube.crds import crds_next_to_kyverno, policy_crds

from .support import running

Obj = dict[str, Any]
MPOL = "mutatingpolicies.policies.kyverno.io"
MAPS = "admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
BINDINGS = "admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings"


def native(name: str = "team", **spec: Any) -> Obj:
    """A MutatingPolicy asking for a MutatingAdmissionPolicy (a pod label, no autogen variants)."""
    policy = label_policy(name)
    policy["spec"]["autogen"] = {"podControllers": {"controllers": []}, "mutatingAdmissionPolicy": {"enabled": True}}
    policy["spec"].update(spec)
    return policy


def exception(name: str, policy: str, *conditions: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "PolicyException",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "policyRefs": [{"name": policy, "kind": "MutatingPolicy"}],
            "matchConditions": [{"name": f"{name}-{i}", "expression": c} for i, c in enumerate(conditions)],
            **spec,
        },
    }


def stored(fake: FakeApiServer, resource: str, name: str) -> Obj | None:
    return fake.store.get(resource, name) if fake.store.exists(resource, name) else None


def status(fake: FakeApiServer, name: str) -> Obj:
    return dict(fake.store.get(MPOL, name).get("status") or {})


def condition(fake: FakeApiServer, name: str) -> Obj | None:
    conditions = (status(fake, name).get("conditionStatus") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == CONDITION_TYPE), None)


@pytest.fixture
def cluster_crds(fake_apiserver: FakeApiServer) -> FakeApiServer:
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    return fake_apiserver


def no_files(tmp_path: Path) -> Path:
    (tmp_path / "none").mkdir(exist_ok=True)
    return tmp_path / "none"


def generated(fake: FakeApiServer, name: str = "team") -> bool:
    return stored(fake, MAPS, f"mpol-{name}") is not None and stored(fake, BINDINGS, f"mpol-{name}-binding") is not None


def test_a_policy_asking_for_one_gets_a_labelled_owned_map_and_binding_and_kyvernos_status(
    cluster_crds: FakeApiServer, tmp_path: Path
) -> None:
    """builder.go: names mpol-<name>/-binding, the managed-by label, one ownerReference to the policy
    (no controller, no blockOwnerDeletion); controller.go updatePolicyStatus: generated=true, message ""."""
    fake = cluster_crds
    fake.store.create(native())
    uid = fake.store.get(MPOL, "team")["metadata"]["uid"]
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True) as controller:
        eventually(lambda: generated(fake) and status(fake, "team").get("generated") is True, what="the MAP")
        assert controller.metrics.generated.labels("created")._value.get() == 2  # the MAP and its binding
    policy = fake.store.get(MAPS, "mpol-team")
    binding = fake.store.get(BINDINGS, "mpol-team-binding")
    owner = [{"apiVersion": "policies.kyverno.io/v1beta1", "kind": "MutatingPolicy", "name": "team", "uid": uid}]
    for obj in (policy, binding):
        assert obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "celmut"}
        assert obj["metadata"]["ownerReferences"] == owner
    assert binding["spec"] == {"policyName": "mpol-team"}
    assert policy["spec"]["mutations"] == label_policy("team")["spec"]["mutations"]
    assert policy["spec"]["reinvocationPolicy"] == "Never" and policy["spec"]["failurePolicy"] == "Fail"
    assert status(fake, "team")["conditionStatus"]["message"] == ""
    found = condition(fake, "team")
    assert found is not None and found["status"] == "True"
    assert "mpol-team and mpol-team-binding" in found["message"]


def test_hand_edits_and_deletions_are_repaired(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    """map.go updateMAP/deleteMAP requeue the owner, which rebuilds the spec (a hand edit is reverted)
    and re-creates what was deleted."""
    fake = cluster_crds
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        edited = fake.store.get(MAPS, "mpol-team")
        original = copy.deepcopy(edited["spec"])
        edited["spec"]["mutations"][0]["jsonPatch"]["expression"] = "[]"
        fake.store.update(edited)
        eventually(lambda: fake.store.get(MAPS, "mpol-team")["spec"] == original, what="the edit reverted")
        fake.store.delete(BINDINGS, "mpol-team-binding")
        eventually(lambda: stored(fake, BINDINGS, "mpol-team-binding") is not None, what="the binding re-created")
        fake.store.delete(MAPS, "mpol-team")
        eventually(lambda: stored(fake, MAPS, "mpol-team") is not None, what="the MAP re-created")


def test_an_owner_reference_an_older_celmut_wrote_is_repaired_to_v1beta1(
    cluster_crds: FakeApiServer, tmp_path: Path
) -> None:
    """Issue 25 item 8: MAPs generated before named policies.kyverno.io/v1; the generator rewrites the
    reference as kyverno builder.go mutatingPolicyOwnerRef writes it (v1beta1), the rest unchanged."""
    fake = cluster_crds
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        older = fake.store.get(MAPS, "mpol-team")
        older["metadata"]["ownerReferences"][0]["apiVersion"] = "policies.kyverno.io/v1"
        fake.store.update(older)

        def owner_version() -> str:
            return str(fake.store.get(MAPS, "mpol-team")["metadata"]["ownerReferences"][0]["apiVersion"])

        eventually(lambda: owner_version() == "policies.kyverno.io/v1beta1", what="the reference repaired")


def test_exceptions_are_folded_in_and_out_as_they_come_and_go(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    """polex.go requeues the policies an exception names; builder.go negateExceptionMatchConditions puts
    each exception first, negated; celmut negates all conditions of one exception together (its engine
    skips only when all hold) and leaves out an expired one (kyverno/api IsExpired)."""
    fake = cluster_crds
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        opt_out = {
            "name": "celmut.io/not-opted-out",
            "expression": '!("celmut.io/ignore" in object.metadata.?labels.orValue({}))',
        }
        assert fake.store.get(MAPS, "mpol-team")["spec"]["matchConditions"] == [opt_out]
        fake.store.create(exception("skip-system", "team", 'request.namespace == "kube-system"', "true"))
        fake.store.create(exception("expired", "team", "true", expiresAt="2020-01-01T00:00:00Z"))

        def conditions() -> list[Obj]:
            found = fake.store.get(MAPS, "mpol-team")["spec"].get("matchConditions") or []
            return [c for c in found if c != opt_out]

        eventually(lambda: len(conditions()) == 1, what="the exception folded in")
        assert conditions() == [
            {"name": "skip-system-0", "expression": '!((request.namespace == "kube-system") && (true))'}
        ]
        fake.store.delete("policyexceptions.policies.kyverno.io", "skip-system", "default")
        eventually(lambda: not conditions(), what="the exception taken out")


@pytest.mark.fakekube(garbage_collection=True)
def test_deleting_the_policy_deletes_its_map_through_garbage_collection(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = fake_apiserver
    for definition in policy_crds():
        fake.store.create(definition)
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        fake.store.delete(MPOL, "team")
        eventually(lambda: not fake.store.list(MAPS) and not fake.store.list(BINDINGS), what="GC")


def test_turning_generation_off_deletes_the_map_and_says_generated_false(
    cluster_crds: FakeApiServer, tmp_path: Path
) -> None:
    """Kyverno with its toggle off leaves the MAP applied (controller.go reconcile returns early); celmut
    deletes it, or the policy would be applied by the MAP and by celmut's webhook."""
    fake = cluster_crds
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        policy = fake.store.get(MPOL, "team")
        policy["spec"]["autogen"]["mutatingAdmissionPolicy"]["enabled"] = False
        fake.store.update(policy)
        eventually(lambda: not fake.store.list(MAPS) and not fake.store.list(BINDINGS), what="the MAP deleted")
        eventually(lambda: status(fake, "team").get("generated") is False, what="generated=false")
        eventually(lambda: condition(fake, "team") is None, what="celmut's condition removed")


def test_a_kyverno_only_library_is_refused_before_the_api_server_sees_it(
    cluster_crds: FakeApiServer, tmp_path: Path
) -> None:
    fake = cluster_crds
    expression = '[JSONPatch{op: "add", path: "/metadata/labels/x", value: resource.Get("v1", "configmaps", "a", "b").metadata.name}]'
    fake.store.create(native(mutations=[{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}]))
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: status(fake, "team").get("generated") is False, what="the status")
    message = status(fake, "team")["conditionStatus"]["message"]
    assert message.startswith(
        "failed to generate MutatingAdmissionPolicy: mpol-team: spec.mutations[0].jsonPatch: resource.Get: only Kyverno's"
    )
    assert not fake.requests_matching("POST", "mutatingadmissionpolicies")
    found = condition(fake, "team")
    assert found is not None and found["status"] == "False" and found["message"] == message


def test_a_map_the_api_server_refuses_leaves_the_status_false_with_its_reason_and_is_retried(
    cluster_crds: FakeApiServer, tmp_path: Path
) -> None:
    """controller.go: failed to generate MutatingAdmissionPolicy: <name>: failed to create … : <server error>."""
    fake = cluster_crds
    fake.fail_next(
        "POST", "/mutatingadmissionpolicies$", 422, times=None, reason="Invalid", message="refused by the test"
    )
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True) as controller:
        eventually(lambda: "refused by the test" in str(status(fake, "team")), what="the server's reason")
        assert status(fake, "team")["generated"] is False
        assert not fake.store.list(BINDINGS)
        fake.clear_faults()
        assert controller.generator is not None
        controller.generator.retry_seconds = 0.0
        controller.generator._next = 0.0  # the retry is due (30 s in service)
        eventually(lambda: generated(fake), what="the retry")
        eventually(lambda: status(fake, "team").get("generated") is True, what="generated=true")


def test_a_map_of_that_name_that_is_not_celmuts_is_left_alone(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    fake = cluster_crds
    theirs = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "mpol-team", "labels": {"app.kubernetes.io/managed-by": "kyverno"}},
        "spec": {"matchConstraints": {"resourceRules": []}, "mutations": [], "reinvocationPolicy": "Never"},
    }
    fake.store.create(theirs)
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: "is not celmut's" in str(status(fake, "team")), what="the status")
    assert fake.store.get(MAPS, "mpol-team")["spec"] == admission_policy_defaults(copy.deepcopy(theirs))["spec"]
    assert not fake.store.list(BINDINGS)


def test_no_map_api_gets_kyvernos_message(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    """generate-map.go preferredMAPVersion: no MAP informers → Kyverno's skip message."""
    fake = cluster_crds
    fake.fail_next("GET", "^/apis/admissionregistration.k8s.io$", 404, times=None)
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: status(fake, "team").get("conditionStatus", {}).get("message") == NO_API, what="the status")


def test_next_to_kyverno_celmut_generates_nothing(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake = fake_apiserver
    for definition in crds_next_to_kyverno():
        fake.store.create(definition)
    policy = native()
    policy["metadata"]["labels"] = {"celmut.io/owner": "celmut"}
    fake.store.create(policy)
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: condition(fake, "team") is not None, what="celmut's condition")
    found = condition(fake, "team")
    assert found is not None and found["reason"] == "KyvernoDetected"
    assert "generated" not in status(fake, "team") and "message" not in status(fake, "team").get("conditionStatus", {})
    assert not fake.store.list(MAPS)


def test_a_changed_policy_updates_its_map(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    """mpol.go updateMP requeues on a spec change; controllerutils.Update rewrites the MAP's spec."""
    fake = cluster_crds
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        policy = fake.store.get(MPOL, "team")
        changed = '[JSONPatch{op: "add", path: "/metadata/labels/changed", value: "yes"}]'
        policy["spec"]["mutations"] = [{"patchType": "JSONPatch", "jsonPatch": {"expression": changed}}]
        fake.store.update(policy)
        eventually(
            lambda: fake.store.get(MAPS, "mpol-team")["spec"]["mutations"] == policy["spec"]["mutations"],
            what="the MAP updated",
        )
    assert status(fake, "team")["generated"] is True


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"evaluation": {"useServerSideApply": True}},
            "skip generating MutatingAdmissionPolicy: useServerSideApply is enabled, which mutates atomic fields "
            "that a native MutatingAdmissionPolicy rejects.",
        ),
        (
            {
                "variables": [{"name": "ns", "expression": "request.namespace"}],
                "matchConditions": [{"name": "shop", "expression": 'variables.ns == "shop"'}],
            },
            "skip generating MutatingAdmissionPolicy: spec.matchConditions[0] (shop) uses variables, which the match "
            "conditions of a MutatingAdmissionPolicy cannot see; the policy stays in celmut's webhook",
        ),
    ],
    ids=["generate-map.go mapFullSkipReason: useServerSideApply", "kyverno/api Variables: not in matchConditions"],
)
def test_a_policy_that_stops_converting_loses_its_map_and_says_why(
    cluster_crds: FakeApiServer, tmp_path: Path, spec: Obj, message: str
) -> None:
    """generate-map.go: a whole-policy blocker deletes the owned MAP and binding, generated=false + reason."""
    fake = cluster_crds
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        policy = fake.store.get(MPOL, "team")
        policy["spec"].update(spec)
        fake.store.update(policy)
        eventually(lambda: not fake.store.list(MAPS) and not fake.store.list(BINDINGS), what="the MAP deleted")
        eventually(lambda: status(fake, "team").get("generated") is False, what="generated=false")
    assert status(fake, "team")["conditionStatus"]["message"] == message
    found = condition(fake, "team")
    assert found is not None and found["status"] == "False" and found["message"] == message


def test_generated_maps_survive_while_the_policy_api_is_not_served(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    """A moment of failing discovery must not read as "no policies" and delete every generated MAP (the
    webhook would then serve them again, and the MAPs be re-created: churn with no reason)."""
    fake = cluster_crds
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
    fake.fail_next("GET", "^/apis/policies.kyverno.io", 503, times=None)
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True) as controller:
        assert controller.generator is not None and controller.policy_source is not None
        outcome = controller.generator.sync(controller.policy_source)
        assert outcome.deleted == [] and generated(fake)


def test_once_in_sync_a_pass_writes_nothing(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    """The API server's defaults (admissionregistration/v1 defaults.go; the fake applies them) are not a
    hand edit: otherwise every pass rewrites the MAP, whose watch event triggers the next pass, forever."""
    fake = cluster_crds
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True) as controller:
        eventually(lambda: generated(fake) and status(fake, "team").get("generated") is True, what="the MAP")
        assert controller.generator is not None and controller.policy_source is not None
        eventually(lambda: controller.policy_source is not None and bool(controller.policy_source.objects_of(
            "MutatingAdmissionPolicyBinding")), what="the source seeing the binding")  # fmt: skip
        assert fake.store.get(MAPS, "mpol-team")["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
        outcome = controller.generator.sync(controller.policy_source)
        assert (outcome.created, outcome.updated, outcome.deleted, outcome.failed) == ([], [], [], [])
        # A new leader (nothing remembered of what it wrote) finds nothing to rewrite either.
        fresh = AdmissionPolicyGenerator(controller.generator.cluster, opt_out_label=controller.generator.opt_out_label)
        outcome = fresh.sync(controller.policy_source)
        assert (outcome.created, outcome.updated, outcome.deleted, outcome.failed) == ([], [], [], [])


@pytest.mark.fakekube(webhooks=True)
def test_a_webhook_registered_for_maps_is_never_called_and_a_hand_edit_is_repaired(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """No mutating webhook can change what the generator writes: kube-apiserver sends no admission
    configuration object — MutatingAdmissionPolicies and their bindings included — to any webhook
    (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules/rules.go
    ``IsExemptAdmissionConfigurationResource``), so what is stored is what was written (with the API
    server's defaults) and the generator settles; a later hand edit is still repaired."""
    from tests.fakekube.stub_webhook import StubWebhook, configuration

    fake = fake_apiserver
    for definition in policy_crds():
        fake.store.create(definition)
    guard = {"name": "guard", "expression": "true"}

    def add_guard(request: Obj) -> tuple[list[Obj] | None, str | None]:
        return [{"op": "add", "path": "/spec/matchConditions/-", "value": guard}], None

    with StubWebhook(tmp_path, add_guard) as stub:
        rules = [{"apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["v1"],
                  "operations": ["CREATE", "UPDATE"], "resources": ["mutatingadmissionpolicies"]}]  # fmt: skip
        fake.store.create(configuration("guard", stub.registration("guard.example.io", rules)))
        fake.store.create(native())
        with running(fake, tmp_path, no_files(tmp_path), from_cluster=True) as controller:
            eventually(lambda: generated(fake) and status(fake, "team").get("generated") is True, what="the MAP")
            assert controller.generator is not None and controller.policy_source is not None
            assert guard not in fake.store.get(MAPS, "mpol-team")["spec"]["matchConditions"]
            outcome = controller.generator.sync(controller.policy_source)
            assert (outcome.created, outcome.updated) == ([], [])
            edited = fake.store.get(MAPS, "mpol-team")
            edited["spec"]["mutations"] = []
            fake.store.update(edited)
            eventually(lambda: fake.store.get(MAPS, "mpol-team")["spec"]["mutations"], what="the repair")
        assert stub.requests == []


def test_an_exception_leaves_the_map_when_it_expires(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    """kyverno/api PolicyException.IsExpired: an expired exception no longer applies. Kyverno's generator
    keeps it in the MAP (nothing requeues at expiresAt); celmut's leader re-generates when it expires."""
    fake = cluster_crds
    fake.store.create(native())
    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2)
    fake.store.create(exception("soon", "team", "true", expiresAt=soon.strftime("%Y-%m-%dT%H:%M:%SZ")))

    def folded() -> bool:
        conditions = fake.store.get(MAPS, "mpol-team")["spec"].get("matchConditions") or []
        return any(c["name"] == "soon-0" for c in conditions)

    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        if datetime.datetime.now(datetime.UTC) < soon - datetime.timedelta(milliseconds=500):
            assert folded()  # (on a slow machine it may have expired already: only the end state is certain)
        eventually(lambda: generated(fake) and not folded(), what="the expired exception taken out")


def celmut_webhook_configuration(name: str, namespace_label: str = "") -> Obj:
    webhook: Obj = {
        "name": "fail.mutate.celmut.io",
        "clientConfig": {"url": "https://127.0.0.1:1/mutate/fail"},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    if namespace_label:
        webhook["namespaceSelector"] = {"matchLabels": {namespace_label: "yes"}}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [webhook],
    }


def test_two_celmut_webhooks_of_one_name_leave_the_policy_in_the_webhook(
    cluster_crds: FakeApiServer, tmp_path: Path
) -> None:
    """Whose selectors the MAP must keep cannot be told: generated=false with the reason, no MAP."""
    fake = cluster_crds
    for name in ("one", "two"):
        fake.store.create(celmut_webhook_configuration(name))
    fake.store.create(native())
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: "webhooks are named fail.mutate.celmut.io" in str(status(fake, "team")), what="status")
    assert status(fake, "team")["generated"] is False
    assert not fake.store.list(MAPS)


def test_a_policy_the_selector_stops_selecting_keeps_its_map_until_it_is_deleted(
    cluster_crds: FakeApiServer, tmp_path: Path
) -> None:
    """A fixed policy selector: a policy it no longer selects may be another celmut install's, which keeps
    its own MAP for it, so this install deletes neither the MAP nor the status (the rule Kyverno's
    generator follows too: a MAP goes with its policy, pkg/controllers/admissionpolicygenerator/
    controller.go). Once the policy is deleted, its MAP goes."""
    fake = cluster_crds
    policy = native()
    policy["metadata"]["labels"] = {"team": "a"}
    fake.store.create(policy)
    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True, policy_selector="team=a") as controller:
        eventually(lambda: generated(fake) and status(fake, "team").get("generated") is True, what="the MAP")
        objects = [fake.store.get(kind, name)["metadata"]["uid"] for kind, name in OBJECTS]
        policy = fake.store.get(MPOL, "team")
        policy["metadata"]["labels"] = {"team": "b"}
        fake.store.update(policy)
        engine = controller.store
        eventually(lambda: engine.engine is not None and not engine.engine.policies, what="the policy left")
        assert controller.generator is not None and controller.policy_source is not None
        assert controller.generator.sync(controller.policy_source).deleted == []
        assert [fake.store.get(kind, name)["metadata"]["uid"] for kind, name in OBJECTS] == objects
        assert status(fake, "team").get("generated") is True and condition(fake, "team") is not None
        fake.store.delete(MPOL, "team")  # no garbage collector here: the generator deletes them
        eventually(lambda: not fake.store.list(MAPS) and not fake.store.list(BINDINGS), what="the MAP deleted")


OBJECTS = ((MAPS, "mpol-team"), (BINDINGS, "mpol-team-binding"))


def test_the_policys_reporting_choice_is_carried_to_its_map(cluster_crds: FakeApiServer, tmp_path: Path) -> None:
    """Native policies are reported only when opted in, so the generated MAP carries the policy's reporting
    labels, and follows them (chainsaw mutating-admission-policy-reports/background/generated-reporting-opt-in:
    opt-in, remove-opt-in, disabled-wins, false-is-not-opt-in)."""
    fake = cluster_crds
    fake.store.create(native())
    reporting = ("reports.kyverno.io/enabled", "reports.kyverno.io/disabled")

    def map_labels() -> dict[str, str]:
        labels = (fake.store.get(MAPS, "mpol-team")["metadata"].get("labels") or {}).items()
        return {k: v for k, v in labels if k in reporting}

    def relabel(**labels: str | None) -> None:
        fake.store.patch(MPOL, "team", {"metadata": {"labels": labels}})

    with running(fake, tmp_path, no_files(tmp_path), from_cluster=True):
        eventually(lambda: generated(fake), what="the MAP")
        assert map_labels() == {}
        relabel(**{"reports.kyverno.io/enabled": "true"})
        eventually(lambda: map_labels() == {"reports.kyverno.io/enabled": "true"}, what="opted in")
        relabel(**{"reports.kyverno.io/disabled": "false"})
        eventually(lambda: map_labels() == {"reports.kyverno.io/disabled": "false"}, what="disabled wins")
        relabel(**{"reports.kyverno.io/disabled": None, "reports.kyverno.io/enabled": "false"})
        eventually(lambda: map_labels() == {}, what="'false' is not an opt-in")
    assert fake.store.get(MAPS, "mpol-team")["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "celmut"
    assert "reports.kyverno.io/enabled" not in (fake.store.get(BINDINGS, "mpol-team-binding")["metadata"]["labels"])


def test_an_install_managing_its_webhook_configuration_keeps_that_ones_selectors(
    cluster_crds: FakeApiServer, tmp_path: Path
) -> None:
    """Several celmut installs each register their webhooks under the same names: the generator of an
    install that manages its configuration reads the selectors of that one only."""
    fake = cluster_crds
    fake.store.create(celmut_webhook_configuration("install-a", "a"))
    fake.store.create(celmut_webhook_configuration("install-b", "b"))
    cluster = Cluster.connect(str(fake.kubeconfig(tmp_path / "kubeconfig")), timeout=5)
    try:
        scopes = AdmissionPolicyGenerator(cluster, configuration="install-b").webhook_scopes()
        assert scopes == {"Fail": {"namespaceSelector": {"matchLabels": {"b": "yes"}}, "objectSelector": {}}}
        assert "2 webhooks are named" in str(AdmissionPolicyGenerator(cluster).webhook_scopes())
    finally:
        cluster.close()
