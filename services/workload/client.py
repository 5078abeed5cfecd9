"""The workload controller's only way to change the cluster: the apiserver's REST API, as a
Kubernetes controller goes through kube-apiserver (validation, defaulting, quota admission and
the pod `resize` subresource all apply). Answers carry resourceVersions, which locate the
write in the log, so the caller can wait for its own read model to show it."""

from __future__ import annotations

import socket
from datetime import datetime
from typing import Any

import httpx

from inplace.core.security.kubeconfig import Endpoint
from schemas.k8s import Pod
from schemas.kubeevents import event_about, occurrence_name, reference
from schemas.workload import API_VERSION, KIND, CloneSet

COMPONENT = "cloneset-controller"
MERGE = {"content-type": "application/merge-patch+json"}
STRATEGIC = {"content-type": "application/strategic-merge-patch+json"}


class Conflict(Exception):
    """The object changed since it was read (409) or is gone (404): decide again."""


class Refused(Exception):
    """The apiserver refused the write for good (a 4xx other than 404/409: 422 invalid, 403
    quota or LimitRange, 400): the same request cannot succeed later."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Unavailable(Exception):
    """The apiserver could not answer (5xx, connection refused, timeout): try again later."""


class ApiClient:
    def __init__(self, endpoint: Endpoint) -> None:
        self.http = httpx.AsyncClient(
            base_url=endpoint.server,
            verify=endpoint.ssl_context(),
            headers=endpoint.headers(),
            timeout=30,
        )

    async def close(self) -> None:
        await self.http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise Unavailable(f"{method} {path}: {exc!r}") from None
        code = response.status_code
        if code in (404, 409):
            raise Conflict(f"{method} {path}: {response.text[:300]}")
        if 400 <= code < 500:
            raise Refused(code, _message(response))
        if code >= 500:
            raise Unavailable(f"{method} {path}: {code} {_message(response)}")
        body: dict[str, Any] = response.json()
        return body

    @staticmethod
    def _pods(namespace: str) -> str:
        return f"/api/v1/namespaces/{namespace}/pods"

    async def create_pod(self, pod: Pod) -> dict[str, Any]:
        return await self._call("POST", self._pods(pod.metadata.namespace or ""), json=pod.to_k8s())

    async def delete_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return await self._call("DELETE", f"{self._pods(namespace)}/{name}")

    async def relabel_pod(
        self, pod: Pod, labels: dict[str, str], annotations: dict[str, str]
    ) -> dict[str, Any]:
        """A merge patch of labels and annotations (removed keys as null), guarded by the
        resourceVersion the decision was made on."""

        def diff(old: dict[str, str] | None, new: dict[str, str]) -> dict[str, str | None]:
            return {**{k: None for k in old or {} if k not in new}, **new}

        patch = {
            "metadata": {
                "resourceVersion": pod.metadata.resource_version,
                "labels": diff(pod.metadata.labels, labels),
                "annotations": diff(pod.metadata.annotations, annotations),
            }
        }
        path = f"{self._pods(pod.metadata.namespace or '')}/{pod.metadata.name}"
        return await self._call("PATCH", path, json=patch, headers=MERGE)

    async def resize_pod(self, pod: Pod, patch: dict[str, Any]) -> dict[str, Any]:
        body = {**patch, "metadata": {"resourceVersion": pod.metadata.resource_version}}
        path = f"{self._pods(pod.metadata.namespace or '')}/{pod.metadata.name}/resize"
        return await self._call("PATCH", path, json=body, headers=STRATEGIC)

    async def put_status(self, cs: CloneSet) -> dict[str, Any]:
        ns, name = cs.metadata.namespace, cs.metadata.name
        path = f"/apis/{API_VERSION}/namespaces/{ns}/clonesets/{name}/status"
        return await self._call("PUT", path, json=cs.to_k8s())

    async def record_event(
        self, cs: CloneSet, type_: str, reason: str, message: str, now: datetime
    ) -> None:
        event = event_about(
            reference(KIND, cs.metadata, API_VERSION),
            name=occurrence_name(cs.metadata.name or "", now),
            namespace=cs.metadata.namespace,
            reason=reason,
            message=message,
            type_=type_,  # type: ignore[arg-type]
            action=reason,
            now=now,
            counted=True,
            component=COMPONENT,
            instance=f"{COMPONENT}-{socket.gethostname()}",
        )
        await self._call(
            "POST", f"/api/v1/namespaces/{cs.metadata.namespace}/events", json=event.to_k8s()
        )


def _message(response: httpx.Response) -> str:
    """The Status message of an error answer (its body, cut, when it is not a Status)."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    message = body.get("message") if isinstance(body, dict) else None
    return str(message) if message else response.text[:300]
