"""Which pods the quota role holds: only those of namespaces that have a ResourceQuota (issue 16:
read only what you need).

A ResourceQuota charges the pods of its own namespace, and a LimitRange judges the pod under
review (which comes in the AdmissionReview), so quota needs no other pod. Under a resize load
in namespaces without quotas, decoding and holding every pod was 0.17 ms of quota's CPU per
resize at 100 nodes and 0.34 ms at 50,000 pods, and three quarters of its memory (302 MB
against 72 at 50,000 pods; README, Performance).

- A pod record is decoded only when the namespace in its key is followed (`accept`); other
  records of the types quota reads always are.
- A namespace's first ResourceQuota makes it followed from the next batch on; its pods are
  taken over between batches (`ReadModel.take_pods_in`: the projection, then the log after
  it), and only then is it `held`: its totals are summed (`on_held`), and admission and
  status.used in it wait for that (`until_held`).
- Its last ResourceQuota deleted: no longer followed, its pods forgotten.

Started from the projection, the snapshot brings just the pods of namespaces with a quota
(`ReadModel(pod_namespaces=quota_namespaces)`), all of them held at once. Without a projection a
take-over reads the pods topic from offset 0 (and says so), as a start would.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection

from aiokafka.structs import ConsumerRecord

from inplace.core.bus.consumer import Record
from inplace.core.bus.headers import of_types
from inplace.core.projection.state import ClusterState
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev

log = logging.getLogger(__name__)

RETRY_S = 5.0  # after a take-over failed (the broker or the database away)


def quota_namespaces(state: ClusterState) -> set[str]:
    """The namespaces that have a ResourceQuota."""
    return {namespace for namespace, _ in state.resourcequotas}


def namespace_of(key: bytes | None) -> bytes | None:
    """The namespace in a pod record's key ("namespace/name"), None without a key."""
    return None if key is None else key.split(b"/", 1)[0]


class NamespacePods:
    """The namespaces whose pods the quota read model holds, and their take-overs."""

    def __init__(self, settings: Settings, types: Collection[str]) -> None:
        self._of_types = of_types(types)
        self._pods_topic = settings.topic(ev.PODS)
        self.followed: set[str] = set()  # their pod records are decoded
        self._followed_keys: set[bytes] = set()  # the same, as their keys begin
        self.held: set[str] = set()  # followed and every pod of them held
        self._taken: dict[str, asyncio.Future[None]] = {}  # held once done
        self._on_held: list[Callable[[str], None]] = []
        self._model: ReadModel | None = None

    def accept(self, raw: ConsumerRecord) -> bool:  # type: ignore[type-arg]
        """Decode a record of a type quota reads, unless it is a pod record of a namespace
        not followed (one without a key is decoded: a header or key only saves work)."""
        if not self._of_types(raw):
            return False
        if raw.topic != self._pods_topic:
            return True
        namespace = namespace_of(raw.key)
        return namespace is None or namespace in self._followed_keys

    def follow(self, model: ReadModel) -> None:
        """Keep `model`'s pods to the followed namespaces (it was built with `accept`)."""
        self._model = model
        model.on_snapshot(self._seed)
        model.on_apply(self._observe)

    def on_held(self, listener: Callable[[str], None]) -> None:
        """Call `listener(namespace)` once a namespace's pods are all held."""
        self._on_held.append(listener)

    async def until_held(self, namespace: str) -> None:
        """Return once `namespace`'s pods are held (at once when it is not followed)."""
        taken = self._taken.get(namespace)
        if taken is not None:
            await asyncio.shield(taken)

    @property
    def model(self) -> ReadModel:
        if self._model is None:
            raise RuntimeError("NamespacePods.follow was not called")
        return self._model

    def _seed(self) -> None:
        """Started from a snapshot of the pods of namespaces with a quota: those are held."""
        for namespace in sorted(quota_namespaces(self.model.state)):
            self._set_followed(namespace, True)
            self.held.add(namespace)

    def _observe(self, record: Record) -> None:
        payload = record.envelope.payload
        if isinstance(payload, ev.ResourceQuotaCreated | ev.ResourceQuotaUpdated):
            if payload.namespace not in self.followed:
                self._begin(payload.namespace)
        elif isinstance(payload, ev.ResourceQuotaDeleted):
            if payload.namespace not in quota_namespaces(self.model.state):
                self._end(payload.namespace)

    def _set_followed(self, namespace: str, followed: bool) -> None:
        if followed:
            self.followed.add(namespace)
            self._followed_keys.add(namespace.encode())
        else:
            self.followed.discard(namespace)
            self._followed_keys.discard(namespace.encode())

    def _begin(self, namespace: str) -> None:
        """Its first quota: decode its records from the next batch, take its pods after this
        one (records of it in this batch were judged before the quota came)."""
        self._set_followed(namespace, True)
        taken = asyncio.get_running_loop().create_future()
        self._taken[namespace] = taken
        self.model.after_batch(lambda: self._take(namespace, taken))

    async def _take(self, namespace: str, taken: asyncio.Future[None]) -> None:
        if self._taken.get(namespace) is not taken:
            return  # its quotas went (and maybe came again) before this ran
        prefix = namespace.encode()
        types = self._of_types

        def its_records(raw: ConsumerRecord) -> bool:  # type: ignore[type-arg]
            return types(raw) and namespace_of(raw.key) in (prefix, None)

        try:
            source = await self.model.take_pods_in(namespace, its_records)
        except Exception as exc:  # the broker or the database away: try again later
            log.warning("could not take the pods of namespace %s (%s): again", namespace, exc)
            self.model.forget_pods_in(namespace)
            asyncio.get_running_loop().call_later(
                RETRY_S, lambda: self.model.after_batch(lambda: self._take(namespace, taken))
            )
            return
        del self._taken[namespace]
        self.held.add(namespace)
        log.info("namespace %s has a quota: its pods taken from %s", namespace, source)
        for listener in self._on_held:
            listener(namespace)
        taken.set_result(None)

    def _end(self, namespace: str) -> None:
        """Its last quota went: its records are skipped, its pods forgotten."""
        self._set_followed(namespace, False)
        self.held.discard(namespace)
        taken = self._taken.pop(namespace, None)
        if taken is not None and not taken.done():
            taken.set_result(None)  # nothing to wait for: no quota to decide by
        self.model.forget_pods_in(namespace)
