"""Associative lists merge in structured-merge-diff's order and collapse duplicated live keys the
applied list names (issue 25, item 4).

Upstream: kubernetes-sigs/structured-merge-diff ``typed/merge.go`` ``visitListItems`` (the ordering
of #205, duplicates in the live object from #253/#254), pinned with its own ``typed/merge_test.go``
triplets (live, applied, merged); and the API server's
``k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch/smd_test.go`` ``TestApplyConfiguration``
cases "apply configuration with duplicate env vars in original object" and "apply configuration
modify existing env variable", run through a policy on a Deployment."""

from __future__ import annotations

import json
from typing import Any

import pytest

from celmut.runtime.failures import MergeError
from celmut.runtime.merge import apply_configuration
from celmut.runtime.schemas import Schema
from tests.runtime.helpers import admit, applyconfig, mpol

# merge_test.go's "associative list" (keys key+id) and "struct grab bag" (setStr) schemas
SCHEMA = Schema(
    {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["key", "id"],
                "items": {
                    "type": "object",
                    "properties": {
                        "key": {"type": "string"},
                        "id": {"type": "integer"},
                        "bv": {"type": "boolean"},
                        "nv": {"type": "integer"},
                        "value": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                },
            },
            "setStr": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        },
    },
    {},
)
TRIPLETS = [  # merge_test.go, verbatim (live, applied, merged)
    (
        '{"list":[{"key":"a","id":1}]}',
        '{"list":[{"key":"a","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"a","id":2}]}',
    ),
    (
        '{"list":[{"key":"b","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"c","id":3},{"key":"b","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"c","id":3},{"key":"b","id":2}]}',
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"c","id":3},{"key":"a","id":1}]}',
        '{"list":[{"key":"b","id":2},{"key":"c","id":3},{"key":"a","id":1}]}',
    ),
    (  # #254: the duplicated "a" collapses into the applied item alone (bv is not kept)
        '{"list":[{"key":"a","id":1,"bv":true},{"key":"b","id":2},{"key":"a","id":1,"bv":false,"nv":2}]}',
        '{"list":[{"key":"a","id":1,"nv":3},{"key":"c","id":3},{"key":"b","id":2}]}',
        '{"list":[{"key":"a","id":1,"nv":3},{"key":"c","id":3},{"key":"b","id":2}]}',
    ),
    (  # duplicates the applied object does not name are kept
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
        '{"list":[]}',
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
    ),
    ('{"setStr":["a","b","c"]}', '{"setStr":["a","b"]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":["a","b"]}', '{"setStr":["b","a"]}', '{"setStr":["b","a"]}'),
    ('{"setStr":["a","b","c","g","f"]}', '{"setStr":["c","d","e","f"]}', '{"setStr":["a","b","c","g","d","e","f"]}'),
    ('{"setStr":["c","d","e","f"]}', '{"setStr":["a","c","e"]}', '{"setStr":["a","c","d","e","f"]}'),
    ('{"setStr":["a","b","c","d"]}', '{"setStr":["d","e","f","a"]}', '{"setStr":["b","c","d","e","f","a"]}'),
    (
        '{"setStr":["c","d","e","f","g","h","i","j"]}',
        '{"setStr":["2","h","3","e","4","k","l"]}',
        '{"setStr":["c","d","f","g","2","h","i","j","3","e","4","k","l"]}',
    ),
    (
        '{"setStr":["a","b","c","d","e","f","g","h","i","j"]}',
        '{"setStr":["1","b","2","h","3","e","4","k","l"]}',
        '{"setStr":["a","1","b","c","d","f","g","2","h","i","j","3","e","4","k","l"]}',
    ),
]


@pytest.mark.parametrize(("live", "applied", "merged"), TRIPLETS)
def test_structured_merge_diff_merge_test_triplets(live: str, applied: str, merged: str) -> None:
    assert apply_configuration(json.loads(live), json.loads(applied), SCHEMA) == json.loads(merged)


def test_duplicates_in_the_applied_list_are_an_error() -> None:
    """merge.go indexListPathElements on the applied (rhs) side: duplicate entries for key."""
    applied = {"list": [{"key": "a", "id": 1}, {"key": "a", "id": 1}]}
    with pytest.raises(MergeError, match="duplicate entries for key"):
        apply_configuration({}, applied, SCHEMA)


def _deployment(env: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "env": env}]},
            },
        },
    }


REPLICAS = "Object{spec: Object.spec{replicas: 3}}"
MODIFY_TEST = (
    "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: "
    '[Object.spec.template.spec.containers{name: "nginx", env: [Object.spec.template.spec.containers.env{'
    'name: "test", value: "c"}]}]}}}}'
)
SMD_TEST_CASES = [
    (
        "smd_test.go: duplicate env vars in original object are kept when env is not applied",
        REPLICAS,
        [{"name": "test", "value": "a"}, {"name": "test", "value": "b"}],
        [{"name": "test", "value": "a"}, {"name": "test", "value": "b"}],
    ),
    (
        "smd_test.go: modify existing env variable collapses the duplicates into one entry",
        MODIFY_TEST,
        [{"name": "test", "value": "a"}, {"name": "test", "value": "b"}, {"name": "foo", "value": "bar"}],
        [{"name": "test", "value": "c"}, {"name": "foo", "value": "bar"}],
    ),
]


@pytest.mark.parametrize(("name", "expression", "env", "expected"), SMD_TEST_CASES, ids=[c[0] for c in SMD_TEST_CASES])
def test_apply_configuration_on_a_deployment_with_duplicate_env(
    name: str, expression: str, env: list[dict[str, str]], expected: list[dict[str, str]]
) -> None:
    policy = mpol("p", applyconfig(expression), resources="deployments").replace("apiGroups: ['']", "apiGroups: [apps]")
    result = admit(policy, _deployment(env))
    assert result.allowed, result.message
    assert result.object["spec"]["template"]["spec"]["containers"][0]["env"] == expected
