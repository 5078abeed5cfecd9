"""kube-apiserver's request metrics, with its names, labels and buckets: what a Kubernetes
operator's dashboards and SLO queries read (e.g. PATCH pods/resize latency)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from services.apiserver.auth.requestinfo import RequestInfo
from services.apiserver.discovery import SERVED

_LABELS = ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"]

REQUESTS = Counter(
    "apiserver_request_total",
    "Counter of apiserver requests broken out for each verb, dry run value, group, version, "
    "resource, scope, component, and HTTP response code.",
    [*_LABELS, "code"],
)
REQUEST_SECONDS = Histogram(
    "apiserver_request_duration_seconds",
    "Response latency distribution in seconds for each verb, dry run value, group, version, "
    "resource, subresource, scope and component.",
    _LABELS,
    buckets=(
        *(0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3),
        *(4, 5, 6, 8, 10, 15, 20, 30, 45, 60),
    ),
)

# RequestInfo's verbs as kube-apiserver reports them (uppercase; create is POST, and so on).
_REPORTED = {
    "get": "GET",
    "list": "LIST",
    "watch": "WATCH",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETECOLLECTION",
}
APPLY_PATCH = "application/apply-patch+yaml"


def request_labels(info: RequestInfo, method: str, content_type: str, dry_run: str) -> list[str]:
    """The labels kube-apiserver's MonitorRequest gives a request (verb, dry_run, group,
    version, resource, subresource, scope, component). A path naming no served resource is
    counted as a non-resource request: its labels stay bounded whatever clients ask for."""
    if info.is_resource and info.full_resource not in SERVED:
        info = RequestInfo(verb=info.verb, path=info.path)
    verb = _REPORTED.get(info.verb, method) if info.is_resource else method
    if verb == "PATCH" and content_type.split(";")[0].strip() == APPLY_PATCH:
        verb = "APPLY"
    if info.name or info.verb == "create":
        scope = "resource"
    elif info.namespace:
        scope = "namespace"
    else:
        scope = "cluster" if info.is_resource else ""
    return [
        verb,
        "All" if dry_run == "All" else "",
        info.api_group,
        info.api_version,
        info.resource,
        info.subresource,
        scope,
        "apiserver",
    ]


def observe_request(labels: list[str], code: int, seconds: float) -> None:
    REQUESTS.labels(*labels, str(code)).inc()
    REQUEST_SECONDS.labels(*labels).observe(seconds)
