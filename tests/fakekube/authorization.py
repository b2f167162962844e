"""``authorization.k8s.io/v1 SubjectAccessReview``: the API server's authorizer, answered by RBAC.

The real chain (``plugin/pkg/auth/authorizer/rbac/rbac.go`` ``RBACAuthorizer.Authorize`` behind the
``system:masters`` privileged group) answers allow when a binding of the user (or one of its groups,
or its service account) grants the verb on the resource, else no opinion with an empty reason. This
module evaluates the ClusterRoleBindings/ClusterRoles and RoleBindings/Roles in the store; rules
match as ``pkg/apis/rbac/v1/evaluation_helpers.go`` does (``*`` wildcards, ``resource/subresource``,
``resourceNames``, ``nonResourceURLs`` with a ``*`` suffix). Nothing is stored: the review comes back
with its ``status``.
"""

from __future__ import annotations

from typing import Any

from .store import Store

Obj = dict[str, Any]


def _has(values: list[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)  # type: ignore[operator]


def _rule_allows(rule: Obj, spec: Obj) -> bool:
    resource_attributes = spec.get("resourceAttributes")
    if resource_attributes is not None:
        attrs = resource_attributes
        resource = attrs.get("resource", "")
        if attrs.get("subresource"):
            resource = f"{resource}/{attrs['subresource']}"
        names = rule.get("resourceNames") or []
        return (
            _has(rule.get("verbs"), attrs.get("verb", ""))
            and _has(rule.get("apiGroups"), attrs.get("group", ""))
            and _has(rule.get("resources"), resource)
            and (not names or attrs.get("name", "") in names)
        )
    attrs = spec.get("nonResourceAttributes") or {}
    path = attrs.get("path", "")
    urls = rule.get("nonResourceURLs") or []
    return _has(rule.get("verbs"), attrs.get("verb", "")) and any(
        u == "*" or u == path or (u.endswith("*") and path.startswith(u[:-1])) for u in urls
    )


def _subject_matches(subject: Obj, user: str, groups: list[str]) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(name == user)
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        return user == f"system:serviceaccount:{subject.get('namespace', '')}:{name}"
    return False


def _role(store: Store, ref: Obj, namespace: str) -> Obj | None:
    resource = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
    found = [
        r
        for r in store.list(resource, None if resource == "clusterroles" else namespace)
        if r["metadata"]["name"] == ref.get("name")
    ]
    return found[0] if found else None


def review(store: Store, body: Obj) -> Obj:
    """The SubjectAccessReview ``body`` with its ``status``."""
    spec = body.get("spec") or {}
    user, groups = str(spec.get("user", "")), list(spec.get("groups") or [])
    if "system:masters" in groups:
        return {**body, "status": {"allowed": True, "reason": ""}}
    namespace = (spec.get("resourceAttributes") or {}).get("namespace", "")
    bindings = [(b, "") for b in store.list("clusterrolebindings")]
    if namespace:
        bindings += [(b, namespace) for b in store.list("rolebindings", namespace)]
    for binding, scope in bindings:
        if not any(_subject_matches(s, user, groups) for s in binding.get("subjects") or []):
            continue
        role = _role(store, binding.get("roleRef") or {}, scope)
        if role is None:
            continue
        if any(_rule_allows(rule, spec) for rule in role.get("rules") or []):
            kind = "RoleBinding" if scope else "ClusterRoleBinding"
            reason = f'RBAC: allowed by {kind} "{binding["metadata"]["name"]}"'
            return {**body, "status": {"allowed": True, "reason": reason}}
    return {**body, "status": {"allowed": False, "reason": ""}}
