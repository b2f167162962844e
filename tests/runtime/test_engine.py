"""The admission engine: ordering and chaining, failure policies per kind, match conditions,
exceptions, variables, DELETE requests, background identity and reinvocation."""

from __future__ import annotations

from celmut.runtime import AdmissionInput
from tests.runtime.helpers import admit, applyconfig, engine, jsonpatch, map_policy, mpol, pod

ADD_LABEL = jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/a", value: "1"}]')


def test_mutations_see_earlier_patches_while_request_object_stays_original() -> None:
    text = mpol(
        "chain",
        ADD_LABEL
        + jsonpatch(
            '[JSONPatch{op: "add", path: "/metadata/labels/b", value: object.metadata.labels.a + '
            "string(has(request.object.metadata.labels.a))}]"
        ),
    )
    result = admit(text, pod())
    assert result.object["metadata"]["labels"] == {"app": "web", "a": "1", "b": "1false"}
    assert result.patch == [
        {"op": "add", "path": "/metadata/labels/a", "value": "1"},
        {"op": "add", "path": "/metadata/labels/b", "value": "1false"},
    ]


def test_policies_chain_in_name_order_each_seeing_the_previous_output() -> None:
    second = mpol(
        "b-second",
        jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/order", value: object.metadata.labels.order + "b"}]'),
    )
    first = mpol("a-first", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/order", value: "a"}]'))
    result = admit(second + "---" + first, pod())
    assert result.object["metadata"]["labels"]["order"] == "ab"
    assert [o.policy for o in result.outcomes] == ["a-first", "b-second"]


def test_a_failing_mutating_policy_with_fail_denies_naming_policy_and_expression() -> None:
    text = mpol("broken", jsonpatch('[JSONPatch{op: "add", path: "/x", value: object.metadata.missing}]'))
    result = admit(text, pod())
    assert not result.allowed
    assert "policy broken" in result.message
    assert "spec.mutations[0].jsonPatch.expression" in result.message
    assert "no such key: missing" in result.message
    assert result.patch == [] and result.object == pod()


def test_mutating_policy_ignore_drops_the_whole_policy_result_but_keeps_other_policies() -> None:
    broken = mpol(
        "a-broken",
        ADD_LABEL + jsonpatch('[JSONPatch{op: "add", path: "/x", value: object.metadata.missing}]'),
        extra="  failurePolicy: Ignore",
    )
    good = mpol("b-good", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/good", value: "yes"}]'))
    result = admit(broken + "---" + good, pod())
    assert result.allowed
    assert result.object["metadata"]["labels"] == {"app": "web", "good": "yes"}  # a-broken's label dropped too
    assert [o.status for o in result.outcomes] == ["error", "applied"]
    assert any("failurePolicy Ignore" in w for w in result.warnings)


def test_admission_policy_ignore_skips_only_the_failing_mutation() -> None:
    mutations = jsonpatch('[JSONPatch{op: "add", path: "/x", value: object.metadata.missing}]') + ADD_LABEL
    result = admit(map_policy(mutations, failure="Ignore", reinvocation="Never"), pod())
    assert result.allowed and result.object["metadata"]["labels"]["a"] == "1"
    assert "ignored: spec.mutations[0].jsonPatch.expression" in result.outcomes[0].reason


def test_admission_policy_fail_denies() -> None:
    mutations = ADD_LABEL + jsonpatch('[JSONPatch{op: "add", path: "/x", value: object.metadata.missing}]')
    result = admit(map_policy(mutations, failure="Fail", reinvocation="Never"), pod())
    assert not result.allowed and "policy map" in result.message


def test_reinvocation_if_needed_runs_a_non_idempotent_policy_twice_as_the_api_server_does() -> None:
    append = jsonpatch(
        '[JSONPatch{op: "add", path: "/spec/containers/-", value: {"name": "c" + string(size(object.spec.containers))}}]'
    )
    result = admit(map_policy(append, failure="Fail", reinvocation="IfNeeded"), pod())
    assert [c["name"] for c in result.object["spec"]["containers"]] == ["nginx", "c1", "c2"]
    assert [o.reinvoked for o in result.outcomes] == [False, True]
    never = admit(map_policy(append, failure="Fail", reinvocation="Never"), pod())
    assert [c["name"] for c in never.object["spec"]["containers"]] == ["nginx", "c1"]


def test_admission_policy_without_binding_does_nothing() -> None:
    text = map_policy(ADD_LABEL, failure="Fail", reinvocation="Never").split("---")[0]
    result = admit(text, pod())
    assert result.patch == [] and "no MutatingAdmissionPolicyBinding" in result.outcomes[0].reason


CONDITIONS = """  matchConditions:
  - {{name: first, expression: '{first}'}}
  - {{name: second, expression: '{second}'}}"""


def test_match_conditions_false_skips_even_when_an_earlier_one_errored() -> None:
    extra = CONDITIONS.format(first="object.metadata.missing == 1", second="false")
    result = admit(mpol("p", ADD_LABEL, extra=extra), pod())
    assert result.allowed and result.outcomes[0].status == "skipped"
    assert "matchCondition 'second' is false" in result.outcomes[0].reason


def test_match_condition_error_without_false_is_a_policy_error() -> None:
    extra = CONDITIONS.format(first="object.metadata.missing == 1", second="true")
    result = admit(mpol("p", ADD_LABEL, extra=extra), pod())
    assert not result.allowed and "spec.matchConditions[0].expression" in result.message


def test_variables_are_lazy_so_an_unused_failing_variable_is_harmless_and_used_ones_are_memoised() -> None:
    extra = """  variables:
  - {name: broken, expression: 'object.metadata.missing'}
  - {name: label, expression: 'object.metadata.name + "-x"'}"""
    text = mpol(
        "vars",
        jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/v", value: variables.label}]')
        + jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/w", value: variables.label}]'),
        extra=extra,
    )
    result = admit(text, pod())
    assert result.object["metadata"]["labels"]["v"] == "web-x" == result.object["metadata"]["labels"]["w"]


def test_exceptions_skip_the_policies_they_name() -> None:
    exception = """
apiVersion: policies.kyverno.io/v1alpha1
kind: PolicyException
metadata: {name: skip-web, namespace: default}
spec:
  policyRefs: [{name: p, kind: MutatingPolicy}]
  matchConditions: [{name: web, expression: 'object.metadata.name == "web"'}]
"""
    text = (
        mpol("p", ADD_LABEL)
        + "---"
        + mpol("q", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/q", value: "1"}]'))
        + "---"
        + exception
    )
    result = admit(text, pod())
    assert [(o.policy, o.status) for o in result.outcomes] == [("p", "excepted"), ("q", "applied")]
    assert "PolicyException default/skip-web" in result.outcomes[0].reason
    other = admit(text, pod(name="api"))
    assert [o.status for o in other.outcomes] == ["applied", "applied"]


def test_an_expired_exception_skips_nothing() -> None:
    """kyverno/api PolicyException.IsExpired: from spec.expiresAt on, the exception no longer applies (a MAP
    generated from the policy leaves it out too: celmut/compile/to_map.py exception_conditions)."""
    exception = """
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {{name: {name}, namespace: default}}
spec:
  expiresAt: "{expires}"
  policyRefs: [{{name: p, kind: MutatingPolicy}}]
  matchConditions: [{{name: all, expression: "true"}}]
"""
    expired = admit(mpol("p", ADD_LABEL) + "---" + exception.format(name="old", expires="2020-01-01T00:00:00Z"), pod())
    assert [o.status for o in expired.outcomes] == ["applied"]
    current = admit(mpol("p", ADD_LABEL) + "---" + exception.format(name="new", expires="2999-01-01T00:00:00Z"), pod())
    assert [o.status for o in current.outcomes] == ["excepted"]


def test_delete_requests_carry_no_object_and_are_not_mutated() -> None:
    result = admit(mpol("p", ADD_LABEL, operations="[DELETE]"), None, "DELETE", old_object=pod())
    assert result.allowed and result.patch == [] and result.outcomes[0].status == "skipped"


def test_requests_from_the_background_identity_are_skipped_when_configured() -> None:
    eng = engine(mpol("p", ADD_LABEL), background_usernames=frozenset({"system:serviceaccount:celmut:controller"}))
    request = AdmissionInput.from_object(pod(), user_info={"username": "system:serviceaccount:celmut:controller"})
    result = eng.admit(request)
    assert result.patch == [] and "skipBackgroundRequests" in result.outcomes[0].reason


def test_a_mutate_existing_policy_with_targets_never_mutates_its_trigger() -> None:
    extra = """  evaluation: {mutateExisting: {enabled: true}}
  targetMatchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], resources: [configmaps]}]"""
    result = admit(mpol("p", ADD_LABEL, extra=extra), pod())
    assert result.patch == [] and result.outcomes == []


def test_json_patch_test_failure_skips_the_mutation_silently() -> None:
    text = mpol(
        "p",
        jsonpatch(
            '[JSONPatch{op: "test", path: "/metadata/name", value: "other"}, JSONPatch{op: "add", path: "/metadata/labels/a", value: "1"}]'
        )
        + jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/b", value: "2"}]'),
    )
    result = admit(text, pod())
    assert (
        result.allowed
        and "a" not in result.object["metadata"]["labels"]
        and result.object["metadata"]["labels"]["b"] == "2"
    )
    assert "spec.mutations[0].jsonPatch.expression: JSONPatch test at /metadata/name did not hold" in (
        result.outcomes[0].reason
    )


def test_json_patch_test_below_a_missing_parent_is_an_error() -> None:
    """json-patch v4 ``Patch.test``: findObject fails on the missing parent."""
    text = mpol("p", jsonpatch('[JSONPatch{op: "test", path: "/metadata/nothing/x", value: "x"}]'))
    result = admit(text, pod())
    assert not result.allowed
    assert "JSON Patch: test operation does not apply: is missing path: /metadata/nothing/x" in result.message


def test_json_patch_test_of_a_missing_member_fails_the_test_and_skips_the_mutation() -> None:
    """json-patch v4 ``Patch.test``: ``partialDoc.get`` returns nil for a missing key, and a nil value
    fails the test (``ErrTestFailed``), which json_patch.go turns into the unchanged object."""
    text = mpol(
        "p",
        jsonpatch(
            '[JSONPatch{op: "add", path: "/metadata/labels/before", value: "x"},'
            ' JSONPatch{op: "test", path: "/metadata/nothing", value: "x"}]'
        ),
    )
    result = admit(text, pod())
    assert result.allowed and result.patch == []
    assert "JSONPatch test at /metadata/nothing did not hold" in result.outcomes[0].reason


def test_json_patch_failures_name_op_and_path_without_object_data() -> None:
    text = mpol("p", jsonpatch('[JSONPatch{op: "add", path: "/spec/missing/deep", value: "secret-value"}]'))
    result = admit(text, pod())
    assert not result.allowed
    assert (
        'JSON Patch: add operation does not apply: doc is missing path: "/spec/missing/deep": missing value'
        in result.message
    )
    assert "nginx" not in result.message and "secret-value" not in result.message


def test_json_patch_replace_of_a_missing_member_adds_it() -> None:
    """json-patch v4 (json_patch_test.go 'jsonPatch replace key in map'): unlike RFC 6902 §4.3."""
    text = mpol("p", jsonpatch('[JSONPatch{op: "replace", path: "/metadata/labels/new", value: "v"}]'))
    assert admit(text, pod()).object["metadata"]["labels"]["new"] == "v"
    kubernetes = map_policy(
        jsonpatch('[JSONPatch{op: "replace", path: "/metadata/annotations", value: {"a": "b"}}]'),
        failure="Fail",
        reinvocation="Never",
    )
    assert admit(kubernetes, pod()).object["metadata"]["annotations"] == {"a": "b"}


def test_a_json_patch_that_replaces_the_whole_object_with_a_scalar_is_ignored() -> None:
    """json-patch v4 ``Patch.replace`` of "" with a value that is neither object nor list returns
    ``errors.Wrapf(nil, …)``, which is nil: the object is left as it was."""
    text = mpol("p", jsonpatch('[JSONPatch{op: "replace", path: "", value: 1}]'))
    result = admit(text, pod())
    assert result.allowed and result.patch == []


def test_json_patch_negative_index_replaces_from_the_end() -> None:
    text = mpol("p", jsonpatch('[JSONPatch{op: "replace", path: "/spec/containers/-1/image", value: "x"}]'))
    assert admit(text, pod()).object["spec"]["containers"][0]["image"] == "x"


def test_unchanged_and_applied_are_reported_separately() -> None:
    text = mpol("p", applyconfig('Object{metadata: Object.metadata{labels: {"app": "web"}}}'))
    result = admit(text, pod())
    assert result.patch == [] and result.outcomes[0].status == "unchanged"


def test_partial_exceptions_fill_the_exceptions_variable_instead_of_skipping() -> None:
    exception = """
apiVersion: policies.kyverno.io/v1alpha1
kind: PolicyException
metadata: {name: allow-nginx}
spec:
  policyRefs: [{name: p, kind: MutatingPolicy}]
  images: ["nginx:*"]
  allowedValues: ["a"]
  matchConditions: [{name: web, expression: 'object.metadata.name == "web"'}]
"""
    text = mpol(
        "p",
        jsonpatch(
            '[JSONPatch{op: "add", path: "/metadata/labels/allowed", '
            'value: exceptions.allowedImages.join(",") + "|" + exceptions.allowedValues.join(",")}]'
        ),
    )
    result = admit(text + "---" + exception, pod())
    assert result.outcomes[0].status == "applied"
    assert result.object["metadata"]["labels"]["allowed"] == "nginx:*|a"
    other = admit(text + "---" + exception, pod(name="api"))
    assert other.object["metadata"]["labels"]["allowed"] == "|"


def test_admission_policy_json_patch_sees_the_object_as_the_api_server_encodes_it() -> None:
    add_annotation = jsonpatch('[JSONPatch{op: "add", path: "/metadata/annotations/a", value: "1"}]')
    obj = pod()
    obj["metadata"]["annotations"] = {}  # gone once decoded into the Go type: the add has no parent
    result = admit(map_policy(add_annotation, failure="Fail", reinvocation="Never"), obj)
    assert not result.allowed and "doc is missing path" in result.message
    kyverno = admit(mpol("p", add_annotation), obj)  # Kyverno patches the JSON as received
    assert kyverno.object["metadata"]["annotations"] == {"a": "1"}


def test_an_admission_policy_patch_that_does_not_decode_is_rejected_even_with_ignore() -> None:
    unknown_field = jsonpatch('[JSONPatch{op: "add", path: "/spec/notAField", value: 1}]')
    result = admit(map_policy(unknown_field, failure="Ignore", reinvocation="Never"), pod())
    assert not result.allowed
    # patch/json_patch_test.go: 'strict decoding error: unknown field "spec.template.spec.containers[1]…"',
    # wrapped by NewInternalError
    assert 'Internal error occurred: strict decoding error: unknown field "spec.notAField"' in result.message


def test_each_outcome_carries_the_cel_cost_its_policy_spent_of_the_shared_budget() -> None:
    """``celmut playground`` shows each policy's CEL cost: the units it took from the request's budget."""
    cheap = mpol("a-cheap", ADD_LABEL)
    costly = mpol(
        "b-costly",
        jsonpatch(
            '[JSONPatch{op: "add", path: "/metadata/labels/n", value: string([1, 2, 3, 4, 5, 6, 7, 8].map(i, '
            "[1, 2, 3, 4, 5, 6, 7, 8].filter(j, j > i)).size())}]"
        ),
    )
    result = admit(cheap + "---" + costly, pod())
    by_policy = {o.policy: o.cost for o in result.outcomes}
    assert 0 < by_policy["a-cheap"] < by_policy["b-costly"]
