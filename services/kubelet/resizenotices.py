"""What the kubelet's resize Events say (pkg/kubelet/events, podResizeMessage): a prefix, then
JSON of each init and regular container's resources in the pod given (the allocated one for
started, completed and error; the desired one for a pending resize), the generation, and
the error when there is one, as `kubectl describe pod` shows them:

    Pod resize started: {"containers":[{"name":"app","resources":{"limits":{"cpu":"500m"},
    "requests":{"cpu":"300m"}}}],"generation":2}
"""

from __future__ import annotations

import json
from typing import Any

from schemas.k8s import Container, Pod

# Go's encoding/json escapes these in strings (HTML safety); the messages match it byte for byte.
_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def resize_message(prefix: str, pod: Pod, generation: int, error: str = "") -> str:
    summary: dict[str, Any] = {}
    if pod.spec.init_containers:
        summary["initContainers"] = [_allocation(c) for c in pod.spec.init_containers]
    if pod.spec.containers:
        summary["containers"] = [_allocation(c) for c in pod.spec.containers]
    summary["generation"] = generation
    if error:
        summary["error"] = error
    text = json.dumps(summary, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_ESCAPES.items():
        text = text.replace(char, escaped)
    return f"{prefix}: {text}"


def _allocation(container: Container) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    for field in ("limits", "requests"):  # ResourceRequirements' field order, maps sorted
        values = getattr(container.resources, field, None) if container.resources else None
        if values:
            resources[field] = {name: str(values[name]) for name in sorted(values)}
    return {"name": container.name, "resources": resources}
