"""The CEL authorizer in the cluster: SubjectAccessReviews through the real client (issue 25, item 6).

The fake API server answers reviews with RBAC (tests/fakekube/authorization.py, following
``plugin/pkg/auth/authorizer/rbac/rbac.go``); the shipped RBAC lets both components create them
(tests/install). A MutatingAdmissionPolicy's ``authorizer`` then answers as the cluster's authorizer
would, for the requesting user from the AdmissionRequest."""

from __future__ import annotations

import pytest

from celmut import cel
from celmut.cel.lookups import AuthorizationAttributes, UserInfo
from celmut.kube.authorization import SubjectAccessReviewAuthorizer, review
from celmut.kube.client import Cluster
from tests.fakekube.server import FakeApiServer

ALICE = UserInfo("alice", "u-1", ("dev", "system:authenticated"), (("team", ("payments",)),))


@pytest.fixture
def rbac(fake_apiserver: FakeApiServer) -> FakeApiServer:
    store = fake_apiserver.store
    store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "pod-deleter"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["delete", "get"]},
                {"nonResourceURLs": ["/healthz"], "verbs": ["get"]},
            ],
        }
    )
    store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "devs-delete-pods", "namespace": "shop"},
            "subjects": [{"kind": "Group", "name": "dev"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-deleter"},
        }
    )
    store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "builder-healthz"},
            "subjects": [{"kind": "ServiceAccount", "name": "builder", "namespace": "ci"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-deleter"},
        }
    )
    return fake_apiserver


def test_a_review_carries_the_user_and_the_attributes_as_authz_go_builds_them() -> None:
    """resourceCheckVal.Authorize: APIVersion "*"; the user's groups, uid and extra."""
    attributes = AuthorizationAttributes(
        ALICE, "list", resource_request=True, resource="pods", namespace="shop", label_selector="app=web"
    )
    spec = review(attributes)["spec"]
    assert spec["user"] == "alice" and spec["groups"] == ["dev", "system:authenticated"] and spec["uid"] == "u-1"
    assert spec["extra"] == {"team": ["payments"]}
    assert spec["resourceAttributes"]["version"] == "*"
    assert spec["resourceAttributes"]["labelSelector"] == {"rawSelector": "app=web"}
    path = review(AuthorizationAttributes(ALICE, "get", path="/healthz"))["spec"]
    assert path["nonResourceAttributes"] == {"path": "/healthz", "verb": "get"} and "resourceAttributes" not in path


@pytest.mark.usefixtures("rbac")
def test_reviews_answer_with_the_clusters_rbac(cluster: Cluster) -> None:
    authorizer = SubjectAccessReviewAuthorizer(cluster)

    def ask(verb: str, namespace: str = "shop", user: UserInfo = ALICE, **more: str) -> tuple[str, str]:
        decision = authorizer.authorize(
            AuthorizationAttributes(user, verb, resource_request=True, resource="pods", namespace=namespace, **more)
        )
        return decision.decision, decision.reason

    assert ask("delete") == ("allow", 'RBAC: allowed by RoleBinding "devs-delete-pods"')
    assert ask("delete", subresource="status")[0] == "allow"
    assert ask("create") == ("no-opinion", "")  # RBAC never denies: no opinion, not allowed
    assert ask("delete", namespace="other")[0] == "no-opinion"  # the RoleBinding is in shop only
    builder = UserInfo("system:serviceaccount:ci:builder", groups=("system:serviceaccounts",))
    assert ask("get", namespace="anywhere", user=builder)[0] == "allow"
    healthz = authorizer.authorize(AuthorizationAttributes(ALICE, "get", path="/healthz"))
    assert healthz.decision == "no-opinion"  # alice's binding is a RoleBinding: no non-resource URLs
    masters = UserInfo("root", groups=("system:masters",))
    assert ask("escalate", user=masters)[0] == "allow"


@pytest.mark.usefixtures("rbac")
def test_a_map_expression_checks_the_requesting_user_through_the_cluster(cluster: Cluster) -> None:
    """The CEL library end to end: authorizer.requestResource for alice's request in shop."""
    request = cel.admission_request(
        resource={"group": "", "version": "v1", "resource": "pods"},
        namespace="shop",
        name="web",
        user_info={"username": "alice", "groups": ["dev"]},
    )
    services = cel.Services(authorizer=SubjectAccessReviewAuthorizer(cluster))
    env = cel.Environment("kubernetes")
    expression = (
        "[string(authorizer.requestResource.check('delete').allowed()),"
        " authorizer.serviceAccount('ci', 'builder').group('').resource('pods').check('get').reason()]"
    )
    result = env.compile(expression).evaluate(cel.Activation(request=request, services=services))
    assert cel.to_plain(result) == ["true", 'RBAC: allowed by ClusterRoleBinding "builder-healthz"']
    create = env.compile("authorizer.requestResource.check('create').allowed()")
    assert create.evaluate(cel.Activation(request=request, services=services)) is False


def test_an_unreachable_api_server_is_the_decisions_error(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    """authz.go newDecision(decision, err, reason): an authorizer error is errored()/error(), not a CEL error."""
    fake_apiserver.stop()
    decision = SubjectAccessReviewAuthorizer(cluster).authorize(AuthorizationAttributes(ALICE, "get", path="/x"))
    assert decision.decision == "no-opinion" and decision.error.startswith("SubjectAccessReview failed")
