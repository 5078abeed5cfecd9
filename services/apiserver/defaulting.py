"""kube-apiserver's defaults for the Pod fields no role interprets (they travel as JSON).

`validation.default_pod` defaults the typed fields (restartPolicy, dnsPolicy, imagePullPolicy,
resources …); this module fills in, on the decoded JSON body, what pkg/apis/core/v1/defaults.go
and the default admission plugins add to the rest, so a pod reads back as it would from a
Kubernetes 1.35 cluster:

- PodSpec: `enableServiceLinks: true`, `securityContext: {}`; without a priorityClassName,
  `priority: 0` and `preemptionPolicy: PreemptLowerPriority` (Priority admission); the
  `node.kubernetes.io/not-ready` and `unreachable` NoExecute tolerations for 300 s unless the
  pod tolerates them already (DefaultTolerationSeconds admission).
- Containers (all kinds): `terminationMessagePath: /dev/termination-log`,
  `terminationMessagePolicy: File`; probes get `timeoutSeconds: 1`, `periodSeconds: 10`,
  `successThreshold: 1`, `failureThreshold: 3`; an httpGet action `path: /`, `scheme: HTTP`.
- `fieldRef.apiVersion: v1` in env and downward API items; volumes with no source become
  `emptyDir: {}`; secret, configMap, downwardAPI and projected volumes `defaultMode: 420`.

Not added: the ServiceAccount admission's `serviceAccountName` and token volume (this
control plane serves no ServiceAccounts).
"""

from __future__ import annotations

from typing import Any

__all__ = ["default_pod_json"]

TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_TOLERATION_SECONDS = 300
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1}
_VOLUME_SOURCES_WITH_MODE = ("secret", "configMap", "downwardAPI", "projected")
_DEFAULT_MODE = 0o644  # 420, as kube-apiserver writes it


def default_pod_json(pod: dict[str, Any]) -> None:
    """Default the untyped fields of a Pod body in place (a fresh, schema-checked decode)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("enableServiceLinks", True)
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if not spec.get("priorityClassName"):
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    _default_tolerations(spec)
    for group in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(group) or []:
            if isinstance(container, dict):
                _default_container(container)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            _default_volume(volume)


def _default_container(container: dict[str, Any]) -> None:
    container.setdefault("terminationMessagePath", TERMINATION_MESSAGE_PATH)
    container.setdefault("terminationMessagePolicy", "File")
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(probe_name)
        if isinstance(probe, dict):
            for key, value in _PROBE_DEFAULTS.items():
                probe.setdefault(key, value)
            # A liveness or startup probe must have successThreshold 1; 3 failures by default.
            probe.setdefault("failureThreshold", 3)
            _default_http_get(probe)
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for handler in lifecycle.values():
            if isinstance(handler, dict):
                _default_http_get(handler)
    for env in container.get("env") or []:
        if isinstance(env, dict):
            _default_field_ref((env.get("valueFrom") or {}).get("fieldRef"))


def _default_http_get(action: dict[str, Any]) -> None:
    http_get = action.get("httpGet")
    if isinstance(http_get, dict):
        if not http_get.get("path"):
            http_get["path"] = "/"
        http_get.setdefault("scheme", "HTTP")


def _default_field_ref(ref: Any) -> None:
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def _default_volume(volume: dict[str, Any]) -> None:
    if set(volume) <= {"name"}:
        volume["emptyDir"] = {}
    for source in _VOLUME_SOURCES_WITH_MODE:
        body = volume.get(source)
        if isinstance(body, dict):
            body.setdefault("defaultMode", _DEFAULT_MODE)
    downward = volume.get("downwardAPI")
    if isinstance(downward, dict):
        for item in downward.get("items") or []:
            if isinstance(item, dict):
                _default_field_ref(item.get("fieldRef"))
    projected = volume.get("projected")
    if isinstance(projected, dict):
        for part in projected.get("sources") or []:
            downward_part = part.get("downwardAPI") if isinstance(part, dict) else None
            for item in (downward_part or {}).get("items") or []:
                if isinstance(item, dict):
                    _default_field_ref(item.get("fieldRef"))


def _default_tolerations(spec: dict[str, Any]) -> None:
    tolerations = spec.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        return
    found = list(tolerations or [])
    for key in (_NOT_READY, _UNREACHABLE):
        if not any(_tolerates_no_execute(t, key) for t in found if isinstance(t, dict)):
            found.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    spec["tolerations"] = found


def _tolerates_no_execute(toleration: dict[str, Any], key: str) -> bool:
    """Whether the pod already tolerates `key:NoExecute` (then admission adds nothing)."""
    if toleration.get("effect") not in (None, "", "NoExecute"):
        return False
    if toleration.get("operator") == "Exists" and not toleration.get("key"):
        return True
    return toleration.get("key") == key
