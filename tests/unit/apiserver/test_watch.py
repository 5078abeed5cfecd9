"""The watch stream: which events a watcher gets, and how they are written."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from starlette.requests import Request

from inplace.core.readmodel import Collection, WatchEvent
from services.apiserver.http import matcher, watch


def _request(query: str, namespace: str | None) -> Request:
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    return Request(
        {
            "type": "http",
            "method": "GET",
            "path": path,
            "query_string": query.encode(),
            "headers": [],
        }
    )


def _pod(namespace: str, name: str, rv: int, labels: dict[str, str] | None = None) -> WatchEvent:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": str(rv)}
    if labels:
        meta["labels"] = labels
    return WatchEvent.of("MODIFIED", rv, namespace, {"kind": "Pod", "metadata": meta})


async def _first_chunk(query: str, namespace: str | None, events: list[WatchEvent]) -> list[Any]:
    pods = Collection("pods", deque(maxlen=100), last=5)
    request = _request(query, namespace)
    response = watch(request, pods, [], matcher(request, namespace, "Pod"), None, namespace)
    stream = response.body_iterator
    for event in events:  # all queued before the watcher runs: one batch of the read model
        pods.publish(event)
    chunk = await anext(stream)  # type: ignore[arg-type]
    await stream.aclose()  # type: ignore[attr-defined]
    assert isinstance(chunk, bytes)
    return [json.loads(line) for line in chunk.splitlines()]


async def test_queued_events_go_out_in_one_write_filtered_by_namespace() -> None:
    events = [_pod("a", "x", 6), _pod("b", "y", 7), _pod("a", "z", 8)]
    lines = await _first_chunk("watch=true&resourceVersion=5", "a", events)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [
        ("MODIFIED", "x"),
        ("MODIFIED", "z"),
    ]
    every = await _first_chunk("watch=true&resourceVersion=5", None, events)
    assert [e["object"]["metadata"]["name"] for e in every] == ["x", "y", "z"]


async def test_selectors_still_read_the_object() -> None:
    events = [
        _pod("a", "x", 6, {"app": "web"}),
        _pod("a", "y", 7, {"app": "db"}),
        _pod("b", "z", 8, {"app": "web"}),
    ]
    lines = await _first_chunk("watch=true&resourceVersion=5&labelSelector=app%3Dweb", "a", events)
    assert [e["object"]["metadata"]["name"] for e in lines] == ["x"]
    by_field = await _first_chunk(
        "watch=true&resourceVersion=5&fieldSelector=metadata.name%3Dz", None, events
    )
    assert [e["object"]["metadata"]["name"] for e in by_field] == ["z"]


async def test_resume_backlog_is_filtered_by_namespace() -> None:
    pods = Collection("pods", deque(maxlen=100), last=5, base=5)
    for event in (_pod("a", "x", 6), _pod("b", "y", 7)):
        pods.publish(event)
    request = _request("watch=true&resourceVersion=5", "b")
    response = watch(request, pods, [], matcher(request, "b", "Pod"), None, "b")
    stream = response.body_iterator
    first = await anext(stream)  # type: ignore[arg-type]
    await stream.aclose()  # type: ignore[attr-defined]
    assert isinstance(first, bytes)
    assert json.loads(first)["object"]["metadata"]["name"] == "y"
