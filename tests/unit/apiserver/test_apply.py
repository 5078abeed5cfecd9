"""Server-side apply: field sets, FieldsV1, conflicts, force and removal, case by case."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from services.apiserver.apply import (
    ApplyConflict,
    conflict_message,
    field_paths,
    from_fields_v1,
    server_side_apply,
    to_fields_v1,
)

POD = "io.k8s.api.core.v1.Pod"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pod(labels: dict[str, str] | None = None, image: str = "nginx:1.27") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", **({"labels": labels} if labels else {})},
        "spec": {"containers": [{"name": "app", "image": image}]},
    }


def apply(
    live: dict[str, Any], config: dict[str, Any], manager: str, force: bool = False
) -> dict[str, Any]:
    return server_side_apply(
        live, config, definition=POD, manager=manager, force=force, now=NOW
    ).merged


def test_field_paths_key_list_items_by_their_merge_key() -> None:
    paths = field_paths(pod({"app": "web"})["spec"], {"$ref": "#/$defs/io.k8s.api.core.v1.PodSpec"})
    item = 'k:{"name":"app"}'
    assert paths == {
        ("f:containers", item, "."),
        ("f:containers", item, "f:name"),
        ("f:containers", item, "f:image"),
    }
    assert from_fields_v1(to_fields_v1(paths)) == paths
    assert to_fields_v1(paths) == {"f:containers": {item: {".": {}, "f:image": {}, "f:name": {}}}}


def test_first_apply_owns_what_it_set() -> None:
    merged = apply({}, pod({"app": "web"}), "kubectl")
    (entry,) = merged["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl" and entry["operation"] == "Apply"
    assert entry["time"] == "2026-01-01T00:00:00Z" and entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"]["f:metadata"] == {"f:labels": {"f:app": {}}}


def test_conflict_unless_forced() -> None:
    live = apply({}, pod({"app": "web"}), "kubectl")
    with pytest.raises(ApplyConflict) as err:
        apply(live, pod(image="nginx:1.28"), "deployer")
    assert conflict_message(err.value.conflicts, "v1") == (
        'Apply failed with 1 conflict: conflict with "kubectl" using v1: '
        '.spec.containers[name="app"].image'
    )
    forced = apply(copy.deepcopy(live), pod(image="nginx:1.28"), "deployer", force=True)
    assert forced["spec"]["containers"][0]["image"] == "nginx:1.28"
    owners = {
        e["manager"]: from_fields_v1(e["fieldsV1"]) for e in forced["metadata"]["managedFields"]
    }
    image = ("f:spec", "f:containers", 'k:{"name":"app"}', "f:image")
    assert image in owners["deployer"] and image not in owners["kubectl"]


def test_same_value_is_shared_not_a_conflict() -> None:
    live = apply({}, pod({"app": "web"}), "kubectl")
    merged = apply(live, pod({"app": "web"}), "other")
    assert {e["manager"] for e in merged["metadata"]["managedFields"]} == {"kubectl", "other"}


def test_omitted_fields_are_removed_unless_someone_else_owns_them() -> None:
    live = apply({}, pod({"app": "web", "tier": "front"}), "kubectl")
    dropped = apply(copy.deepcopy(live), pod({"app": "web"}), "kubectl")
    assert dropped["metadata"]["labels"] == {"app": "web"}
    shared = apply(copy.deepcopy(live), pod({"tier": "front"}), "other")
    kept = apply(shared, pod({"app": "web"}), "kubectl")
    assert kept["metadata"]["labels"] == {"app": "web", "tier": "front"}


def test_keyed_lists_merge_by_key() -> None:
    live = pod()
    live["spec"]["containers"].append({"name": "sidecar", "image": "envoy"})
    merged = apply(live, pod(image="nginx:1.29"), "kubectl")
    assert [(c["name"], c["image"]) for c in merged["spec"]["containers"]] == [
        ("app", "nginx:1.29"),
        ("sidecar", "envoy"),
    ]
