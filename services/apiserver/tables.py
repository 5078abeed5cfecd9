"""Server-side `Table` output: what `kubectl get` prints, computed as kube-apiserver does.

kubectl asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` on get, list and
watch; the rows carry the columns of kube-apiserver's printers
(pkg/printers/internalversion/printers.go) for pods, nodes, namespaces, events,
resourcequotas, limitranges and poddisruptionbudgets, and printer columns of our choosing for
CloneSets (OpenKruise's). Columns of priority 1 are the `-o wide` ones. Pure functions over
Kubernetes JSON objects; `now` is passed in so ages are testable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from schemas.podview import TERMINAL_PHASES
from schemas.quantity import Quantity

__all__ = [
    "TableRequest",
    "human_duration",
    "parse_accept",
    "table",
]

Obj = dict[str, Any]
Column = tuple[str, str, int, str]  # name, type, priority, description
Cells = list[Any]
_NAME: Column = ("Name", "string", 0, "Name must be unique within a namespace.")
_AGE: Column = (
    "Age",
    "string",
    0,
    "CreationTimestamp is a timestamp of when the object was created.",
)


@dataclass(frozen=True)
class TableRequest:
    """A client asked for a Table (`as=Table;g=meta.k8s.io;v=v1|v1beta1`)."""

    version: str  # "v1" or "v1beta1"
    include_object: str  # "None" | "Object" | "Metadata"


def parse_accept(accept: str | None, include_object: str | None) -> TableRequest | None:
    """The Table the Accept header asks for, if any (the first acceptable media type wins,
    as kube-apiserver's negotiation picks it)."""
    for part in (accept or "").split(","):
        media, *params = (p.strip() for p in part.split(";"))
        values = dict(p.split("=", 1) for p in params if "=" in p)
        if media in ("application/json", "*/*", "application/*") and values.get("as") == "Table":
            if values.get("g") == "meta.k8s.io" and values.get("v") in ("v1", "v1beta1"):
                how = (
                    include_object
                    if include_object in ("None", "Object", "Metadata")
                    else "Metadata"
                )
                return TableRequest(values["v"], how)
        elif media in ("application/json", "*/*", "application/*", "") and "as" not in values:
            return None  # plain JSON preferred
    return None


def table(
    kind: str,
    objects: Sequence[Obj],
    request: TableRequest,
    now: datetime,
    resource_version: str | None = None,
    *,
    headers: bool = True,
) -> Obj:
    """A `meta.k8s.io` Table of `objects` (all of `kind`)."""
    columns, printer = _PRINTERS.get(kind, ([_NAME, _AGE], _print_generic))
    rows = []
    for obj in objects:
        row: Obj = {"cells": printer(obj, now)}
        if request.include_object == "Object":
            row["object"] = obj
        elif request.include_object == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": f"meta.k8s.io/{request.version}",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    out: Obj = {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{request.version}",
        "metadata": {"resourceVersion": resource_version} if resource_version else {},
        "columnDefinitions": [
            {
                "name": n,
                "type": t,
                "format": "name" if c is _NAME else "",
                "description": d,
                "priority": p,
            }
            for c in columns
            for (n, t, p, d) in [c]
        ]
        if headers
        else [],
        "rows": rows,
    }
    return out


# --- time ---------------------------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: `5s`, `3m2s`, `10m`, `3h`, `2d5h`, `3y`."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _since(value: Any, now: datetime) -> str:
    """translateTimestampSince: `<unknown>` for an unset time."""
    when = _parse_time(value)
    if when is None:
        return "<unknown>"
    return human_duration((now - when.astimezone(UTC)).total_seconds())


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# --- pods ---------------------------------------------------------------------------------------

_POD_COLUMNS: list[Column] = [
    _NAME,
    ("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
    ("Status", "string", 0, "The aggregate status of the containers in this pod."),
    (
        "Restarts",
        "string",
        0,
        "The number of times the containers in this pod have been restarted and when the last "
        "container in this pod has restarted.",
    ),
    _AGE,
    (
        "IP",
        "string",
        1,
        "podIP address allocated to the pod. Routable at least within the cluster.",
    ),
    ("Node", "string", 1, "NodeName indicates in which node this pod is scheduled."),
    ("Nominated Node", "string", 1, "nominatedNodeName is set when this pod preempts other pods."),
    ("Readiness Gates", "string", 1, "If specified, all readiness gates will be evaluated."),
]


def _print_pod(pod: Obj, now: datetime) -> Cells:
    """printPod, rule for rule: READY, STATUS (phase, reason, init and container states,
    Terminating), RESTARTS with the last restart's age."""
    spec, status = _dict(pod.get("spec")), _dict(pod.get("status"))
    meta = _meta(pod)
    init_specs = {
        c.get("name"): c for c in _list(spec.get("initContainers")) if isinstance(c, dict)
    }
    sidecar = {name for name, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    total = len(_list(spec.get("containers"))) + len(sidecar)
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    conditions = [c for c in _list(status.get("conditions")) if isinstance(c, dict)]
    for condition in conditions:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    def later(current: datetime | None, terminated: Obj) -> datetime | None:
        when = _parse_time(terminated.get("finishedAt"))
        return when if when is not None and (current is None or when > current) else current

    initializing = False
    init_statuses = [c for c in _list(status.get("initContainerStatuses")) if isinstance(c, dict)]
    for i, cs in enumerate(init_statuses):
        count = int(cs.get("restartCount") or 0)
        restarts += count
        last_terminated = _dict(_dict(cs.get("lastState")).get("terminated"))
        if last_terminated:
            last_restart = later(last_restart, last_terminated)
        is_sidecar = cs.get("name") in sidecar
        if is_sidecar:
            sidecar_restarts += count
            if last_terminated:
                last_sidecar_restart = later(last_sidecar_restart, last_terminated)
        state = _dict(cs.get("state"))
        terminated, waiting = _dict(state.get("terminated")), _dict(state.get("waiting"))
        if terminated and terminated.get("exitCode") == 0:
            continue
        if is_sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if terminated:
            if not terminated.get("reason"):
                if terminated.get("signal"):
                    reason = f"Init:Signal:{terminated['signal']}"
                else:
                    reason = f"Init:ExitCode:{terminated.get('exitCode', 0)}"
            else:
                reason = f"Init:{terminated['reason']}"
        elif waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions
    )
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        statuses = [c for c in _list(status.get("containerStatuses")) if isinstance(c, dict)]
        for cs in reversed(statuses):
            restarts += int(cs.get("restartCount") or 0)
            last_terminated = _dict(_dict(cs.get("lastState")).get("terminated"))
            if last_terminated:
                last_restart = later(last_restart, last_terminated)
            state = _dict(cs.get("state"))
            terminated, waiting = _dict(state.get("terminated")), _dict(state.get("waiting"))
            if waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated:
                if terminated.get("signal"):
                    reason = f"Signal:{terminated['signal']}"
                else:
                    reason = f"ExitCode:{terminated.get('exitCode', 0)}"
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            has_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
            )
            reason = "Running" if has_ready else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in TERMINAL_PHASES:
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    pod_ips = [p.get("ip") for p in _list(status.get("podIPs")) if isinstance(p, dict)]
    gates = [
        g.get("conditionType") for g in _list(spec.get("readinessGates")) if isinstance(g, dict)
    ]
    gates_text = "<none>"
    if gates:
        by_type = {c.get("type"): c.get("status") for c in conditions}
        gates_text = f"{sum(1 for g in gates if by_type.get(g) == 'True')}/{len(gates)}"
    return [
        meta.get("name", ""),
        f"{ready}/{total}",
        reason,
        restarts_text,
        _since(meta.get("creationTimestamp"), now),
        (pod_ips[0] if pod_ips else status.get("podIP")) or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


# --- nodes --------------------------------------------------------------------------------------

_NODE_COLUMNS: list[Column] = [
    _NAME,
    ("Status", "string", 0, "The status of the node"),
    ("Roles", "string", 0, "The roles of the node"),
    _AGE,
    ("Version", "string", 0, "Kubelet Version reported by the node."),
    ("Internal-IP", "string", 1, "List of internal IPs."),
    ("External-IP", "string", 1, "List of external IPs."),
    ("OS-Image", "string", 1, "OS Image reported by the node from /etc/os-release."),
    ("Kernel-Version", "string", 1, "Kernel Version reported by the node."),
    ("Container-Runtime", "string", 1, "ContainerRuntime Version reported by the node."),
]
_ROLE_PREFIX = "node-role.kubernetes.io/"


def _print_node(node: Obj, now: datetime) -> Cells:
    meta, spec, status = _meta(node), _dict(node.get("spec")), _dict(node.get("status"))
    ready = next(
        (
            c
            for c in _list(status.get("conditions"))
            if isinstance(c, dict) and c.get("type") == "Ready"
        ),
        None,
    )
    states = [
        "Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"
    ]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    labels = _dict(meta.get("labels"))
    roles = sorted(
        {k[len(_ROLE_PREFIX) :] for k in labels if k.startswith(_ROLE_PREFIX) and k != _ROLE_PREFIX}
        | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set())
    )
    info = _dict(status.get("nodeInfo"))
    addresses = [a for a in _list(status.get("addresses")) if isinstance(a, dict)]

    def address(kind: str) -> str:
        return (
            next((a.get("address") for a in addresses if a.get("type") == kind), None) or "<none>"
        )

    return [
        meta.get("name", ""),
        ",".join(states),
        ",".join(roles) or "<none>",
        _since(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


# --- namespaces, events, quotas, limit ranges, clonesets, disruption budgets --------------------

_NAMESPACE_COLUMNS: list[Column] = [
    _NAME,
    ("Status", "string", 0, "The status of the namespace"),
    _AGE,
]


def _print_namespace(ns: Obj, now: datetime) -> Cells:
    meta = _meta(ns)
    phase = _dict(ns.get("status")).get("phase") or "Active"
    return [meta.get("name", ""), phase, _since(meta.get("creationTimestamp"), now)]


_EVENT_COLUMNS: list[Column] = [
    ("Last Seen", "string", 0, "Time when last occurrence of this event was recorded."),
    ("Type", "string", 0, "Type of this event (Normal, Warning)."),
    ("Reason", "string", 0, "Why the action was taken."),
    ("Object", "string", 0, "The object this Event is about."),
    ("Subobject", "string", 1, "The field of the object this Event is about."),
    ("Source", "string", 1, "The component reporting this event."),
    ("Message", "string", 0, "A human-readable description of the status of this operation."),
    ("First Seen", "string", 1, "The time at which the event was first recorded."),
    ("Count", "integer", 1, "The number of times this event has occurred."),
    ("Name", "string", 1, "Name must be unique within a namespace."),
]


def _print_event(event: Obj, now: datetime) -> Cells:
    involved = _dict(event.get("involvedObject"))
    first = _since(event.get("firstTimestamp") or event.get("eventTime"), now)
    last = _since(event.get("lastTimestamp"), now) if event.get("lastTimestamp") else first
    count = int(event.get("count") or 0)
    series = _dict(event.get("series"))
    if series:
        last = _since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or count)
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = _dict(event.get("source"))
    component = source.get("component") or event.get("reportingComponent") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    return [
        last,
        event.get("type", ""),
        event.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        f"{component}, {host}" if host else component,
        str(event.get("message", "")).strip(),
        first,
        count,
        _meta(event).get("name", ""),
    ]


_QUOTA_COLUMNS: list[Column] = [
    _NAME,
    _AGE,
    (
        "Request",
        "string",
        0,
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    (
        "Limit",
        "string",
        0,
        "Limits control the maximum amount of cpu/memory that a container may use "
        "independent of contention on the node.",
    ),
]


def _print_quota(quota: Obj, now: datetime) -> Cells:
    status = _dict(quota.get("status"))
    hard = _dict(status.get("hard")) or _dict(_dict(quota.get("spec")).get("hard"))
    used = _dict(status.get("used"))
    requests, limits = [], []
    for name in sorted(hard):
        used_text = str(Quantity(str(used.get(name, "0"))))
        text = f"{name}: {used_text}/{Quantity(str(hard[name]))}"
        (limits if name.startswith("limits.") else requests).append(text)
    meta = _meta(quota)
    return [
        meta.get("name", ""),
        _since(meta.get("creationTimestamp"), now),
        ", ".join(requests),
        ", ".join(limits),
    ]


_LIMIT_RANGE_COLUMNS: list[Column] = [
    _NAME,
    ("Created At", "date", 0, "CreationTimestamp is a timestamp of when the object was created."),
]


def _print_limit_range(lr: Obj, now: datetime) -> Cells:
    meta = _meta(lr)
    when = _parse_time(meta.get("creationTimestamp"))
    created = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if when else "<unknown>"
    return [meta.get("name", ""), created]


_CLONESET_COLUMNS: list[Column] = [
    _NAME,
    ("Desired", "integer", 0, "The desired number of pods."),
    ("Updated", "integer", 0, "The number of pods updated to the template's revision."),
    ("Updated_Resized", "integer", 0, "The number of updated pods whose resize has completed."),
    ("Ready", "integer", 0, "The number of pods ready."),
    ("Total", "integer", 0, "The number of pods."),
    _AGE,
    ("Revision", "string", 1, "The revision of the template pods are updated to."),
]


def _print_cloneset(cs: Obj, now: datetime) -> Cells:
    meta, spec, status = _meta(cs), _dict(cs.get("spec")), _dict(cs.get("status"))
    return [
        meta.get("name", ""),
        spec.get("replicas", 0),
        status.get("updatedReplicas", 0),
        status.get("updatedResizedReplicas", 0),
        status.get("readyReplicas", 0),
        status.get("replicas", 0),
        _since(meta.get("creationTimestamp"), now),
        status.get("updateRevision") or "<none>",
    ]


_PDB_COLUMNS: list[Column] = [
    _NAME,
    ("Min Available", "string", 0, "The minimum number of pods that must be available."),
    ("Max Unavailable", "string", 0, "The maximum number of pods that may be unavailable."),
    (
        "Allowed Disruptions",
        "integer",
        0,
        "Calculated number of pods that may be disrupted at this time.",
    ),
    _AGE,
]


def _print_pdb(pdb: Obj, now: datetime) -> Cells:
    """printPodDisruptionBudget: an unset minAvailable or maxUnavailable prints "N/A", a set
    one as IntOrString.String() ("2", "50%")."""
    meta, spec, status = _meta(pdb), _dict(pdb.get("spec")), _dict(pdb.get("status"))

    def int_or_percent(value: Any) -> str:
        return "N/A" if value is None else str(value)

    return [
        meta.get("name", ""),
        int_or_percent(spec.get("minAvailable")),
        int_or_percent(spec.get("maxUnavailable")),
        int(status.get("disruptionsAllowed") or 0),
        _since(meta.get("creationTimestamp"), now),
    ]


def _print_generic(obj: Obj, now: datetime) -> Cells:
    meta = _meta(obj)
    return [meta.get("name", ""), _since(meta.get("creationTimestamp"), now)]


_PRINTERS: dict[str, tuple[list[Column], Callable[[Obj, datetime], Cells]]] = {
    "Pod": (_POD_COLUMNS, _print_pod),
    "Node": (_NODE_COLUMNS, _print_node),
    "Namespace": (_NAMESPACE_COLUMNS, _print_namespace),
    "Event": (_EVENT_COLUMNS, _print_event),
    "ResourceQuota": (_QUOTA_COLUMNS, _print_quota),
    "LimitRange": (_LIMIT_RANGE_COLUMNS, _print_limit_range),
    "CloneSet": (_CLONESET_COLUMNS, _print_cloneset),
    "PodDisruptionBudget": (_PDB_COLUMNS, _print_pdb),
}
