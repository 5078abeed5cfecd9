"""The in-place update lifecycle of one pod, on its labels and annotations (OpenKruise's
`lifecycle.apps.kruise.io/state`): Normal → PreparingUpdate → Updating → Updated → Normal.

An external controller can watch the state label, and hold a pod before its resize (preResize
hook) or before it counts as done (postResize hook) until it sets the hook's annotation to
"true". The target revision sits in an annotation, so a restarted controller resumes each pod
where it was.
"""

from __future__ import annotations

from schemas.k8s import Pod
from schemas.workload import LIFECYCLE_STATE_LABEL, REVISION_LABEL, LifecycleHook

TARGET_ANNOTATION = "apps.inplace.dev/vertical-update-revision"
IN_FLIGHT = ("PreparingUpdate", "Updating", "Updated")


def state(pod: Pod) -> str:
    return (pod.metadata.labels or {}).get(LIFECYCLE_STATE_LABEL, "Normal")


def revision(pod: Pod) -> str | None:
    return (pod.metadata.labels or {}).get(REVISION_LABEL)


def target(pod: Pod) -> str | None:
    return (pod.metadata.annotations or {}).get(TARGET_ANNOTATION)


def in_flight(pod: Pod) -> bool:
    return state(pod) in IN_FLIGHT


def hook_passed(pod: Pod, hook: LifecycleHook | None) -> bool:
    return hook is None or (pod.metadata.annotations or {}).get(hook.annotation) == "true"


def relabel(
    pod: Pod, new_state: str, *, revision: str | None = None, target: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """The pod's labels and annotations after a lifecycle step (target None clears it)."""
    labels = dict(pod.metadata.labels or {})
    annotations = dict(pod.metadata.annotations or {})
    labels[LIFECYCLE_STATE_LABEL] = new_state
    if revision is not None:
        labels[REVISION_LABEL] = revision
    if target is None:
        annotations.pop(TARGET_ANNOTATION, None)
    else:
        annotations[TARGET_ANNOTATION] = target
    return labels, annotations
