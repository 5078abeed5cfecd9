"""Authentication, authorization (built-in RBAC policy + Node rule), request attributes and
the protobuf SelfSubjectAccessReview, as tables."""

from __future__ import annotations

import ssl
from importlib import resources

import pytest

from inplace.core.security import pki
from inplace.core.security.authn import Authenticator, Unauthorized
from inplace.core.security.credentials import Token
from schemas.envelope import UserInfo
from schemas.k8s import Taint
from services.apiserver.auth.authorizer import Authorizer, forbidden_message
from services.apiserver.auth.nodeauthorizer import node_create_refusal, node_update_refusal
from services.apiserver.auth.rbac import Policy, PolicyError
from services.apiserver.auth.requestinfo import request_info
from services.apiserver.auth.reviews import rules_status
from tests import factories

ADMIN = UserInfo(username="inplace-admin", groups=("system:masters", "system:authenticated"))
WORKLOAD = UserInfo(
    username="system:inplace:workload-controller",
    groups=("system:inplace:controllers", "system:authenticated"),
)
NODE_A = UserInfo(username="system:node:node-a", groups=("system:nodes", "system:authenticated"))
ALICE = UserInfo(username="alice", groups=("system:authenticated",))
PODS_ON = {("default", "on-a"): "node-a", ("default", "on-b"): "node-b"}


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/d/pods", {}, ("list", "", "pods", "", "d", "")),
        ("GET", "/api/v1/pods", {"watch": "true"}, ("watch", "", "pods", "", "", "")),
        (
            "PATCH",
            "/api/v1/namespaces/d/pods/x/resize",
            {},
            ("patch", "", "pods", "resize", "d", "x"),
        ),
        (
            "PUT",
            "/api/v1/namespaces/d/status",
            {},
            ("update", "", "namespaces", "status", "d", "d"),
        ),
        ("DELETE", "/api/v1/nodes", {}, ("deletecollection", "", "nodes", "", "", "")),
        (
            "POST",
            "/apis/apps.inplace.dev/v1alpha1/namespaces/d/clonesets",
            {},
            ("create", "apps.inplace.dev", "clonesets", "", "d", ""),
        ),
        ("GET", "/api/v1/watch/namespaces/d/pods/x", {}, ("watch", "", "pods", "", "d", "x")),
    ],
)
def test_request_info(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    info = request_info(method, path, query)
    assert info.is_resource
    got = (info.verb, info.api_group, info.resource, info.subresource, info.namespace, info.name)
    assert got == expected


@pytest.mark.parametrize("path", ["/api", "/apis", "/apis/apps.inplace.dev", "/openapi/v2"])
def test_discovery_is_a_non_resource_url(path: str) -> None:
    info = request_info("GET", path, {})
    assert (info.is_resource, info.verb, info.path) == (False, "get", path)


@pytest.fixture(scope="module")
def authorizer() -> Authorizer:
    return Authorizer(Policy.load(), lambda ns, name: PODS_ON.get((ns, name)))


@pytest.mark.parametrize(
    ("user", "method", "path", "allowed"),
    [
        (ADMIN, "DELETE", "/api/v1/nodes/n1", True),
        (ADMIN, "GET", "/metrics-anything", True),
        (WORKLOAD, "PATCH", "/api/v1/namespaces/d/pods/x/resize", True),
        (WORKLOAD, "POST", "/apis/apps.inplace.dev/v1alpha1/namespaces/d/clonesets", True),
        (WORKLOAD, "POST", "/api/v1/namespaces/d/events", True),  # RolloutStarted …
        (WORKLOAD, "DELETE", "/api/v1/namespaces/d/events/x", False),
        (WORKLOAD, "POST", "/api/v1/nodes", False),
        (WORKLOAD, "POST", "/api/v1/namespaces/d/resourcequotas", False),
        (WORKLOAD, "GET", "/openapi/v2", True),  # discovery: every signed-in user
        (ALICE, "GET", "/api/v1/namespaces/d/pods", False),  # nobody bound alice
        (ALICE, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", True),
        (NODE_A, "GET", "/api/v1/pods", True),
        (NODE_A, "PATCH", "/api/v1/namespaces/default/pods/on-a/status", True),
        (NODE_A, "PATCH", "/api/v1/namespaces/default/pods/on-b/status", False),
        (NODE_A, "PATCH", "/api/v1/namespaces/default/pods/gone/status", False),
        (NODE_A, "PUT", "/api/v1/nodes/node-a/status", True),
        (NODE_A, "PUT", "/api/v1/nodes/node-b", False),
        (NODE_A, "DELETE", "/api/v1/nodes/node-a", False),
        (NODE_A, "PATCH", "/api/v1/namespaces/default/pods/on-a", False),  # spec: not a kubelet's
    ],
)
def test_built_in_policy(
    authorizer: Authorizer, user: UserInfo, method: str, path: str, allowed: bool
) -> None:
    assert authorizer.authorize(user, request_info(method, path, {})).allowed is allowed


def test_forbidden_messages_are_kube_apiservers() -> None:
    cases = [
        (
            request_info("PATCH", "/api/v1/namespaces/d/pods/x/status", {}),
            'pods "x" is forbidden: User "alice" cannot patch resource "pods/status" in API '
            'group "" in the namespace "d"',
        ),
        (
            request_info("GET", "/api/v1/nodes", {}),
            'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at '
            "the cluster scope",
        ),
        (
            request_info("GET", "/apis/apps.inplace.dev/v1alpha1/namespaces/d/clonesets/c", {}),
            'clonesets.apps.inplace.dev "c" is forbidden: User "alice" cannot get resource '
            '"clonesets" in API group "apps.inplace.dev" in the namespace "d"',
        ),
        (request_info("GET", "/logs", {}), 'forbidden: User "alice" cannot get path "/logs"'),
    ]
    for info, message in cases:
        assert forbidden_message(ALICE, info) == message


def test_a_kubelet_creates_only_its_own_node() -> None:
    assert node_create_refusal(NODE_A, "nodes", "node-a") is None
    assert node_create_refusal(NODE_A, "nodes", "node-b") == (
        'node "node-a" is not allowed to modify node "node-b"'
    )
    assert node_create_refusal(ADMIN, "nodes", "node-b") is None
    assert node_create_refusal(NODE_A, "pods", "x") is None


def test_a_kubelet_keeps_restricted_labels_and_taints_of_its_node() -> None:
    old = factories.node("node-a")
    old.metadata.labels = {"node-restriction.kubernetes.io/pool": "db"}
    relabelled = old.model_copy(deep=True)
    relabelled.metadata.labels = {"kubernetes.io/arch": "amd64"}
    assert node_update_refusal(NODE_A, old, relabelled) == (
        "is not allowed to modify labels: node-restriction.kubernetes.io/pool"
    )
    assert node_update_refusal(ADMIN, old, relabelled) is None
    tainted = old.model_copy(deep=True)
    tainted.spec.taints = [Taint(key="k", effect="NoSchedule")]
    assert node_update_refusal(NODE_A, old, tainted) == (
        'node "node-a" is not allowed to modify taints'
    )
    cordoned = old.model_copy(deep=True)
    cordoned.spec.unschedulable = True
    cordoned.metadata.labels = {**(old.metadata.labels or {}), "x.node.kubernetes.io/y": "1"}
    assert node_update_refusal(NODE_A, old, cordoned) is None


def test_role_bindings_grant_inside_their_namespace_only() -> None:
    policy = Policy.parse(
        """
kind: Role
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: resizer, namespace: team-a}
rules: [{apiGroups: [""], resources: [pods/resize], verbs: [patch]}]
---
kind: RoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: alice-resizes, namespace: team-a}
roleRef: {kind: Role, name: resizer}
subjects: [{kind: User, name: alice}]
"""
    )
    assert policy.allows(
        ALICE, request_info("PATCH", "/api/v1/namespaces/team-a/pods/x/resize", {})
    )
    assert not policy.allows(
        ALICE, request_info("PATCH", "/api/v1/namespaces/team-b/pods/x/resize", {})
    )
    assert not policy.allows(ALICE, request_info("PATCH", "/api/v1/namespaces/team-a/pods/x", {}))


def test_edit_may_evict_and_view_may_not() -> None:
    """kubectl drain and a VPA's updater evict through pods/eviction: edit grants it."""
    built_in = resources.files("services.apiserver.auth").joinpath("policy.yaml").read_text()
    binding = "---\nkind: RoleBinding\napiVersion: rbac.authorization.k8s.io/v1\n" + (
        "metadata: {{name: alice-{0}, namespace: {1}}}\nroleRef: {{kind: ClusterRole, name: {0}}}\n"
        "subjects: [{{kind: User, name: alice}}]\n"
    )
    bindings = binding.format("edit", "team-a") + binding.format("view", "team-b")
    policy = Policy.parse(built_in + bindings)
    evict = "/api/v1/namespaces/{}/pods/web/eviction"
    assert policy.allows(ALICE, request_info("POST", evict.format("team-a"), {}))
    assert not policy.allows(ALICE, request_info("POST", evict.format("team-b"), {}))


TEAM_POLICY = """
kind: Role
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: resizer, namespace: team-a}
rules:
  - {apiGroups: [""], resources: [pods/resize], verbs: [patch], resourceNames: [web-0]}
  - {apiGroups: [""], resources: [pods], verbs: [get, list]}
---
kind: RoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: devs-resize, namespace: team-a}
roleRef: {kind: Role, name: resizer}
subjects: [{kind: Group, name: devs}]
---
kind: ClusterRole
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: health}
rules: [{nonResourceURLs: [/healthz], verbs: [get]}]
---
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: everyone-health}
roleRef: {kind: ClusterRole, name: health}
subjects: [{kind: Group, name: system:authenticated}]
"""


def test_rules_review_lists_the_namespaces_and_the_clusters_grants() -> None:
    bob = UserInfo(username="bob", groups=("devs", "system:authenticated"))
    rules = Authorizer(Policy.parse(TEAM_POLICY), lambda ns, name: None).rules_for(bob, "team-a")
    assert rules_status(rules) == {
        "resourceRules": [
            {
                "verbs": ["patch"],
                "apiGroups": [""],
                "resources": ["pods/resize"],
                "resourceNames": ["web-0"],
            },
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
        ],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
        "incomplete": False,
    }
    elsewhere = Authorizer(Policy.parse(TEAM_POLICY), lambda ns, name: None).rules_for(bob, "b")
    assert [r.non_resource_urls for r in elsewhere.rules] == [["/healthz"]]


def test_a_kubelets_rules_are_incomplete(authorizer: Authorizer) -> None:
    status = rules_status(authorizer.rules_for(NODE_A, "default"))
    assert status["incomplete"] is True
    assert status["evaluationError"] == "node authorizer does not support user rule resolution"
    admin = rules_status(authorizer.rules_for(ADMIN, "default"))
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} in admin["resourceRules"]
    assert admin["incomplete"] is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Secret\nmetadata: {name: x}", "unsupported kind 'Secret'"),
        ("kind: ClusterRole\nmetadata: {name: x}\nrules: [{resources: [pods]}]", "verbs"),
        ("a: [", "not YAML"),
    ],
)
def test_a_bad_policy_is_one_line(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        Policy.parse(text, "policy.yaml")


def test_tokens_and_certificates_authenticate() -> None:
    authenticator = Authenticator([Token("s3cret", "bob", "1", ("devs",))])
    bob = authenticator.authenticate("Bearer s3cret", None)
    assert bob == UserInfo(username="bob", groups=("devs", "system:authenticated"))
    assert authenticator.authenticate(None, None) is None
    assert authenticator.authenticate("Basic Ym9iOnB3", None) is None  # not ours to judge
    for bad in ("Bearer nope", "Bearer ", "bearer s3cret2"):
        with pytest.raises(Unauthorized):
            authenticator.authenticate(bad, None)
    ca = pki.new_ca()
    issued = pki.issue(ca, "system:node:n1", organizations=["system:nodes"])
    der = ssl.PEM_cert_to_DER_cert(issued.cert_pem.decode())
    assert authenticator.authenticate("Bearer nope", der) == UserInfo(
        username="system:node:n1", groups=("system:nodes", "system:authenticated")
    )
