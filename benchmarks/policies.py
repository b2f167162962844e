"""A benchmark policy set: 20 MutatingPolicies of which 5 match the benchmark Pod."""

from __future__ import annotations

from typing import Any

import yaml

MATCHING = [
    # JSONPatch: label the pod
    """
    mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: '[JSONPatch{op: "add", path: "/metadata/labels/policy-{i}", value: "applied"}]'
    """,
    # ApplyConfiguration: security context on every container
    """
    mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: >-
          Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name,
          securityContext: Object.spec.containers.securityContext{allowPrivilegeEscalation: false}})}}
    """,
    # JSONPatch with a match condition and a variable
    """
    matchConditions:
    - name: has-team
      expression: 'has(object.metadata.labels) && "team" in object.metadata.labels'
    variables:
    - name: team
      expression: object.metadata.labels.team
    mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: '[JSONPatch{op: "add", path: "/metadata/annotations/owner-{i}", value: variables.team}]'
    """,
    # ApplyConfiguration: annotation from a container scan
    """
    matchConditions:
    - name: runs-nginx
      expression: 'object.spec.containers.exists(c, c.image.startsWith("nginx"))'
    mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{metadata: Object.metadata{annotations: {"web-server-{i}": "nginx"}}}'
    """,
    # JSONPatch building one op per container (map/filter)
    """
    mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: >-
          object.spec.containers.filter(c, !has(c.resources.limits.cpu)).map(c,
          JSONPatch{op: "add", path: "/metadata/annotations/no-cpu-limit-" + c.name, value: "true"})
    """,
]

NON_MATCHING = [
    # other resources
    ("apps", "deployments", ""),
    ("", "configmaps", ""),
    ("", "services", ""),
    ("batch", "jobs", ""),
    ("", "secrets", ""),
    # pods, but a match condition is false
    ("", "pods", 'object.metadata.namespace == "kube-system"'),
    ("", "pods", '"never" in object.metadata.labels'),
    ("", "pods", 'object.spec.containers.all(c, c.image.startsWith("gcr.io/"))'),
    ("", "pods", 'object.metadata.?annotations[?"skip"].orValue("") == "true"'),
    ("", "pods", "size(object.spec.containers) > 10"),
    ("networking.k8s.io", "ingresses", ""),
    ("", "namespaces", ""),
    ("apps", "statefulsets", ""),
    ("", "pods", 'request.operation == "UPDATE"'),
    ("", "serviceaccounts", ""),
]


def _policy(name: str, body: str, group: str = "", resource: str = "pods", condition: str = "") -> dict[str, Any]:
    spec = yaml.safe_load(body) if body else {}
    spec["matchConstraints"] = {
        "resourceRules": [
            {"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": [resource]}
        ]
    }
    spec["autogen"] = {"podControllers": {"controllers": []}}
    spec["failurePolicy"] = "Ignore"
    if condition:
        spec["matchConditions"] = [{"name": "condition", "expression": condition}]
    spec.setdefault(
        "mutations",
        [{"patchType": "JSONPatch", "jsonPatch": {"expression": '[JSONPatch{op: "add", path: "/x", value: 1}]'}}],
    )
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name}, "spec": spec}


def benchmark_policies() -> list[dict[str, Any]]:
    """20 policies: 5 that match the benchmark Pod, 15 that do not."""
    docs = [_policy(f"matching-{i}", body.replace("{i}", str(i))) for i, body in enumerate(MATCHING)]
    docs += [
        _policy(f"other-{i}", "", group, resource, condition)
        for i, (group, resource, condition) in enumerate(NON_MATCHING)
    ]
    return docs


def non_matching_policies() -> list[dict[str, Any]]:
    """20 policies none of which matches the benchmark Pod."""
    return [
        _policy(f"other-{i}", "", group, resource, condition)
        for i, (group, resource, condition) in enumerate([*NON_MATCHING, *NON_MATCHING[:5]])
    ]


def variables_policy(
    name: str, variables: list[dict[str, Any]], checked: int, conditions: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """A pod-CREATE MutatingPolicy (failurePolicy Ignore, no autogen) whose one mutation evaluates the
    variables v0..v{checked-1} and patches nothing: the CPU and memory the isolation and worst-case
    benchmarks measure are spent in the variables alone."""
    spec: dict[str, Any] = {
        "failurePolicy": "Ignore",
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
    }
    if conditions:
        spec["matchConditions"] = conditions
    spec["variables"] = variables
    spec["mutations"] = [
        {
            "patchType": "JSONPatch",
            "jsonPatch": {"expression": " && ".join(f"variables.v{i}" for i in range(checked)) + " ? [] : []"},
        }
    ]
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name}, "spec": spec}


# Issue 36's set: 20 MutatingPolicies, all on Pods (autogen on, as Kyverno defaults: each has a
# Deployment-and-co. and a CronJob variant), each gated by a matchCondition that reads a label and
# scans the containers. 15 are false for the benchmark Pod (another tier, no image from its
# registry); 5 hold, and each adds a label by ApplyConfiguration and one annotation per container by
# JSONPatch.
ALL_PODS_SKIPPED_CONDITION = (
    'object.metadata.?labels["tier"].orValue("") == "tier-{i}" || '
    'object.spec.containers.exists(c, c.image.startsWith("registry.example.com/tier-{i}/"))'
)
ALL_PODS_MATCHING_CONDITION = (
    'object.metadata.?labels["app"].orValue("") == "web" && '
    'object.spec.containers.exists(c, c.image.startsWith("nginx"))'
)
ALL_PODS_MUTATIONS = [
    {
        "patchType": "ApplyConfiguration",
        "applyConfiguration": {"expression": 'Object{metadata: Object.metadata{labels: {"policy-{i}": "applied"}}}'},
    },
    {
        "patchType": "JSONPatch",
        "jsonPatch": {
            "expression": 'object.spec.containers.map(c, JSONPatch{op: "add", '
            'path: "/metadata/annotations/policy-{i}.example.com~1" + c.name, value: c.image})'
        },
    },
]


def _pod_policy(name: str, condition: str, mutations: list[dict[str, Any]]) -> dict[str, Any]:
    spec = {
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}
            ]
        },
        "failurePolicy": "Fail",  # as a native MutatingAdmissionPolicy can run them (apiserver_bench.py)
        "matchConditions": [{"name": "selected", "expression": condition}],
        "mutations": mutations,
    }
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name}, "spec": spec}


def all_pods_policies(matching: int = 5, total: int = 20) -> list[dict[str, Any]]:
    """The all-pods set: ``total`` Pod policies with autogen, ``matching`` of which match the benchmark
    Pod (:func:`workloads.pod_with_env`) and mutate it; the others are skipped by their matchCondition."""
    docs = []
    for i in range(total):
        if i < matching:
            mutations = yaml.safe_load(yaml.safe_dump(ALL_PODS_MUTATIONS).replace("{i}", str(i)))
            docs.append(_pod_policy(f"pods-matching-{i:02d}", ALL_PODS_MATCHING_CONDITION, mutations))
        else:
            condition = ALL_PODS_SKIPPED_CONDITION.replace("{i}", str(i))
            docs.append(_pod_policy(f"pods-skipped-{i:02d}", condition, [ALL_PODS_MUTATIONS[0]]))
    return docs


def one_label_policy() -> dict[str, Any]:
    """One pod policy adding a label, no condition."""
    return _policy(
        "one-label",
        "mutations:\n- patchType: ApplyConfiguration\n  applyConfiguration:\n"
        '    expression: \'Object{metadata: Object.metadata{labels: {"team": "platform"}}}\'\n',
    )
