"""ResourceQuota `status.used`, kept up to date from the log (issue 6; KEP-1287 "Resource Quota").

Kubernetes' quota controller recalculates a quota's usage when pods change and writes
`status.used` when it differs. Here every record the quota read model applies may mark its
namespace dirty (a pod created, resized, allocated, actuated, finished or deleted; a quota
created or updated). A dirty namespace is recomputed `debounce` seconds after it first became
dirty, so a burst of events costs one computation and at most one ResourceQuotaUsageChanged per
quota. Usage is `usage.quota_used`: per pod max(spec, status) per KEP-1287, so a resize counts as
soon as it is proposed and a shrink frees quota only once the kubelet has applied it; it is read
from the namespace's running totals (`totals.UsageTotals`), not summed over its pods.

Idempotent across restarts: the new value is compared with the `status.used` the log already
holds (or with the value this process published and has not yet seen come back), never with a
private memory, so a restarted or second replica publishes nothing when nothing changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass

from prometheus_client import Counter

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import EventProducer
from inplace.core.observability.metrics import EVENTS_PRODUCED
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import ResourceList, ResourceQuota
from services.quota.totals import UsageTotals

log = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.2
PRODUCER = "quota"

USAGE_UPDATES = Counter(
    "quota_usage_updates_total", "ResourceQuotaUsageChanged events published (status.used)"
)

# Pod events that cannot change what a pod charges: it was bound, could not be, was relabelled
# or a container restarted. Every other pod event may (spec, allocated, actual, phase, deletion).
_USAGE_NEUTRAL = (ev.PodBound, ev.PodUnschedulable, ev.PodUpdated, ev.ContainerRestarted)


@dataclass(frozen=True)
class _InFlight:
    """A usage this process published whose event the read model has not applied yet."""

    envelope_id: uuid.UUID
    used: ResourceList


def _same(a: ResourceList | None, b: ResourceList | None) -> bool:
    """Equal as quantities ("1000m" == "1"), not as strings."""
    return (
        a is not None
        and b is not None
        and a.keys() == b.keys()
        and all(a[name] == b[name] for name in a)
    )


class QuotaStatus:
    """Keeps `status.used` of every ResourceQuota in the quota read model up to date."""

    def __init__(
        self,
        model: ReadModel,
        producer: EventProducer,
        *,
        debounce: float = DEBOUNCE_SECONDS,
        totals: UsageTotals | None = None,
    ) -> None:
        self.model = model
        self.producer = producer
        self.debounce = debounce
        # Shared with the webhook in the role (one index); built here when not given.
        self.totals = totals if totals is not None else UsageTotals(model)
        # namespace → names of its quotas, so a recomputation reads one namespace.
        self._quotas: defaultdict[str, set[str]] = defaultdict(set)
        # namespace → when it is due (loop time), and the newest event that dirtied it.
        self._due: dict[str, float] = {}
        self._cause: dict[str, Envelope] = {}
        self._in_flight: dict[tuple[str, str], _InFlight] = {}
        self._wake = asyncio.Event()
        model.on_apply(self._observe)
        model.on_snapshot(self._seed)

    def _seed(self) -> None:
        """Started from a snapshot: the index `_observe` keeps, from the objects."""
        for namespace, name in self.model.objects("resourcequotas"):
            self._quotas[namespace].add(name)

    # -- the read model's records ---------------------------------------------------------------

    def _observe(self, record: Record) -> None:
        envelope = record.envelope
        payload = envelope.payload
        if isinstance(payload, ev.PodEvent):
            if not isinstance(payload, _USAGE_NEUTRAL):
                self._dirty(payload.namespace, envelope)
        elif isinstance(payload, ev.ResourceQuotaUsageChanged):
            flight = self._in_flight.get((payload.namespace, payload.name))
            if flight is not None and flight.envelope_id == envelope.id:
                del self._in_flight[(payload.namespace, payload.name)]
            elif flight is None:
                # Another replica's (or an earlier run's) word: check it against the pods.
                self._dirty(payload.namespace, envelope)
        elif isinstance(payload, ev.ResourceQuotaCreated | ev.ResourceQuotaUpdated):
            self._quotas[payload.namespace].add(payload.quota.metadata.name or "")
            self._dirty(payload.namespace, envelope)
        elif isinstance(payload, ev.ResourceQuotaDeleted):
            self._quotas[payload.namespace].discard(payload.name)
            self._in_flight.pop((payload.namespace, payload.name), None)

    def _dirty(self, namespace: str, cause: Envelope) -> None:
        if not self._quotas.get(namespace):
            return  # no quota to keep; a quota created later dirties the namespace itself
        self._cause[namespace] = cause
        if namespace not in self._due:
            self._due[namespace] = asyncio.get_running_loop().time() + self.debounce
            self._wake.set()

    # -- recomputation --------------------------------------------------------------------------

    def changed_usage(self, namespace: str) -> list[tuple[ResourceQuota, ResourceList]]:
        """The namespace's quotas whose computed usage differs from what the log says (or
        from what this process published last), with the computed usage."""
        result = []
        for name in sorted(self._quotas.get(namespace, ())):
            quota: ResourceQuota | None = self.model.get("resourcequotas", (namespace, name))
            if quota is None:
                continue
            used = self.totals.used(namespace, quota)
            flight = self._in_flight.get((namespace, name))
            known = flight.used if flight is not None else quota.status.used
            if not _same(used, known):
                result.append((quota, used))
        return result

    async def run(self) -> None:
        await self.model.ready.wait()
        # Whatever changed while no quota service ran is caught up here: every quota is checked
        # against the log once.
        now = asyncio.get_running_loop().time()
        for namespace, names in self._quotas.items():
            if names:
                self._due.setdefault(namespace, now)
        while True:
            await self._wait_until_due()
            await self._flush()

    async def _wait_until_due(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            if self._due:
                delay = min(self._due.values()) - loop.time()
                if delay <= 0:
                    return
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
            else:
                await self._wake.wait()

    async def _flush(self) -> None:
        now = asyncio.get_running_loop().time()
        envelopes: list[Envelope] = []
        for namespace in sorted(ns for ns, due in self._due.items() if due <= now):
            if not self.totals.holds(namespace):  # its pods are being taken over: later
                self._due[namespace] = now + self.debounce
                continue
            del self._due[namespace]
            cause = self._cause.pop(namespace, None)
            for quota, used in self.changed_usage(namespace):
                name = quota.metadata.name or ""
                envelope = Envelope.wrap(
                    ev.ResourceQuotaUsageChanged(namespace=namespace, name=name, used=used),
                    producer=PRODUCER,
                    cause=cause,
                )
                self._in_flight[(namespace, name)] = _InFlight(envelope.id, used)
                envelopes.append(envelope)
        if not envelopes:
            return
        await self.producer.publish_many(envelopes)
        for envelope in envelopes:
            EVENTS_PRODUCED.labels(PRODUCER, envelope.type).inc()
            USAGE_UPDATES.inc()
        log.debug("published status.used of %d quota(s)", len(envelopes))
