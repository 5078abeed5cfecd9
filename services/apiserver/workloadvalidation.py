"""Validation of apps.inplace.dev/v1alpha1 CloneSets, in Kubernetes' field-error style.

The template is validated as the pods it will become (defaults applied, ValidatePodCreate),
so a workload whose pods the apiserver would refuse is refused up front.
"""

from __future__ import annotations

import dataclasses
import re

from schemas.k8s import Pod
from schemas.workload import CloneSet
from services.apiserver.fielderrors import FieldError, invalid, not_supported, required
from services.apiserver.validation import default_pod, validate_pod_create

ON_INFEASIBLE = ("Rollback", "Report")
_PERCENT = re.compile(r"^(0|[1-9][0-9]*)%$")


def _template_pod(cs: CloneSet) -> Pod:
    template = cs.spec.template
    meta = template.metadata.model_copy(deep=True)
    meta.name = f"{cs.metadata.name or 'x'}-abcde"
    meta.namespace = cs.metadata.namespace or "default"
    return default_pod(Pod(metadata=meta, spec=template.spec.model_copy(deep=True)))


def _in_template(error: FieldError) -> FieldError:
    return dataclasses.replace(error, field=f"spec.template.{error.field}")


def validate_max_concurrent(value: int | str, path: str) -> list[FieldError]:
    if isinstance(value, int):
        return [] if value >= 1 else [invalid(path, value, "must be greater than or equal to 1")]
    match = _PERCENT.match(value)
    if match is None:
        return [invalid(path, value, "must be an integer or a percentage (e.g. '30%')")]
    if not 0 < int(value[:-1]) <= 100:
        return [invalid(path, value, "must be a percentage in (0%, 100%]")]
    return []


def validate_clone_set(cs: CloneSet) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = cs.spec
    if spec.replicas < 0:
        errs.append(invalid("spec.replicas", spec.replicas, "must be greater than or equal to 0"))
    selector = spec.selector.match_labels or {}
    labels = spec.template.metadata.labels or {}
    if not selector:
        errs.append(required("spec.selector", "a non-empty selector is required"))
    elif any(labels.get(k) != v for k, v in selector.items()):
        errs.append(
            invalid(
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )
        )
    strategy = spec.update_strategy
    path = "spec.updateStrategy"
    errs += validate_max_concurrent(strategy.max_concurrent_resizes, f"{path}.maxConcurrentResizes")
    if strategy.partition < 0:
        errs.append(
            invalid(f"{path}.partition", strategy.partition, "must be greater than or equal to 0")
        )
    if strategy.on_infeasible not in ON_INFEASIBLE:
        errs.append(not_supported(f"{path}.onInfeasible", strategy.on_infeasible, ON_INFEASIBLE))
    if strategy.deferred_timeout_seconds < 0:
        errs.append(
            invalid(
                f"{path}.deferredTimeoutSeconds",
                strategy.deferred_timeout_seconds,
                "must be greater than or equal to 0",
            )
        )
    errs += [_in_template(e) for e in validate_pod_create(_template_pod(cs))]
    return errs
