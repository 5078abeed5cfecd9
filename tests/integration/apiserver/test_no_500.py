"""Property: no request body, for any patch type, makes the apiserver answer 500 — every
failure is a Kubernetes Status with a 4xx code."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import httpx
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.conftest import RoleProcess

CONTENT_TYPES = [
    "application/strategic-merge-patch+json",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "text/plain",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
# Bodies shaped like real resize patches, with random values where the quantities go.
resource_lists = st.dictionaries(
    st.sampled_from(["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "", "CPU"]),
    st.one_of(
        st.text(max_size=6),
        st.integers(-5, 10**12),
        st.sampled_from(["100m", "1Gi", "0", "-1", "1.5", "1e3", "1Ei", "abc"]),
    ),
    max_size=3,
)
patch_like = st.fixed_dictionaries(
    {
        "spec": st.fixed_dictionaries(
            {
                "containers": st.lists(
                    st.fixed_dictionaries(
                        {
                            "name": st.sampled_from(["c1", "c2", "", "nope"]),
                            "resources": st.fixed_dictionaries(
                                {}, optional={"requests": resource_lists, "limits": resource_lists}
                            ),
                        },
                        optional={"resizePolicy": json_values, "image": json_values},
                    ),
                    max_size=2,
                )
            }
        )
    },
    optional={
        "metadata": st.dictionaries(
            st.sampled_from(["resourceVersion", "name", "labels", "uid"]), json_values, max_size=2
        )
    },
)
json_patch_ops = st.lists(
    st.fixed_dictionaries(
        {
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
            "path": st.sampled_from(
                [
                    "/spec/containers/0/resources/requests/cpu",
                    "/spec",
                    "/x/y",
                    "",
                    "/metadata/name",
                    "/spec/containers/-",
                ]
            ),
        },
        optional={"value": json_values, "from": st.sampled_from(["/spec", "/nope"])},
    ),
    max_size=3,
)
bodies = st.one_of(
    patch_like.map(lambda v: json.dumps(v).encode()),
    json_patch_ops.map(lambda v: json.dumps(v).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=64),
)


def _fuzz(base: str) -> list[tuple[int, str]]:
    """Random bodies sent to a pod's resize subresource."""
    pod: dict[str, Any] = {
        "metadata": {"name": "fuzz"},
        "spec": {
            "containers": [
                {
                    "name": "c1",
                    "image": "nginx",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"cpu": "200m", "memory": "128Mi"},
                    },
                }
            ]
        },
    }
    return _fuzz_writes(f"{base}/api/v1/namespaces/default/pods", pod, "/fuzz/resize", 300)


def _fuzz_writes(
    url: str, obj: dict[str, Any], target: str, examples: int
) -> list[tuple[int, str]]:
    """`obj` created at `url`, then random PATCH and PUT bodies sent to `url + target`."""
    seen: list[tuple[int, str]] = []
    with httpx.Client(timeout=30) as client:
        assert client.post(url, json=obj).status_code == 201

        @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
        @given(
            body=bodies,
            content_type=st.sampled_from(CONTENT_TYPES),
            method=st.sampled_from(["PATCH", "PUT"]),
        )
        def check(body: bytes, content_type: str, method: str) -> None:
            r = client.request(
                method, f"{url}{target}", content=body, headers={"content-type": content_type}
            )
            assert r.status_code < 500, (r.status_code, body, content_type, r.text)
            if r.status_code >= 400:
                status = r.json()
                assert status["kind"] == "Status" and status["code"] == r.status_code
                assert status["reason"] and status["message"]
            seen.append((r.status_code, content_type))

        check()
    return seen


async def test_random_resize_bodies_never_500(apiserver: RoleProcess) -> None:
    seen = await asyncio.to_thread(_fuzz, apiserver.url)
    assert {code for code, _ in seen} & {400, 415, 422}, "the bodies really hit the validators"


async def test_random_node_and_namespace_writes_never_500(apiserver: RoleProcess) -> None:
    base = f"{apiserver.url}/api/v1"
    node = {"metadata": {"name": "fuzz"}, "status": {"allocatable": {"cpu": "4"}}}
    seen = await asyncio.to_thread(_fuzz_writes, f"{base}/nodes", node, "/fuzz", 150)
    seen += await asyncio.to_thread(
        _fuzz_writes, f"{base}/namespaces", {"metadata": {"name": "fuzz"}}, "/fuzz", 150
    )
    assert {code for code, _ in seen} & {400, 415, 422}, "the bodies really hit the validators"


MANIFESTS = sorted((Path(__file__).parent / "manifests").glob("*.yaml"))


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [path] + [p for k, v in node.items() for p in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [path] + [p for i, v in enumerate(node) for p in _leaves(v, (*path, i))]
    return [path]


@st.composite
def pod_bodies(draw: st.DrawFn) -> tuple[dict[str, Any], tuple[Any, ...] | None]:
    """A real-world manifest, left valid or broken at one random place: a value replaced by
    any JSON value, or an unknown field added."""
    pod = copy.deepcopy(yaml.safe_load(draw(st.sampled_from(MANIFESTS)).read_text()))
    how = draw(st.sampled_from(["keep", "replace", "add"]))
    if how == "keep":
        return pod, None
    path = draw(st.sampled_from([p for p in _leaves(pod) if p and p[:2] != ("metadata", "name")]))
    parent: Any = pod
    for step in path[:-1]:
        parent = parent[step]
    if how == "replace":
        parent[path[-1]] = draw(json_values)
    elif isinstance(parent[path[-1]], dict):
        parent[path[-1]][draw(st.text(min_size=1, max_size=6))] = draw(json_values)
    return pod, path


def _fuzz_create(base: str) -> list[int]:
    url = f"{base}/api/v1/namespaces/default/pods"
    seen: list[int] = []
    with httpx.Client(timeout=30) as client:

        @settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
        @given(body=pod_bodies(), how=st.sampled_from(["Strict", "Warn", "Ignore", None]))
        def check(body: tuple[dict[str, Any], tuple[Any, ...] | None], how: str | None) -> None:
            pod, broken_at = body
            if isinstance(pod.get("metadata"), dict):
                pod["metadata"]["name"] = f"gen-{len(seen)}"  # a fresh pod each time
            params = {"fieldValidation": how} if how else {}
            r = client.post(
                url,
                content=json.dumps(pod),  # Python writes Infinity, which is no JSON: a 400
                params=params,
                headers={"content-type": "application/json"},
            )
            assert r.status_code < 500, (r.status_code, pod, r.text)
            if broken_at is None:
                assert r.status_code == 201, r.text  # every manifest as written is accepted
            if r.status_code >= 400:
                status = r.json()
                assert status["kind"] == "Status" and status["code"] == r.status_code
                assert status["message"]
            if r.status_code == 422:
                # A schema error names the path of the value, as kube-apiserver's field errors do.
                for cause in status["details"]["causes"]:
                    assert cause["field"] and cause["message"], status
            seen.append(r.status_code)

        check()
    return seen


async def test_generated_pod_bodies_never_500(apiserver: RoleProcess) -> None:
    seen = await asyncio.to_thread(_fuzz_create, apiserver.url)
    assert 201 in seen and ({400, 422} & set(seen)), "valid and broken bodies both exercised"
