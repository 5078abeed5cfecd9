"""apps.inplace.dev/v1alpha1 CloneSet: a replicated workload whose template drives in-place
vertical scaling (OpenKruise "In-place Workload Vertical Scaling")."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from schemas.base import K8sModel, Time
from schemas.k8s import ObjectMeta, PodSpec

GROUP = "apps.inplace.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "CloneSet"

# The label every pod carries with the revision of the template it was made (or resized) from.
REVISION_LABEL = "controller-revision-hash"
# In-place update lifecycle, as OpenKruise's `lifecycle.apps.kruise.io/state`: an external
# controller can watch the label and gate a pod's resize with the annotations below.
LIFECYCLE_STATE_LABEL = "lifecycle.apps.inplace.dev/state"
LifecycleState = Literal["PreparingUpdate", "Updating", "Updated", "Normal"]


class _Closed(K8sModel):
    """This group's own fields: unknown ones are refused (our CRD schema is the model), while
    the pod template inside keeps every Kubernetes field like a Pod does."""

    model_config = ConfigDict(extra="forbid")


class LabelSelector(K8sModel):
    match_labels: dict[str, str] | None = None


class PodTemplateSpec(K8sModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


class LifecycleHook(_Closed):
    """A pod waits in the hook's state until it carries `annotation: "true"`
    (set by whoever owns the hook), like OpenKruise's labelsHandler."""

    annotation: str = Field(min_length=1)


class Lifecycle(_Closed):
    pre_resize: LifecycleHook | None = None
    post_resize: LifecycleHook | None = None


class CloneSetUpdateStrategy(_Closed):
    # int, or a percentage of replicas ("30%", rounded up, at least 1).
    max_concurrent_resizes: int | str = 1
    # Pods kept at the old revision (counted from the end of the update order).
    partition: int = 0
    paused: bool = False
    # str, not a Literal: a bad value is a 422 Invalid naming the field, as Kubernetes answers.
    on_infeasible: str = "Report"
    deferred_timeout_seconds: int = 60


class CloneSetSpec(_Closed):
    replicas: int = 1
    selector: LabelSelector = Field(default_factory=LabelSelector)
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    update_strategy: CloneSetUpdateStrategy = Field(default_factory=CloneSetUpdateStrategy)
    lifecycle: Lifecycle | None = None


class CloneSetCondition(_Closed):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    last_transition_time: Time | None = None


class CloneSetStatus(_Closed):
    observed_generation: int | None = None
    replicas: int = 0
    ready_replicas: int = 0
    updated_replicas: int = 0
    updated_resized_replicas: int = 0
    current_revision: str | None = None
    update_revision: str | None = None
    # The revision whose vertical update failed: the rollout stops (Report) or rolls back.
    failed_revision: str | None = None
    conditions: list[CloneSetCondition] | None = None


class CloneSet(_Closed):
    api_version: Literal["apps.inplace.dev/v1alpha1"] = API_VERSION
    kind: Literal["CloneSet"] = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CloneSetSpec = Field(default_factory=CloneSetSpec)
    status: CloneSetStatus = Field(default_factory=CloneSetStatus)
