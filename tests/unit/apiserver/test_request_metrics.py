"""kube-apiserver's request metric labels (MonitorRequest's verb, scope and the rest)."""

from __future__ import annotations

import pytest

from services.apiserver.auth.requestinfo import request_info
from services.apiserver.metrics import request_labels

SMP = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


@pytest.mark.parametrize(
    ("method", "path", "query", "content_type", "labels"),
    [
        ("PATCH", "/api/v1/namespaces/d/pods/w/resize", {}, SMP,
         ["PATCH", "", "", "v1", "pods", "resize", "resource"]),
        ("PATCH", "/api/v1/namespaces/d/pods/w", {}, f"{APPLY}; charset=utf-8",
         ["APPLY", "", "", "v1", "pods", "", "resource"]),
        ("GET", "/api/v1/pods", {}, "", ["LIST", "", "", "v1", "pods", "", "cluster"]),
        ("GET", "/api/v1/namespaces/d/pods", {"watch": "true"}, "",
         ["WATCH", "", "", "v1", "pods", "", "namespace"]),
        ("POST", "/api/v1/namespaces/d/pods", {"dryRun": "All"}, "",
         ["POST", "All", "", "v1", "pods", "", "resource"]),
        ("DELETE", "/api/v1/namespaces/d/pods", {}, "",
         ["DELETECOLLECTION", "", "", "v1", "pods", "", "namespace"]),
        ("GET", "/apis/apps.inplace.dev/v1alpha1/namespaces/d/clonesets/c/scale", {}, "",
         ["GET", "", "apps.inplace.dev", "v1alpha1", "clonesets", "scale", "resource"]),
        # Not a served resource: a non-resource request, so clients cannot grow the labels.
        ("GET", "/api/v1/namespaces/d/bogus/x", {}, "", ["GET", "", "", "", "", "", ""]),
        ("GET", "/apis/made.up/v9/things", {}, "", ["GET", "", "", "", "", "", ""]),
        ("GET", "/healthz", {}, "", ["GET", "", "", "", "", "", ""]),
    ],
)  # fmt: skip
def test_labels_as_kube_apiserver_reports_them(
    method: str, path: str, query: dict[str, str], content_type: str, labels: list[str]
) -> None:
    info = request_info(method, path, query)
    assert request_labels(info, method, content_type, query.get("dryRun", "")) == [
        *labels,
        "apiserver",
    ]
