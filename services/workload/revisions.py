"""Revisions: a template's hash names it, and the log keeps every template a CloneSet had, so
the previous revision's resources (for a rollback) are always at hand, after a restart too."""

from __future__ import annotations

import hashlib
import json

from inplace.core.bus.consumer import Record
from schemas import events as ev
from schemas.workload import CloneSet, PodTemplateSpec

NsName = tuple[str, str]


def revision_name(name: str, template: PodTemplateSpec) -> str:
    """`<cloneset>-<hash>` like a ControllerRevision's name (controller-revision-hash)."""
    text = json.dumps(template.to_k8s(), sort_keys=True, separators=(",", ":"))
    return f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def update_revision(cs: CloneSet) -> str:
    return revision_name(cs.metadata.name or "", cs.spec.template)


class RevisionHistory:
    """Every template each CloneSet has had, by revision name: folded from the log."""

    def __init__(self) -> None:
        self._by_set: dict[NsName, dict[str, PodTemplateSpec]] = {}

    def apply(self, record: Record) -> None:
        payload = record.envelope.payload
        key = (getattr(payload, "namespace", ""), getattr(payload, "name", ""))
        if isinstance(payload, ev.CloneSetCreated | ev.CloneSetUpdated):
            template = payload.clone_set.spec.template
            self._by_set.setdefault(key, {})[revision_name(key[1], template)] = template
        elif isinstance(payload, ev.CloneSetDeleted):
            self._by_set.pop(key, None)

    def of(self, namespace: str, name: str) -> dict[str, PodTemplateSpec]:
        return self._by_set.get((namespace, name), {})
