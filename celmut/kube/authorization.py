"""The CEL ``authorizer`` in the cluster: each check is one SubjectAccessReview.

The API server answers a MutatingAdmissionPolicy's ``authorizer.….check(verb)`` with its own
authorizer (``k8s.io/apiserver/pkg/cel/library/authz.go``: an ``AttributesRecord`` for the requesting
user, API version ``*``); celmut asks the same authorizer through
``authorization.k8s.io/v1 SubjectAccessReview`` (RBAC: ``create`` on ``subjectaccessreviews``, in the
chart and ``celmut manifests``). Decisions are cached per request and bounded in number by the CEL
library (:mod:`celmut.cel.libs.k8s.authz`); a failed review is the Decision's ``error()``, as an
authorizer error is in Kubernetes. On the webhook's event loop a check reschedules the evaluation
to a worker thread first (:func:`~celmut.cel.lookups.before_blocking`).
"""

from __future__ import annotations

from typing import Any

from celmut.cel.lookups import AuthorizationAttributes, AuthorizationDecision, before_blocking
from celmut.kube.client import Cluster, ClusterError

API_VERSION = "authorization.k8s.io/v1"


def review(attributes: AuthorizationAttributes) -> dict[str, Any]:
    """The SubjectAccessReview asking ``attributes``."""
    user = attributes.user
    spec: dict[str, Any] = {"user": user.username, "groups": list(user.groups), "uid": user.uid}
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra}
    if attributes.resource_request:
        resource: dict[str, Any] = {
            "namespace": attributes.namespace,
            "verb": attributes.verb,
            "group": attributes.group,
            "version": "*",
            "resource": attributes.resource,
            "subresource": attributes.subresource,
            "name": attributes.name,
        }
        if attributes.field_selector:
            resource["fieldSelector"] = {"rawSelector": attributes.field_selector}
        if attributes.label_selector:
            resource["labelSelector"] = {"rawSelector": attributes.label_selector}
        spec["resourceAttributes"] = resource
    else:
        spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    return {"apiVersion": API_VERSION, "kind": "SubjectAccessReview", "spec": spec}


def decision_of(status: Any) -> AuthorizationDecision:
    """allowed → allow, denied → deny, neither → no opinion; ``evaluationError`` is the error."""
    status = status if isinstance(status, dict) else {}
    decision = "allow" if status.get("allowed") else "deny" if status.get("denied") else "no-opinion"
    return AuthorizationDecision(decision, str(status.get("reason") or ""), str(status.get("evaluationError") or ""))


class SubjectAccessReviewAuthorizer:
    """Answers checks with SubjectAccessReviews created through ``cluster``."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def authorize(self, attributes: AuthorizationAttributes) -> AuthorizationDecision:
        before_blocking("an authorization check (SubjectAccessReview)")
        try:
            answered = self.cluster.create(API_VERSION, "subjectaccessreviews", "", review(attributes))
        except ClusterError as ex:
            return AuthorizationDecision("no-opinion", error=f"SubjectAccessReview failed: {ex}")
        return decision_of(answered.get("status") if isinstance(answered, dict) else None)
