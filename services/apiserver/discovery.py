"""Discovery documents: /version, /api, /api/v1, /apis (what clients read first)."""

from __future__ import annotations

from typing import Any

from schemas import policy

KUBE_VERSION = {"major": "1", "minor": "35"}  # the API (schemas.kubeschema) we serve

_RW = ["create", "delete", "get", "list", "patch", "update", "watch"]
_READ = ["get", "list", "watch"]

RESOURCES: list[dict[str, Any]] = [
    {
        "name": "pods",
        "singularName": "pod",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        "shortNames": ["po"],
        "categories": ["all"],
    },
    {
        "name": "pods/status",
        "singularName": "",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["get"],
    },
    {
        "name": "pods/resize",
        "singularName": "",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["get", "patch", "update"],
    },
    {
        # kubectl drain evicts through this when discovery names its group and version.
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
        "verbs": ["create"],
    },
    {
        # None held (emptykinds.py): listed for `kubectl cluster-info`, which asks for them.
        "name": "services",
        "singularName": "service",
        "namespaced": True,
        "kind": "Service",
        "verbs": ["get", "list"],
        "shortNames": ["svc"],
    },
    {
        "name": "nodes",
        "singularName": "node",
        "namespaced": False,
        "kind": "Node",
        "verbs": _RW,
        "shortNames": ["no"],
    },
    {
        "name": "nodes/status",
        "singularName": "",
        "namespaced": False,
        "kind": "Node",
        "verbs": ["get"],
    },
    {
        "name": "namespaces",
        "singularName": "namespace",
        "namespaced": False,
        "kind": "Namespace",
        "verbs": _RW,
        "shortNames": ["ns"],
    },
    {
        "name": "resourcequotas",
        "singularName": "resourcequota",
        "namespaced": True,
        "kind": "ResourceQuota",
        "verbs": _RW,
        "shortNames": ["quota"],
    },
    {
        "name": "resourcequotas/status",
        "singularName": "",
        "namespaced": True,
        "kind": "ResourceQuota",
        "verbs": ["get"],
    },
    {
        "name": "limitranges",
        "singularName": "limitrange",
        "namespaced": True,
        "kind": "LimitRange",
        "verbs": _RW,
        "shortNames": ["limits"],
    },
    {
        "name": "events",
        "singularName": "event",
        "namespaced": True,
        "kind": "Event",
        "verbs": ["create", "get", "list", "patch", "update", "watch"],
        "shortNames": ["ev"],
    },
]


def version() -> dict[str, Any]:
    return {
        **KUBE_VERSION,
        "gitVersion": "v1.35.0-inplace",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "python",
        "compiler": "cpython",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_v1() -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "v1",
        "resources": RESOURCES,
    }


def apis() -> dict[str, Any]:
    groups = [
        workload_group(),
        *(api_group(g, "v1") for g in REVIEW_GROUPS),
        api_group(METRICS_GROUP, METRICS_VERSION),
        api_group("coordination.k8s.io", "v1"),
        api_group(POLICY_GROUP, POLICY_VERSION),
        api_group(EXTENSIONS_GROUP, EXTENSIONS_VERSION),
    ]
    entries = [{k: v for k, v in g.items() if k not in ("kind", "apiVersion")} for g in groups]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": entries}


def api_group(name: str, version: str) -> dict[str, Any]:
    """One APIGroup entry (also the body of /apis/<group>)."""
    gv = f"{name}/{version}"
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": [{"groupVersion": gv, "version": version}],
        "preferredVersion": {"groupVersion": gv, "version": version},
    }


def api_resources(group_version: str, resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


# --- the self reviews: `kubectl auth can-i` and `kubectl auth whoami` -------------------------

REVIEW_GROUPS: dict[str, list[dict[str, Any]]] = {
    "authorization.k8s.io": [
        {
            "name": "selfsubjectaccessreviews",
            "singularName": "selfsubjectaccessreview",
            "namespaced": False,
            "kind": "SelfSubjectAccessReview",
            "verbs": ["create"],
        },
        {
            "name": "selfsubjectrulesreviews",
            "singularName": "selfsubjectrulesreview",
            "namespaced": False,
            "kind": "SelfSubjectRulesReview",
            "verbs": ["create"],
        },
    ],
    "authentication.k8s.io": [
        {
            "name": "selfsubjectreviews",
            "singularName": "selfsubjectreview",
            "namespaced": False,
            "kind": "SelfSubjectReview",
            "verbs": ["create"],
        }
    ],
}


# --- metrics.k8s.io: resource usage (`kubectl top`), as metrics-server serves it -----------------

METRICS_GROUP = "metrics.k8s.io"
METRICS_VERSION = "v1beta1"
METRICS_RESOURCES: list[dict[str, Any]] = [
    {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics",
     "verbs": ["get", "list"]},
    {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics",
     "verbs": ["get", "list"]},
]  # fmt: skip


# --- apiextensions.k8s.io: listed, with no custom resources in it (emptykinds.py) -------------

EXTENSIONS_GROUP, EXTENSIONS_VERSION = "apiextensions.k8s.io", "v1"
EXTENSIONS_RESOURCES: list[dict[str, Any]] = [
    {
        "name": "customresourcedefinitions",
        "singularName": "customresourcedefinition",
        "namespaced": False,
        "kind": "CustomResourceDefinition",
        "verbs": ["get", "list"],
        "shortNames": ["crd", "crds"],
        "categories": ["api-extensions"],
    }
]


# --- apps.inplace.dev: the workload API group ----------------------------------------------------

WORKLOAD_GROUP = "apps.inplace.dev"
WORKLOAD_VERSION = "v1alpha1"
WORKLOAD_RESOURCES: list[dict[str, Any]] = [
    {
        "name": "clonesets",
        "singularName": "cloneset",
        "namespaced": True,
        "kind": "CloneSet",
        "verbs": _RW,
        "shortNames": ["clone"],
        "categories": ["all"],
    },
    {
        "name": "clonesets/status",
        "singularName": "",
        "namespaced": True,
        "kind": "CloneSet",
        "verbs": ["get", "patch", "update"],
    },
    {
        "name": "clonesets/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    },
]


# --- policy/v1: disruption budgets (pods/eviction is listed under v1, as kube-apiserver does) --

POLICY_GROUP, POLICY_VERSION = policy.GROUP, policy.VERSION
POLICY_RESOURCES: list[dict[str, Any]] = [
    {
        "name": "poddisruptionbudgets",
        "singularName": "poddisruptionbudget",
        "namespaced": True,
        "kind": "PodDisruptionBudget",
        "verbs": _RW,
        "shortNames": ["pdb"],
    },
    {
        "name": "poddisruptionbudgets/status",
        "singularName": "",
        "namespaced": True,
        "kind": "PodDisruptionBudget",
        "verbs": ["get"],
    },
]


def workload_group() -> dict[str, Any]:
    return api_group(WORKLOAD_GROUP, WORKLOAD_VERSION)


def workload_resources() -> dict[str, Any]:
    return api_resources(f"{WORKLOAD_GROUP}/{WORKLOAD_VERSION}", WORKLOAD_RESOURCES)


# Every resource and subresource served ("pods", "pods/resize", …), e.g. for metric labels.
SERVED = frozenset(
    r["name"]
    for r in [
        *RESOURCES,
        *WORKLOAD_RESOURCES,
        *POLICY_RESOURCES,
        *(r for rs in REVIEW_GROUPS.values() for r in rs),
    ]
)
