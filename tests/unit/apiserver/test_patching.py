"""Tables for the three patch types the apiserver accepts, and a property: any body, with any
content type, gives a JSON object or a PatchError (never another exception, never a 500)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.apiserver.patching import (
    JSON_PATCH,
    MAX_BODY_BYTES,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    apply_patch,
)

ACCEPTED = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, "
    "application/strategic-merge-patch+json"
)
REJECTED = "the server rejected our request due to an error in our request: "


def container(name: str, cpu: str = "500m", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"{name}:1",
        "resources": {
            "requests": {"cpu": cpu, "memory": "256Mi"},
            "limits": {"cpu": cpu, "memory": "256Mi"},
        },
        **extra,
    }


POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web",
        "namespace": "default",
        "labels": {"app": "web", "tier": "front"},
        "finalizers": ["example.com/a", "example.com/b"],
    },
    "spec": {
        "containers": [
            container(
                "c1",
                env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                ports=[{"containerPort": 80, "protocol": "TCP"}],
                resizePolicy=[
                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                    {"resourceName": "memory", "restartPolicy": "RestartContainer"},
                ],
            ),
            container("c2"),
        ],
        "initContainers": [container("log", "100m", restartPolicy="Always")],
        "nodeSelector": {"disk": "ssd"},
        "restartPolicy": "Always",
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "PodScheduled", "status": "True"},
        ],
        "containerStatuses": [{"name": "c1", "ready": True}, {"name": "c2", "ready": False}],
    },
}


def expect(change: Any) -> dict[str, Any]:
    """POD with `change(doc)` applied in place, or with a dict of dotted paths set."""
    doc = copy.deepcopy(POD)
    change(doc)
    return doc


def apply(body: Any, content_type: str) -> dict[str, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    before = copy.deepcopy(POD)
    try:
        return apply_patch(POD, raw, content_type)
    finally:
        assert before == POD, "the original is never modified"


def c1(doc: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = doc["spec"]["containers"][0]
    return result


# --- strategic merge patch ----------------------------------------------------------------------


def _cpu(value: str) -> Any:
    def change(doc: dict[str, Any]) -> None:
        c1(doc)["resources"]["requests"]["cpu"] = value

    return change


def _names(doc: dict[str, Any], field: str = "containers") -> list[str]:
    return [c["name"] for c in doc["spec"][field]]


STRATEGIC_CASES: list[tuple[str, dict[str, Any], Any]] = [
    (
        "kubectl resize body merges into the named container",
        {"spec": {"containers": [{"name": "c1", "resources": {"requests": {"cpu": "800m"}}}]}},
        _cpu("800m"),
    ),
    (
        "second container only",
        {"spec": {"containers": [{"name": "c2", "resources": {"limits": {"cpu": "1"}}}]}},
        lambda d: d["spec"]["containers"][1]["resources"]["limits"].update(cpu="1"),
    ),
    (
        "sidecar in initContainers by name",
        {"spec": {"initContainers": [{"name": "log", "resources": {"requests": {"cpu": "200m"}}}]}},
        lambda d: d["spec"]["initContainers"][0]["resources"]["requests"].update(cpu="200m"),
    ),
    (
        "null deletes a key",
        {"metadata": {"labels": {"tier": None}}},
        lambda d: d["metadata"]["labels"].pop("tier"),
    ),
    (
        "null for a missing key is dropped",
        {"metadata": {"annotations": {"a": None, "b": "1"}}},
        lambda d: d["metadata"].update(annotations={"b": "1"}),
    ),
    (
        "maps merge recursively",
        {"spec": {"nodeSelector": {"zone": "a"}}},
        lambda d: d["spec"]["nodeSelector"].update(zone="a"),
    ),
    (
        "env merges by name, a new item goes first (apimachinery's order)",
        {
            "spec": {
                "containers": [
                    {
                        "name": "c1",
                        "env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}],
                    }
                ]
            }
        },
        lambda d: c1(d).update(
            env=[
                {"name": "C", "value": "3"},
                {"name": "A", "value": "9"},
                {"name": "B", "value": "2"},
            ]
        ),
    ),
    (
        "ports merge by containerPort",
        {
            "spec": {
                "containers": [{"name": "c1", "ports": [{"containerPort": 80, "name": "http"}]}]
            }
        },
        lambda d: c1(d).update(ports=[{"containerPort": 80, "protocol": "TCP", "name": "http"}]),
    ),
    (
        "resizePolicy merges by resourceName",
        {
            "spec": {
                "containers": [
                    {
                        "name": "c1",
                        "resizePolicy": [
                            {"resourceName": "memory", "restartPolicy": "NotRequired"}
                        ],
                    }
                ]
            }
        },
        lambda d: c1(d)["resizePolicy"][1].update(restartPolicy="NotRequired"),
    ),
    (
        "conditions merge by type",
        {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        lambda d: d["status"]["conditions"][0].update(status="False"),
    ),
    (
        "containerStatuses merge by name",
        {"status": {"containerStatuses": [{"name": "c2", "ready": True}]}},
        lambda d: d["status"]["containerStatuses"][1].update(ready=True),
    ),
    (
        "a new container is added",
        {"spec": {"containers": [{"name": "c3", "image": "c3:1"}]}},
        lambda d: d["spec"].update(
            containers=[{"name": "c3", "image": "c3:1"}, *d["spec"]["containers"]]
        ),
    ),
    (
        "$patch: delete removes the item with that key",
        {"spec": {"containers": [{"name": "c2", "$patch": "delete"}]}},
        lambda d: d["spec"]["containers"].pop(1),
    ),
    (
        "$patch: delete of a missing item is a no-op",
        {"spec": {"containers": [{"name": "nope", "$patch": "delete"}]}},
        lambda d: None,
    ),
    (
        "$patch: replace replaces the list",
        {"spec": {"containers": [{"name": "solo", "image": "solo:1"}, {"$patch": "replace"}]}},
        lambda d: d["spec"].update(containers=[{"name": "solo", "image": "solo:1"}]),
    ),
    (
        "$patch: replace on a map",
        {"metadata": {"labels": {"only": "this", "$patch": "replace"}}},
        lambda d: d["metadata"].update(labels={"only": "this"}),
    ),
    (
        "$patch: delete on a map empties it",
        {"spec": {"nodeSelector": {"$patch": "delete"}}},
        lambda d: d["spec"].update(nodeSelector={}),
    ),
    (
        "$patch: merge is the default",
        {"metadata": {"labels": {"x": "1", "$patch": "merge"}}},
        lambda d: d["metadata"]["labels"].update(x="1"),
    ),
    (
        "$setElementOrder reorders the list",
        {"spec": {"$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}]}},
        lambda d: d["spec"].update(containers=d["spec"]["containers"][::-1]),
    ),
    (
        "$setElementOrder with a change, as kubectl sends it",
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "c1"}, {"name": "c3"}, {"name": "c2"}],
                "containers": [{"name": "c1", "image": "c1:2"}, {"name": "c3", "image": "c3:1"}],
            }
        },
        lambda d: d["spec"].update(
            containers=[
                {**d["spec"]["containers"][0], "image": "c1:2"},
                {"name": "c3", "image": "c3:1"},
                d["spec"]["containers"][1],
            ]
        ),
    ),
    (
        "$setElementOrder of a primitive list",
        {"metadata": {"$setElementOrder/finalizers": ["example.com/b", "example.com/a"]}},
        lambda d: d["metadata"].update(finalizers=["example.com/b", "example.com/a"]),
    ),
    (
        "finalizers merge as a set",
        {"metadata": {"finalizers": ["example.com/c", "example.com/a"]}},
        lambda d: d["metadata"].update(
            finalizers=["example.com/c", "example.com/a", "example.com/b"]
        ),
    ),
    (
        "$deleteFromPrimitiveList",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}},
        lambda d: d["metadata"].update(finalizers=["example.com/b"]),
    ),
    (
        "$retainKeys drops the other keys",
        {
            "spec": {
                "containers": [
                    {"name": "c1", "resources": {"$retainKeys": ["limits"], "limits": {"cpu": "1"}}}
                ]
            }
        },
        lambda d: c1(d).update(resources={"limits": {"cpu": "1", "memory": "256Mi"}}),
    ),
    (
        "lists without a strategy are replaced",
        {
            "spec": {"containers": [{"name": "c1", "command": ["a"]}]},
            "metadata": {"ownerReferences": []},
        },
        lambda d: (c1(d).update(command=["a"]), d["metadata"].update(ownerReferences=[])),
    ),
    (
        "a value of another type replaces",
        {"spec": {"nodeSelector": "none"}},
        lambda d: d["spec"].update(nodeSelector="none"),
    ),
    (
        "directives inside a new subtree are processed",
        {
            "spec": {
                "hostAliases": [
                    {"ip": "1.2.3.4", "hostnames": ["a"]},
                    {"ip": "5.6.7.8", "$patch": "delete"},
                ]
            }
        },
        lambda d: d["spec"].update(hostAliases=[{"ip": "1.2.3.4", "hostnames": ["a"]}]),
    ),
    ("empty patch", {}, lambda d: None),
]


@pytest.mark.parametrize(
    ("patch", "change"), [c[1:] for c in STRATEGIC_CASES], ids=[c[0] for c in STRATEGIC_CASES]
)
def test_strategic_merge_patch(patch: dict[str, Any], change: Any) -> None:
    assert apply(patch, STRATEGIC_MERGE_PATCH) == expect(change)


def test_kubectl_resize_patch_leaves_the_other_containers_alone() -> None:
    body = b'{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"800m"}}}]}}'
    result = apply_patch(POD, body, "application/strategic-merge-patch+json; charset=utf-8")
    assert c1(result)["resources"] == {
        "requests": {"cpu": "800m", "memory": "256Mi"},
        "limits": {"cpu": "500m", "memory": "256Mi"},
    }
    assert result["spec"]["containers"][1] == POD["spec"]["containers"][1]
    assert result["spec"]["initContainers"] == POD["spec"]["initContainers"]
    assert _names(result) == ["c1", "c2"]


def test_kubectl_apply_of_a_cloneset_template_merges_its_containers_by_name() -> None:
    # What `kubectl apply` sends for a CloneSet whose template's cpu changed: it computes the
    # patch with the Pod's merge keys from the template's OpenAPI schema (PodTemplateSpec).
    cloneset = {
        "apiVersion": "apps.inplace.dev/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "finalizers": ["a"]},
        "spec": {
            "replicas": 3,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [container("app"), container("log", "100m")]},
            },
        },
    }
    patch = {
        "metadata": {"finalizers": ["b"]},
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "app"}, {"name": "log"}],
                    "containers": [{"name": "app", "resources": {"limits": {"cpu": "1"}}}],
                }
            }
        },
    }
    result = apply_patch(
        cloneset, json.dumps(patch).encode(), STRATEGIC_MERGE_PATCH, kind="CloneSet"
    )
    containers = result["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app", "log"]
    assert containers[0]["resources"]["limits"] == {"cpu": "1", "memory": "256Mi"}
    assert containers[0]["image"] == "app:1" and containers[1] == container("log", "100m")
    assert sorted(result["metadata"]["finalizers"]) == ["a", "b"]  # merged, as for every kind


STRATEGIC_ERRORS: list[tuple[str, bytes, int, str, str]] = [
    ("not JSON", b"{", 400, "BadRequest", "error decoding patch: "),
    ("empty body", b"", 400, "BadRequest", "error decoding patch: "),
    (
        "an array",
        b"[]",
        400,
        "BadRequest",
        "error decoding patch: a strategic merge patch is a JSON object, not a JSON array",
    ),
    (
        "NaN is not JSON",
        b'{"a": NaN}',
        400,
        "BadRequest",
        "error decoding patch: invalid JSON value NaN",
    ),
    (
        "not UTF-8",
        b'{"a": "\xff"}',
        400,
        "BadRequest",
        "error decoding patch: the body is not valid UTF-8",
    ),
    (
        "unknown $ directive",
        b'{"spec": {"$replace": true}}',
        400,
        "BadRequest",
        "unknown strategic merge patch directive '$replace'",
    ),
    (
        "unknown $patch value",
        b'{"spec": {"$patch": "nuke"}}',
        400,
        "BadRequest",
        'unknown patch type: "nuke" in map',
    ),
    (
        "unknown $patch in a list item",
        b'{"spec": {"containers": [{"name": "c1", "$patch": "nuke"}]}}',
        400,
        "BadRequest",
        'unknown patch type: "nuke" in map',
    ),
    (
        "list item without its merge key",
        b'{"spec": {"containers": [{"image": "x"}]}}',
        400,
        "BadRequest",
        'map: {"image": "x"} does not contain declared merge key: name',
    ),
    (
        "delete without the merge key",
        b'{"spec": {"containers": [{"$patch": "delete"}]}}',
        400,
        "BadRequest",
        "does not contain declared merge key: name",
    ),
    (
        "list of lists",
        b'{"spec": {"containers": [[1]]}}',
        422,
        "Invalid",
        REJECTED + "lists of lists are not supported",
    ),
    (
        "scalars in a keyed list",
        b'{"spec": {"containers": ["c1"]}}',
        400,
        "BadRequest",
        "list element types are not identical",
    ),
    (
        "objects in a primitive merge list",
        b'{"metadata": {"finalizers": [{"a": 1}]}}',
        400,
        "BadRequest",
        "cannot merge lists without merge key for finalizers",
    ),
    (
        "bad $retainKeys",
        b'{"spec": {"$retainKeys": "all"}}',
        400,
        "BadRequest",
        "invalid patch format of retainKeys",
    ),
    (
        "patch outside $retainKeys",
        b'{"spec": {"$retainKeys": ["nodeName"], "restartPolicy": "Never"}}',
        400,
        "BadRequest",
        "invalid patch format of retainKeys",
    ),
    (
        "bad $setElementOrder",
        b'{"spec": {"$setElementOrder/containers": "c1"}}',
        400,
        "BadRequest",
        "invalid patch format of setElementOrder list",
    ),
    (
        "$setElementOrder not matching the patch",
        b'{"spec": {"$setElementOrder/containers": [{"name": "c1"}], '
        b'"containers": [{"name": "c2", "image": "y"}]}}',
        400,
        "BadRequest",
        "invalid patch format of setElementOrder list: the order of the patch list",
    ),
    (
        "bad $deleteFromPrimitiveList",
        b'{"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}',
        400,
        "BadRequest",
        "invalid patch format of primitive list",
    ),
]


@pytest.mark.parametrize(
    ("body", "code", "reason", "message"),
    [c[1:] for c in STRATEGIC_ERRORS],
    ids=[c[0] for c in STRATEGIC_ERRORS],
)
def test_strategic_merge_patch_errors(body: bytes, code: int, reason: str, message: str) -> None:
    with pytest.raises(PatchError) as info:
        apply(body, STRATEGIC_MERGE_PATCH)
    assert (info.value.code, info.value.reason) == (code, reason)
    assert message in info.value.message


# --- JSON merge patch (RFC 7386) ----------------------------------------------------------------

MERGE_CASES: list[tuple[str, Any, Any]] = [
    (
        "lists are replaced whole",
        {"spec": {"containers": [{"name": "c1"}]}},
        lambda d: d["spec"].update(containers=[{"name": "c1"}]),
    ),
    (
        "null deletes",
        {"metadata": {"labels": {"app": None}}},
        lambda d: d["metadata"]["labels"].pop("app"),
    ),
    (
        "nested objects merge",
        {"status": {"phase": "Succeeded", "message": "done"}},
        lambda d: d["status"].update(phase="Succeeded", message="done"),
    ),
    (
        "nulls inside new objects are dropped",
        {"metadata": {"annotations": {"a": None, "b": {"c": None, "d": 1}}}},
        lambda d: d["metadata"].update(annotations={"b": {"d": 1}}),
    ),
    (
        "$ keys are plain keys",
        {"metadata": {"labels": {"$patch": "delete"}}},
        lambda d: d["metadata"]["labels"].update({"$patch": "delete"}),
    ),
    ("empty", {}, lambda d: None),
]


@pytest.mark.parametrize(
    ("patch", "change"), [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES]
)
def test_merge_patch(patch: Any, change: Any) -> None:
    assert apply(patch, MERGE_PATCH) == expect(change)


MERGE_ERRORS: list[tuple[str, bytes, int, str, str]] = [
    ("not JSON", b"{nope", 400, "BadRequest", "Invalid JSON Patch"),
    ("empty body", b"", 400, "BadRequest", "Invalid JSON Patch"),
    (
        "a non-object replaces the document",
        b"[1]",
        422,
        "Invalid",
        REJECTED + "the patched object is a JSON array, not an object",
    ),
    (
        "null replaces the document",
        b"null",
        422,
        "Invalid",
        REJECTED + "the patched object is a JSON null, not an object",
    ),
]


@pytest.mark.parametrize(
    ("body", "code", "reason", "message"),
    [c[1:] for c in MERGE_ERRORS],
    ids=[c[0] for c in MERGE_ERRORS],
)
def test_merge_patch_errors(body: bytes, code: int, reason: str, message: str) -> None:
    with pytest.raises(PatchError) as info:
        apply(body, MERGE_PATCH)
    assert (info.value.code, info.value.reason, info.value.message) == (code, reason, message)


# --- JSON patch (RFC 6902) ----------------------------------------------------------------------

JSON_PATCH_CASES: list[tuple[str, list[dict[str, Any]], Any]] = [
    (
        "replace a request",
        [{"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "800m"}],
        _cpu("800m"),
    ),
    (
        "test then replace",
        [
            {"op": "test", "path": "/spec/containers/0/resources/requests/cpu", "value": "500m"},
            {"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "800m"},
        ],
        _cpu("800m"),
    ),
    (
        "add, remove, copy, move",
        [
            {"op": "add", "path": "/metadata/labels/x", "value": "1"},
            {"op": "remove", "path": "/metadata/labels/tier"},
            {"op": "copy", "from": "/metadata/labels/x", "path": "/metadata/labels/y"},
            {"op": "move", "from": "/metadata/labels/y", "path": "/metadata/labels/z"},
        ],
        lambda d: d["metadata"].update(labels={"app": "web", "x": "1", "z": "1"}),
    ),
    (
        "append to a list",
        [{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/c"}],
        lambda d: d["metadata"]["finalizers"].append("example.com/c"),
    ),
    (
        "escaped path",
        [{"op": "add", "path": "/metadata/labels/example.com~1team", "value": "a"}],
        lambda d: d["metadata"]["labels"].update({"example.com/team": "a"}),
    ),
    ("no operations", [], lambda d: None),
]


@pytest.mark.parametrize(
    ("ops", "change"), [c[1:] for c in JSON_PATCH_CASES], ids=[c[0] for c in JSON_PATCH_CASES]
)
def test_json_patch(ops: list[dict[str, Any]], change: Any) -> None:
    assert apply(ops, JSON_PATCH) == expect(change)


JSON_PATCH_ERRORS: list[tuple[str, bytes, int, str, str]] = [
    ("not JSON", b"[{", 400, "BadRequest", "error decoding patch: "),
    (
        "an object",
        b'{"op": "add"}',
        400,
        "BadRequest",
        "error decoding patch: a JSON patch is an array of operations, not a JSON object",
    ),
    (
        "an operation that is not an object",
        b"[1]",
        400,
        "BadRequest",
        "error decoding patch: a JSON patch operation is an object, not a JSON number",
    ),
    (
        "failed test",
        b'[{"op": "test", "path": "/metadata/name", "value": "other"}]',
        422,
        "Invalid",
        REJECTED,
    ),
    (
        "unknown op",
        b'[{"op": "bogus", "path": "/a"}]',
        422,
        "Invalid",
        REJECTED + "Unknown operation 'bogus'",
    ),
    ("missing path", b'[{"op": "remove", "path": "/nope/x"}]', 422, "Invalid", REJECTED),
    ("missing value", b'[{"op": "add", "path": "/a"}]', 422, "Invalid", REJECTED),
    ("path not a pointer", b'[{"op": "add", "path": "a", "value": 1}]', 422, "Invalid", REJECTED),
    (
        "replace the whole document with a scalar",
        b'[{"op": "replace", "path": "", "value": 3}]',
        422,
        "Invalid",
        REJECTED + "the patched object is a JSON number, not an object",
    ),
    (
        "too many operations",
        json.dumps([{"op": "test", "path": "/kind", "value": "Pod"}] * 10_001).encode(),
        413,
        "RequestEntityTooLarge",
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
        "got 10001",
    ),
]


@pytest.mark.parametrize(
    ("body", "code", "reason", "message"),
    [c[1:] for c in JSON_PATCH_ERRORS],
    ids=[c[0] for c in JSON_PATCH_ERRORS],
)
def test_json_patch_errors(body: bytes, code: int, reason: str, message: str) -> None:
    with pytest.raises(PatchError) as info:
        apply(body, JSON_PATCH)
    assert (info.value.code, info.value.reason) == (code, reason)
    assert info.value.message.startswith(message)


# --- content types and sizes --------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "application/apply-patch+yaml",
        "application/json",
        "text/plain",
        "",
        "application/json-patch",
    ],
)
def test_unsupported_content_types_are_415(content_type: str) -> None:
    with pytest.raises(PatchError) as info:
        apply({}, content_type)
    assert (info.value.code, info.value.reason, info.value.message) == (
        415,
        "UnsupportedMediaType",
        ACCEPTED,
    )
    assert info.value.status().to_k8s() == {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": ACCEPTED,
        "reason": "UnsupportedMediaType",
        "code": 415,
    }


@pytest.mark.parametrize(
    "content_type",
    [" Application/Merge-Patch+JSON ", "application/merge-patch+json;charset=utf-8"],
)
def test_content_type_parameters_and_case_are_ignored(content_type: str) -> None:
    assert apply({"metadata": {"labels": None}}, content_type) == expect(
        lambda d: d["metadata"].pop("labels")
    )


@pytest.mark.parametrize("content_type", [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH])
def test_body_size_limit_is_413(content_type: str) -> None:
    body = b"{}" + b" " * 100
    with pytest.raises(PatchError) as info:
        apply_patch(POD, body, content_type, max_body_bytes=64)
    assert (info.value.code, info.value.reason, info.value.message) == (
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 64",
    )
    assert MAX_BODY_BYTES == 3 * 1024 * 1024
    assert apply_patch(POD, b"{}", STRATEGIC_MERGE_PATCH, max_body_bytes=2) == POD


@pytest.mark.parametrize(
    ("escaped", "decoded"),
    [
        ("\\ud800", "\ufffd"),
        ("a\\uDFFFb", "a\ufffdb"),  # upper case, in the middle of a string
        ("\\ud83d\\ude00", "\U0001f600"),  # a pair is one character, nothing replaced
        ("\\u00e9", "\u00e9"),
    ],
)
@pytest.mark.parametrize("content_type", [MERGE_PATCH, STRATEGIC_MERGE_PATCH])
def test_lone_surrogates_become_replacement_characters(
    escaped: str, decoded: str, content_type: str
) -> None:
    body = f'{{"metadata": {{"labels": {{"x": "{escaped}"}}}}}}'.encode()
    result = apply(body, content_type)
    assert result["metadata"]["labels"]["x"] == decoded
    json.dumps(result).encode("utf-8")


def test_deeply_nested_bodies_are_400() -> None:
    body = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    for content_type in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        with pytest.raises(PatchError) as info:
            apply_patch(POD, body, content_type)
        assert info.value.code == 400


# --- property: nothing but a dict or a PatchError -----------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=16,
)
directive_keys = st.sampled_from(
    [
        "$patch",
        "$retainKeys",
        "$setElementOrder/containers",
        "$deleteFromPrimitiveList/finalizers",
        "$x",
        "containers",
        "name",
        "finalizers",
        "spec",
        "metadata",
        "resources",
        "requests",
    ]
)
shaped = st.recursive(
    st.none()
    | st.sampled_from(["delete", "replace", "merge", "c1", "c2", "x"])
    | st.integers(-2, 2),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(directive_keys, children, max_size=4)
    ),
    max_leaves=20,
)
operations = st.lists(
    st.fixed_dictionaries(
        {
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
            "path": st.sampled_from(
                [
                    "",
                    "/",
                    "/spec",
                    "/spec/containers/0",
                    "/spec/containers/-",
                    "/x/y",
                    "/metadata/labels/a",
                ]
            ),
        },
        optional={
            "value": json_values,
            "from": st.sampled_from(["", "/spec", "/nope", "/metadata"]),
        },
    ),
    max_size=4,
)
bodies = st.one_of(
    st.binary(max_size=96),
    json_values.map(lambda v: json.dumps(v).encode()),
    shaped.map(lambda v: json.dumps(v).encode()),
    operations.map(lambda v: json.dumps(v).encode()),
)
content_types = st.sampled_from(
    [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, "application/apply-patch+yaml", "text/plain"]
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies, content_type=content_types)
def test_any_body_gives_a_dict_or_a_patch_error(body: bytes, content_type: str) -> None:
    before = copy.deepcopy(POD)
    try:
        result = apply_patch(POD, body, content_type)
    except PatchError as exc:
        assert exc.code in (400, 413, 415, 422), exc
        assert exc.reason and exc.message
        assert exc.status().code == exc.code
    else:
        assert isinstance(result, dict)
        json.dumps(result).encode("utf-8")  # serializable as the API's response
    assert POD == before
