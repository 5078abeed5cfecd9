"""One CloneSet's reconcile as a pure function: (workload, its pods, its revisions, now) →
the actions to take and the status to report. The service carries the actions out, waits
until its read model shows them, and calls this again (level-triggered, so a restart from
the log resumes where the last run stopped).

Order of concerns, as OpenKruise's CloneSet sync: scale first, then update. An update moves
pods to the target revision in batches of maxConcurrentResizes; a batch starts only when no
pod is still in flight. A change of only containers' resources (and resizePolicy) is a
vertical update through the lifecycle in lifecycle.py; any other change deletes the pod and
the scale step makes a new one from the new template.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from schemas.k8s import ObjectMeta, OwnerReference, Pod
from schemas.podview import is_terminal, pod_ready
from schemas.workload import (
    API_VERSION,
    KIND,
    LIFECYCLE_STATE_LABEL,
    REVISION_LABEL,
    CloneSet,
    CloneSetCondition,
    CloneSetStatus,
    PodTemplateSpec,
)
from services.workload import lifecycle, pacing
from services.workload.revisions import update_revision
from services.workload.verticalupdate import (
    UpdateSpec,
    calculate_spec,
    check_pod_update_completed,
    needs_resize,
    resize_failure,
    resize_patch,
)

FAILED = "VerticalUpdateFailed"


@dataclass(frozen=True)
class CreatePod:
    pod: Pod


@dataclass(frozen=True)
class DeletePod:
    name: str
    reason: str


@dataclass(frozen=True)
class Relabel:
    """A lifecycle step; `pod` is the version decided on (its resourceVersion guards it)."""

    pod: Pod
    labels: dict[str, str]
    annotations: dict[str, str]


@dataclass(frozen=True)
class Resize:
    pod: Pod
    revision: str
    patch: dict[str, Any]


@dataclass(frozen=True)
class Emit:
    type: Literal["Normal", "Warning"]
    reason: str
    message: str


Action = CreatePod | DeletePod | Relabel | Resize | Emit


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    status: CloneSetStatus = field(default_factory=CloneSetStatus)


@dataclass(frozen=True)
class Inputs:
    clone_set: CloneSet
    pods: list[Pod]
    history: dict[str, PodTemplateSpec]
    now: datetime
    vertical_enabled: bool = True


def owned(cs: CloneSet, pods: list[Pod]) -> list[Pod]:
    uid = cs.metadata.uid
    return [
        p
        for p in pods
        if any(r.uid == uid and r.controller for r in p.metadata.owner_references or [])
    ]


def active(pods: list[Pod]) -> list[Pod]:
    """Pods that count toward replicas (ReplicaSet's FilterActivePods): a Failed pod (evicted
    by a hot unplug) or a Succeeded one is replaced, and left for the user (or pod GC)."""
    return [p for p in pods if not is_terminal(p)]


def new_pod(cs: CloneSet, template: PodTemplateSpec, revision: str) -> Pod:
    meta = template.metadata.model_copy(deep=True)
    labels = dict(meta.labels or {})
    labels[REVISION_LABEL] = revision
    labels[LIFECYCLE_STATE_LABEL] = "Normal"
    return Pod(
        metadata=ObjectMeta(
            generate_name=f"{cs.metadata.name}-",
            namespace=cs.metadata.namespace,
            labels=labels,
            annotations=meta.annotations,
            owner_references=[
                OwnerReference(
                    api_version=API_VERSION,
                    kind=KIND,
                    name=cs.metadata.name or "",
                    uid=cs.metadata.uid or "",
                    controller=True,
                    block_owner_deletion=True,
                )
            ],
        ),
        spec=template.spec.model_copy(deep=True),
    )


def _running_revision(pods: list[Pod], history: dict[str, PodTemplateSpec]) -> str | None:
    """The revision every pod runs, when the status names no current revision yet: a template
    change that arrives before the controller's first status write must not make the new
    template current (a rollback would then have nothing to go back to)."""
    revisions = {lifecycle.revision(p) for p in pods}
    if len(revisions) != 1:
        return None
    (revision,) = revisions
    return revision if revision in history else None


def _condition(cs: CloneSet) -> CloneSetCondition | None:
    return next((c for c in cs.status.conditions or [] if c.type == FAILED), None)


class _Reconcile:
    def __init__(self, inputs: Inputs) -> None:
        self.cs = inputs.clone_set
        self.inputs = inputs
        self.pods = sorted(active(owned(self.cs, inputs.pods)), key=lambda p: p.metadata.name or "")
        self.strategy = self.cs.spec.update_strategy
        self.update_rev = update_revision(self.cs)
        self.history = {**inputs.history, self.update_rev: self.cs.spec.template}
        self.current_rev = (
            self.cs.status.current_revision
            or _running_revision(self.pods, self.history)
            or self.update_rev
        )
        condition = _condition(self.cs)
        self.failed = self.cs.status.failed_revision == self.update_rev
        self.rollback = self.failed and self.strategy.on_infeasible == "Rollback"
        self.rollback_failed = bool(
            self.failed and condition is not None and condition.reason == "RollbackFailed"
        )
        self.target_rev = self.current_rev if self.rollback else self.update_rev
        self.plan = Plan(status=self.cs.status.model_copy(deep=True))

    # --- scale ------------------------------------------------------------------------------

    def scale(self) -> bool:
        """Create or delete pods toward spec.replicas; True when it acted."""
        replicas = self.cs.spec.replicas
        missing = replicas - len(self.pods)
        if missing > 0:
            template = self.history.get(self.target_rev, self.cs.spec.template)
            for _ in range(missing):
                self.plan.actions.append(CreatePod(new_pod(self.cs, template, self.target_rev)))
            self._emit("Normal", "SuccessfulCreate", f"creating {missing} pod(s)")
            return True
        if missing < 0:
            # Pods off the target revision go first, then not-ready ones, then the last names.
            victims = sorted(
                self.pods,
                key=lambda p: (
                    lifecycle.revision(p) == self.target_rev,
                    pod_ready(p),
                    [-ord(ch) for ch in p.metadata.name or ""],
                ),
            )[:-missing]
            for pod in victims:
                self.plan.actions.append(DeletePod(pod.metadata.name or "", "scale down"))
            self._emit("Normal", "SuccessfulDelete", f"deleting {-missing} pod(s)")
            return True
        return False

    # --- update -----------------------------------------------------------------------------

    def _spec_for(self, pod: Pod, revision: str) -> UpdateSpec | None:
        """How `pod` moves to `revision` in place, or None when it must be recreated."""
        if not self.inputs.vertical_enabled:
            return None
        old = self.history.get(lifecycle.revision(pod) or "")
        new = self.history.get(revision)
        if old is None or new is None:
            return None
        return calculate_spec(old, new, revision)

    def advance(self, pod: Pod) -> str | None:
        """One lifecycle step for an in-flight pod; returns a failure reason, if any."""
        hooks = self.cs.spec.lifecycle
        state = lifecycle.state(pod)
        target = lifecycle.target(pod)
        if target != self.target_rev and state != "Updated":
            # The goal moved (rollback, or a newer template): prepare again for the new one.
            labels, annotations = lifecycle.relabel(pod, "PreparingUpdate", target=self.target_rev)
            self.plan.actions.append(Relabel(pod, labels, annotations))
            return None
        if state == "PreparingUpdate":
            if lifecycle.hook_passed(pod, hooks.pre_resize if hooks else None):
                labels, annotations = lifecycle.relabel(
                    pod, "Updating", revision=target, target=target
                )
                self.plan.actions.append(Relabel(pod, labels, annotations))
            return None
        if state == "Updating":
            spec = self._spec_for_target(pod, target or self.target_rev)
            if needs_resize(pod, spec):
                self.plan.actions.append(Resize(pod, spec.revision, resize_patch(spec)))
                return None
            failure = resize_failure(
                pod,
                now=self.inputs.now,
                deferred_timeout=timedelta(seconds=self.strategy.deferred_timeout_seconds),
            )
            if failure is not None:
                return f"{failure.pod}: {failure.reason} {failure.message}".strip()
            if check_pod_update_completed(pod, spec) is None:
                labels, annotations = lifecycle.relabel(pod, "Updated", target=target)
                self.plan.actions.append(Relabel(pod, labels, annotations))
            return None
        # Updated: done once the post-resize hook (if any) lets go.
        if lifecycle.hook_passed(pod, hooks.post_resize if hooks else None):
            labels, annotations = lifecycle.relabel(pod, "Normal")
            self.plan.actions.append(Relabel(pod, labels, annotations))
        return None

    def _spec_for_target(self, pod: Pod, revision: str) -> UpdateSpec:
        """The resources of `revision`'s template (the pod's label already says revision)."""
        template = self.history[revision]
        return calculate_spec(template, template, revision) or UpdateSpec(revision)

    def update(self) -> None:
        in_flight = [p for p in self.pods if lifecycle.in_flight(p)]
        failures = [f for p in in_flight if (f := self.advance(p)) is not None]
        if failures:
            self._fail(failures)
            return
        if in_flight or self.strategy.paused or (self.failed and not self.rollback):
            return
        if self.rollback_failed:
            return
        wanted = (
            len(self.pods)
            if self.rollback
            else pacing.wanted_at_target(self.cs.spec.replicas, self.strategy.partition)
        )
        at_target = [p for p in self.pods if lifecycle.revision(p) == self.target_rev]
        behind = [p for p in self.pods if lifecycle.revision(p) != self.target_rev]
        room = min(
            pacing.max_concurrent(self.strategy, self.cs.spec.replicas), wanted - len(at_target)
        )
        if room <= 0 or not behind:
            return
        batch = pacing.update_order(behind)[:room]
        if not at_target and not self.rollback:
            self._emit("Normal", "RolloutStarted", f"updating to revision {self.target_rev}")
        names = ", ".join(p.metadata.name or "" for p in batch)
        verb = "rolling back" if self.rollback else "updating"
        # The inputs of the batch decision ride in its Event (issue 19): how big a batch may
        # be, how many pods are there already, how many the partition wants there.
        limit = pacing.max_concurrent(self.strategy, self.cs.spec.replicas)
        inputs = (
            f"batch of {len(batch)}: maxConcurrent {limit}, {len(at_target)}/{len(self.pods)} "
            f"pods at the revision, {wanted} wanted there (partition "
            f"{self.strategy.partition or 0}), {len(behind)} behind"
        )
        self._emit(
            "Normal", "BatchStarted", f"{verb} {names} to revision {self.target_rev} ({inputs})"
        )
        for pod in batch:
            name = pod.metadata.name or ""
            if self._spec_for(pod, self.target_rev) is None:
                self.plan.actions.append(DeletePod(name, "recreate"))
            else:
                labels, annotations = lifecycle.relabel(
                    pod, "PreparingUpdate", target=self.target_rev
                )
                self.plan.actions.append(Relabel(pod, labels, annotations))

    def _fail(self, failures: list[str]) -> None:
        status = self.plan.status
        if self.rollback_failed or (self.failed and not self.rollback):
            return  # already reported; the failing pods stay as they are
        message = "; ".join(failures)
        if self.rollback:
            reason, note = "RollbackFailed", f"rollback to {self.current_rev} failed: {message}"
        elif self.strategy.on_infeasible == "Rollback":
            reason, note = "RollingBack", f"rolling back to {self.current_rev}: {message}"
        else:
            reason, note = "Infeasible", f"rollout of {self.update_rev} stopped: {message}"
        status.failed_revision = self.update_rev
        self._set_condition("True", reason, note)
        self._emit("Warning", reason, note)

    # --- status -----------------------------------------------------------------------------

    def _set_condition(self, value: str, reason: str, message: str) -> None:
        status = self.plan.status
        others = [c for c in status.conditions or [] if c.type != FAILED]
        old = _condition(self.cs)
        when = old.last_transition_time if old and old.status == value else self.inputs.now
        others.append(
            CloneSetCondition(
                type=FAILED,
                status=value,  # type: ignore[arg-type]
                reason=reason,
                message=message,
                last_transition_time=when,
            )
        )
        status.conditions = others

    def _resized(self, pod: Pod) -> bool:
        spec = self._spec_for_target(pod, self.update_rev)
        return not lifecycle.in_flight(pod) and check_pod_update_completed(pod, spec) is None

    def summarize(self) -> None:
        status = self.plan.status
        pods = self.pods
        updated = [p for p in pods if lifecycle.revision(p) == self.update_rev]
        status.observed_generation = self.cs.metadata.generation
        status.replicas = len(pods)
        status.ready_replicas = sum(1 for p in pods if pod_ready(p))
        status.updated_replicas = len(updated)
        status.updated_resized_replicas = sum(1 for p in updated if self._resized(p))
        status.update_revision = self.update_rev
        status.current_revision = self.current_rev
        if self.failed and status.failed_revision is None:
            status.failed_revision = self.update_rev
        settled = not any(lifecycle.in_flight(p) for p in pods)
        if (
            settled
            and len(pods) == self.cs.spec.replicas
            and status.updated_resized_replicas == len(pods)
            and self.current_rev != self.update_rev
        ):
            status.current_revision = self.update_rev
            self._emit("Normal", "RolloutCompleted", f"all pods at revision {self.update_rev}")
        if (
            self.rollback
            and settled
            and all(lifecycle.revision(p) == self.current_rev for p in pods)
        ):
            condition = _condition(self.cs)
            if condition is not None and condition.reason == "RollingBack":
                note = f"every pod back at revision {self.current_rev}; {condition.message}"
                self._set_condition("True", "RolledBack", note)
                self._emit("Normal", "RolledBack", note)
        if status.failed_revision not in (None, self.update_rev):
            # A newer template: the old failure no longer stops anything.
            status.failed_revision = None
            status.conditions = [c for c in status.conditions or [] if c.type != FAILED] or None

    def _emit(self, type_: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        self.plan.actions.append(Emit(type_, reason, message))


def reconcile(inputs: Inputs) -> Plan:
    run = _Reconcile(inputs)
    if not run.scale():
        run.update()
    run.summarize()
    return run.plan


def refused(cs: CloneSet, status: CloneSetStatus, pod: Pod, message: str, now: datetime) -> Plan:
    """The apiserver refused a pod's resize for good (422: e.g. a QoS change; 403: quota or
    LimitRange). That pod's update failed, so the revision fails as an Infeasible one does:
    `Report` stops the rollout, `Rollback` resizes the updated pods back (on the next
    reconcile, which sees `failedRevision`). Recorded in the CloneSet's status, so a restarted
    controller does not send the same request again. The pod never changed: its lifecycle goes
    back to Normal at the revision it still runs."""
    out = status.model_copy(deep=True)
    note = f"pod {pod.metadata.name}: the apiserver refused the resize: {message}"
    if cs.spec.update_strategy.on_infeasible == "Rollback":
        reason, text = "RollingBack", f"rolling back to {out.current_revision}: {note}"
    else:
        reason, text = "Infeasible", f"rollout of {out.update_revision} stopped: {note}"
    out.failed_revision = out.update_revision
    others = [c for c in out.conditions or [] if c.type != FAILED]
    condition = CloneSetCondition(
        type=FAILED, status="True", reason=reason, message=text, last_transition_time=now
    )
    out.conditions = [*others, condition]
    labels, annotations = lifecycle.relabel(pod, "Normal", target=None)
    return Plan(
        actions=[Relabel(pod, labels, annotations), Emit("Warning", reason, text)], status=out
    )
