"""The allocated pods of a node's checkpoint, held as the JSON of their resource fields (issue 16).

A decoded `PodResources` takes ~7 KB of heap, its JSON well under 1 KB, and a kubelet holds every
pod of its nodes for as long as it runs (it was most of the kubelet's ~20 KB per pod). A node's
decisions read one allocated pod at a time (the pod being resized or actuated; all of them only
when the node itself is resized), so the checkpoint keeps the JSON and decodes a pod when asked.
The pods written or read last stay decoded (`RECENT` per node, shared by the node's successive
checkpoints): the steps of one resize decode its pod at most once.

Like the views it replaces, a pod read here is for reading: a change is a new checkpoint. It
is kept without its conditions and resourceVersion (`_kept`): no decision reads them of an
allocation, and a running pod's five conditions were a third of its JSON. The JSON is held
packed (jsonpack.py, from a dictionary of a typical allocated pod): ~0.5 KB a pod was an
eighth of a kubelet's memory at 50,000 pods; packed, ~60 bytes (~7 µs to pack, ~3 to unpack,
against ~11 to decode).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from inplace.core.projection.jsonpack import JsonPacker
from schemas.k8s import Pod
from schemas.podview import PodLike, PodResources

RECENT = 4


def _typical() -> list[bytes]:
    """The checkpoint's JSON of a typical allocated pod: one container, resized once."""
    resources = {"limits": {"cpu": "100m", "memory": "128Mi"}}
    resources["requests"] = resources["limits"]
    policy = [{"resourceName": r, "restartPolicy": "NotRequired"} for r in ("cpu", "memory")]
    pod = Pod.model_validate(
        {
            "metadata": {"name": "web-0", "namespace": "default", "generation": 2,
                         "uid": "00000000-0000-0000-0000-000000000000"},
            "spec": {"nodeName": "node-0", "containers": [
                {"name": "app", "image": "nginx", "resources": resources,
                 "resizePolicy": policy}]},
            "status": {"phase": "Running", "qosClass": "Guaranteed", "observedGeneration": 2,
                       "containerStatuses": [
                {"name": "app", "image": "nginx", "imageID": "", "ready": True,
                 "restartCount": 0, "allocatedResources": resources["requests"],
                 "resources": resources}]},
        }
    )  # fmt: skip
    view = _kept(PodResources.of(pod))
    return [view.__pydantic_serializer__.to_json(view, by_alias=True, exclude_none=True)]


class _Recent:
    """Decoded pods of one node, newest last; an entry is valid while its JSON is the held one."""

    __slots__ = ("views",)

    def __init__(self) -> None:
        self.views: OrderedDict[str, tuple[bytes, PodResources]] = OrderedDict()

    def get(self, key: str, raw: bytes) -> PodResources | None:
        hit = self.views.get(key)
        if hit is None or hit[0] is not raw:
            return None
        self.views.move_to_end(key)
        return hit[1]

    def put(self, key: str, raw: bytes, view: PodResources) -> None:
        self.views[key] = (raw, view)
        self.views.move_to_end(key)
        while len(self.views) > RECENT:
            self.views.popitem(last=False)


class AllocatedPods(Mapping[str, PodLike]):
    """Pod key → the allocated pod's resource fields, in admission order. Immutable: `with_pods`
    and `without` return the next one."""

    __slots__ = ("_raw", "_recent")

    def __init__(self, raw: dict[str, bytes] | None = None, recent: _Recent | None = None) -> None:
        self._raw: dict[str, bytes] = raw if raw is not None else {}
        self._recent = recent if recent is not None else _Recent()

    @classmethod
    def of(cls, pods: Mapping[str, PodLike]) -> AllocatedPods:
        if isinstance(pods, AllocatedPods):
            return pods
        return cls().with_pods((key, PodResources.of(pod)) for key, pod in pods.items())

    def __getitem__(self, key: str) -> PodResources:
        raw = self._raw[key]
        view = self._recent.get(key, raw)
        if view is None:
            view = PodResources.model_validate_json(_PACKER.unpack(raw))
            self._recent.put(key, raw, view)
        return view

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def with_pods(self, pods: Iterable[tuple[str, PodResources]]) -> AllocatedPods:
        """These pods added (or replaced, keeping their place in admission order)."""
        raw = dict(self._raw)
        for key, given in pods:
            view = _kept(given)
            data = _PACKER.pack(
                view.__pydantic_serializer__.to_json(view, by_alias=True, exclude_none=True)
            )
            raw[key] = data
            self._recent.put(key, data, view)
        return AllocatedPods(raw, self._recent)

    def without(self, key: str) -> AllocatedPods:
        return AllocatedPods({k: v for k, v in self._raw.items() if k != key}, self._recent)


def _kept(view: PodResources) -> PodResources:
    """What the checkpoint keeps of an allocated pod: its resource fields, without the pod's
    conditions and resourceVersion (shallow copies; the given view is left as it is)."""
    status, metadata = view.status, view.metadata
    if status.conditions is None and metadata.resource_version is None:
        return view
    return view.model_copy(
        update={
            "status": status.model_copy(update={"conditions": None}),
            "metadata": metadata.model_copy(update={"resource_version": None}),
        }
    )


_PACKER = JsonPacker(_typical())
