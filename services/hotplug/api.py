"""POST /api/v1/nodes/{name}/resize: resize a simulated node, as a cloud/VM hotplug would.

Body: any of `{"cpu": "16", "memory": "64Gi", "swap": "8Gi", "hugepages-2Mi": "1Gi"}`.
200 with the old and new capacity/allocatable (`changed` false for a no-op); failures are
Kubernetes `Status` bodies: 400 BadRequest (not a resize), 404 NotFound (unknown node), 422
Invalid (zero, negative, below what the node reserves), 409 Conflict when the
InPlaceNodeResourceResize feature gate is off, 503 while the read model catches up.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from schemas.k8s import ResourceList, Status, StatusCause, StatusDetails
from services.hotplug.capacity import InvalidResize, MalformedResize, parse_request
from services.hotplug.resizer import FeatureGateDisabled, NodeNotFoundError, Resizer

__all__ = ["ResizeApi"]

log = logging.getLogger(__name__)

_MAX_BODY: Final = 64 * 1024


def _status(
    code: int,
    reason: str,
    message: str,
    *,
    name: str | None = None,
    kind: str = "nodes",
    causes: list[StatusCause] | None = None,
) -> Response:
    # As Kubernetes: NotFound names the resource ("nodes"), Invalid the kind ("Node").
    details = StatusDetails(name=name, kind=kind, causes=causes) if name else None
    status = Status(status="Failure", message=message, reason=reason, details=details, code=code)
    return JSONResponse(status.to_k8s(), status_code=code)


def _resources(resources: ResourceList) -> dict[str, str]:
    return {k: str(v) for k, v in resources.items()}


class ResizeApi:
    def __init__(self, resizer: Resizer, ready: Callable[[], bool]) -> None:
        self.resizer = resizer
        self._ready = ready

    def routes(self) -> list[Route]:
        return [Route("/api/v1/nodes/{name}/resize", self.resize, methods=["POST"])]

    async def resize(self, request: Request) -> Response:
        name = request.path_params["name"]
        if not self._ready():
            return _status(503, "ServiceUnavailable", "the hotplug read model is catching up")
        raw = await request.body()
        if len(raw) > _MAX_BODY:
            return _status(
                413, "RequestEntityTooLarge", f"the request body is larger than {_MAX_BODY} bytes"
            )
        try:
            body = json.loads(raw) if raw.strip() else None
            requested = parse_request(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _status(400, "BadRequest", f"the request body is not JSON: {exc}")
        except MalformedResize as exc:
            return _status(400, "BadRequest", str(exc))
        except InvalidResize as exc:
            return self._invalid(name, exc)
        try:
            change, node = await self.resizer.resize(name, requested, source="api")
        except NodeNotFoundError as exc:
            return _status(404, "NotFound", str(exc), name=name)
        except FeatureGateDisabled as exc:
            return _status(409, "Conflict", str(exc), name=name)
        except InvalidResize as exc:
            return self._invalid(name, exc)
        except TimeoutError:
            return _status(504, "Timeout", "the resize was written but not seen back in time")
        return JSONResponse(
            {
                "kind": "NodeResize",
                "apiVersion": "v1",
                "name": name,
                "changed": change.changed,
                "oldCapacity": _resources(change.old_capacity),
                "newCapacity": _resources(change.new_capacity),
                "oldAllocatable": _resources(change.old_allocatable),
                "newAllocatable": _resources(change.new_allocatable),
                "initialCapacity": _resources(node.status.initial_capacity or {}),
            }
        )

    @staticmethod
    def _invalid(name: str, exc: InvalidResize) -> Response:
        causes = [
            StatusCause(
                reason="FieldValueInvalid",
                message=f'Invalid value: "{p.value}": {p.message}',
                field=p.field,
            )
            for p in exc.problems
        ]
        message = f'Node "{name}" is invalid: {exc}'
        return _status(422, "Invalid", message, name=name, kind="Node", causes=causes)
