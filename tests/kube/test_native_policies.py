"""Which MutatingPolicies celmut's webhook leaves to the API server (issue 19): only those whose every
generated MutatingAdmissionPolicy exists, is celmut's and the policy's, and is bound (kyverno
pkg/controllers/webhook/controller.go drops a policy on status.generated; celmut reads the objects)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from celmut.kube.native_policies import NativeIndex

Obj = dict[str, Any]
OWNED = {"labels": {"app.kubernetes.io/managed-by": "celmut"}, "ownerReferences": [{"uid": "u1", "name": "p"}]}


def policy(*, autogen: bool = False) -> Obj:
    spec: Obj = {
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}],
    }
    if not autogen:
        spec["autogen"] = {"podControllers": {"controllers": []}}
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "p", "uid": "u1", "generation": 1},
        "spec": spec,
    }


def native(name: str, **meta: Any) -> tuple[Obj, Obj]:
    metadata = {**copy.deepcopy(OWNED), **meta}
    return (
        {"metadata": {"name": name, **metadata}},
        {"metadata": {"name": f"{name}-binding", **metadata}, "spec": {"policyName": name}},
    )


CASES = {
    "MAP and binding, celmut's, owned by the policy": ([native("mpol-p")], True),
    "no binding: the MAP applies to nothing": ([(native("mpol-p")[0], None)], False),
    "a MAP Kyverno generated": ([native("mpol-p", labels={"app.kubernetes.io/managed-by": "kyverno"})], False),
    "owned by another object of that name": ([native("mpol-p", ownerReferences=[{"uid": "u2"}])], False),
}


@pytest.mark.parametrize(("objects", "applied"), list(CASES.values()), ids=list(CASES))
def test_a_policy_is_left_to_the_api_server_only_when_its_map_is_in_service(
    objects: list[tuple[Obj, Obj | None]], applied: bool
) -> None:
    maps = [m for m, _ in objects]
    bindings = [b for _, b in objects if b is not None]
    assert bool(NativeIndex().applied([policy()], maps, bindings)) is applied


def test_every_autogen_variant_must_be_in_service() -> None:
    """generate-map.go desiredMAPVariants: mpol-p, mpol-p-defaults, mpol-p-cronjobs."""
    pairs = [native(n) for n in ("mpol-p", "mpol-p-defaults", "mpol-p-cronjobs")]
    index = NativeIndex()
    everything = index.applied([policy(autogen=True)], [m for m, _ in pairs], [b for _, b in pairs])
    assert everything == (("p", "mpol-p, mpol-p-cronjobs, mpol-p-defaults"),)
    partial = index.applied([policy(autogen=True)], [m for m, _ in pairs[:2]], [b for _, b in pairs[:2]])
    assert partial == ()


def test_deleted_policies_are_forgotten() -> None:
    index = NativeIndex()
    index.applied([policy()], *map(list, zip(*[native("mpol-p")], strict=True)))
    assert index._expected  # parsed once per generation
    index.applied([], [], [])
    assert not index._expected
