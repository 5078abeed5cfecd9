"""Deleting a namespace: what goes before it, in which order, and the 403 for new content
meanwhile (services/apiserver/namespaces.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from services.apiserver.deletions import deletion
from services.apiserver.errors import ApiError
from services.apiserver.namespaces import (
    ORDER,
    admit_content,
    contents,
    left_terminating,
    refuse_deletion,
)
from services.apiserver.writer import Writer
from tests import factories


async def _model() -> ReadModel:
    model = ReadModel(Settings(), role="apiserver", window=0)
    async for _ in factories.feed(model, factories.every_type_stream()):
        pass
    return model


async def test_a_namespace_is_emptied_clonesets_first_then_pods_quotas_limit_ranges() -> None:
    model = await _model()
    namespace = max({k[0] for k in model.pods}, key=lambda ns: sum(k[0] == ns for k in model.pods))
    listed = list(contents(model, namespace))
    expected = [
        (collection, key)
        for collection in ORDER
        for key in sorted(model.objects(collection))
        if key[0] == namespace
    ]
    assert listed == expected and any(c == "pods" for c, _ in listed)
    assert [c for c, _ in listed] == sorted((c for c, _ in listed), key=ORDER.index)
    assert all(key[0] == namespace for _, key in listed)  # nothing of another namespace
    collection, key = next(item for item in listed if item[0] == "pods")
    pod = model.get(collection, key)
    assert deletion(collection, key, pod) == ev.PodDeleted(
        namespace=key[0], name=key[1], uid=pod.metadata.uid or ""
    )


@pytest.mark.parametrize("kind", ["Pod", "CloneSet", "ResourceQuota"])
def test_no_new_content_while_a_namespace_is_emptied(kind: str) -> None:
    model = ReadModel(Settings(), role="apiserver", window=0)
    model.state.namespaces.update({"team": {}, "other": {}})
    writer = Writer(cast(Any, None))
    admit_content(model, writer, "team", kind, "x")  # not terminating: nothing said
    writer.terminating.add("team")
    with pytest.raises(ApiError) as refused:
        admit_content(model, writer, "team", kind, "x")
    assert refused.value.status.code == 403
    assert refused.value.status.message == (
        f'{kind.lower()}s "x" is forbidden: unable to create new content in namespace team '
        "because it is being terminated"
    )
    admit_content(model, writer, "other", kind, "x")  # another namespace is not held off
    admit_content(model, writer, "team", "Event", "x")  # Events may tell of the end
    with pytest.raises(ApiError) as missing:
        admit_content(model, writer, "gone", kind, "x")
    assert missing.value.status.code == 404


def test_no_new_content_in_a_terminating_namespace_on_any_replica() -> None:
    """The phase on the log holds every replica off, not only the one deleting."""
    model = ReadModel(Settings(), role="apiserver", window=0)
    model.state.namespaces["team"] = {"status": {"phase": "Terminating"}}
    with pytest.raises(ApiError) as refused:
        admit_content(model, Writer(cast(Any, None)), "team", "Pod", "x")
    assert refused.value.status.code == 403


@pytest.mark.parametrize("namespace", ["default", "kube-system", "kube-public"])
def test_the_system_namespaces_may_not_be_deleted(namespace: str) -> None:
    with pytest.raises(ApiError) as refused:
        refuse_deletion(namespace)
    assert refused.value.status.code == 403
    assert refused.value.status.message == (
        f'namespaces "{namespace}" is forbidden: this namespace may not be deleted'
    )
    refuse_deletion("team")  # any other may


def test_a_sweep_finishes_only_namespaces_left_terminating_for_a_while() -> None:
    now = datetime(2026, 11, 27, 12, 0, 30, tzinfo=UTC)

    def held(since: str | None) -> dict[str, Any]:
        meta = {"deletionTimestamp": since} if since else {}
        return {"metadata": meta, "status": {"phase": "Terminating" if since else "Active"}}

    namespaces = {
        "old": held("2026-11-27T11:59:00Z"),
        "fresh": held("2026-11-27T12:00:20Z"),  # a DELETE on some replica is at it
        "mine": held("2026-11-27T11:00:00Z"),  # this replica's DELETE has it in hand
        "live": held(None),
    }
    left = left_terminating(namespaces, {"mine"}, now, timedelta(seconds=30))
    assert left == ["old"]
