"""The Eviction subresource (`POST …/pods/{name}/eviction`, policy/v1): what `kubectl drain`
and an autoscaler's updater (a VPA evicting a pod it cannot resize in place) send to take a
pod off its node. The pod's PodDisruptionBudget decides (disruption.py: a 429 when it allows
no more disruptions, and `kubectl drain` retries); an eviction it allows is counted in the
budget's status, and the pod deleted as a DELETE deletes it (at once: there is no graceful
termination here, so no DisruptionTarget condition either).

`admitted` checks the request against the pod, as kube-apiserver's eviction REST and its
store's Delete do; the handler (pods.py) asks the budget and writes the deletion.
"""

from __future__ import annotations

from typing import Any

from schemas.k8s import Pod
from services.apiserver import dryrun, errors
from services.apiserver.disruption import EvictionVerdict

KIND = "Eviction"
API_VERSIONS = ("policy/v1", "policy/v1beta1")
# kube-apiserver's answer to an eviction it carried out.
SUCCESS: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Success",
    "code": 201,
}


def admitted(data: Any, name: str, pod: Pod) -> bool:
    """Check an Eviction body for the pod `name` it is posted to; True when its deleteOptions
    ask for a dry run. Raises the ApiError kube-apiserver answers with."""
    if not isinstance(data, dict):
        raise errors.bad_request("the body of an eviction must be an Eviction object")
    if data.get("kind") not in (None, KIND) or data.get("apiVersion") not in (None, *API_VERSIONS):
        raise errors.bad_request(
            f"{data.get('kind')} in version {data.get('apiVersion')!r} cannot be handled as an "
            "Eviction (policy/v1)"
        )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict) or metadata.get("name") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = data.get("deleteOptions") or {}
    if not isinstance(options, dict):
        raise errors.bad_request("deleteOptions must be a DeleteOptions object")
    check_preconditions(options, pod)
    dry_run = options.get("dryRun") or []
    refusal = dryrun.invalid(dry_run if isinstance(dry_run, list) else [repr(dry_run)])
    if refusal is not None:
        raise refusal
    return bool(dry_run)


def check_preconditions(options: dict[str, Any], pod: Pod) -> None:
    """DeleteOptions.preconditions (uid, resourceVersion) against the pod: a 409 as the
    store's Delete answers when one does not hold."""
    preconditions = options.get("preconditions") or {}
    if not isinstance(preconditions, dict):
        raise errors.bad_request("preconditions must be an object")
    meta = pod.metadata
    for key, field, held in (("uid", "UID", meta.uid), ("resourceVersion", "ResourceVersion",
                                                        meta.resource_version)):  # fmt: skip
        wanted = preconditions.get(key)
        if wanted is not None and wanted != held:
            raise errors.conflict(
                "Pod",
                meta.name or "",
                f"Precondition failed: {field} in precondition: {wanted}, "
                f"{field} in object meta: {held}",
            )


def refusal(verdict: EvictionVerdict) -> errors.ApiError:
    """The Status kube-apiserver answers an eviction a budget does not allow."""
    return errors.refused(
        verdict.code,
        verdict.reason,
        verdict.message,
        verdict.causes,
        verdict.retry_after_seconds,
    )


def budget_lock(namespace: str) -> tuple[str, str]:
    """The writer lock evictions and the disruption controller share per namespace in one
    replica: a budget's status is decided and written under it. Across replicas each status
    write carries the budget's resourceVersion it was decided from (a precondition the fold
    checks), so two evictions never spend one disruption."""
    return ("poddisruptionbudgets", namespace)
