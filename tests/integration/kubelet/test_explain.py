"""`inplace explain` on real decisions (issue 19): a Deferred resize completed once the pod
holding the room was deleted, then an Infeasible one; told from the log, as text and JSON,
and from the node's side."""

from __future__ import annotations

import json

from kubernetes import client

from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess, call, inplace, until
from tests.integration.kubelet.conftest import cpu_resize, node0_pod, running_kubelet


async def test_explain_names_the_blocker_the_deletion_and_the_allocatable(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    web = lambda: v1.read_namespaced_pod("web", "default")  # noqa: E731
    async with running_kubelet(settings):  # one node, 4 CPU
        await call(v1.create_namespaced_pod, "default", node0_pod("hog", "2500m"))
        await call(v1.create_namespaced_pod, "default", node0_pod("web", "1"))
        await until(web, lambda p: p.status.phase == "Running", "web running")
        await call(v1.patch_namespaced_pod_resize, "web", "default", cpu_resize("2"))
        deferred = await until(web, lambda p: p.status.resize == "Deferred", "deferred")
        condition = next(c for c in deferred.status.conditions if c.type == "PodResizePending")
        assert condition.message.endswith("most held by default/hog (cpu 2500m)")
        await call(v1.delete_namespaced_pod, "hog", "default")
        await until(web, lambda p: p.status.resize is None, "resized after the deletion")
        await call(v1.patch_namespaced_pod_resize, "web", "default", cpu_resize("6"))
        await until(web, lambda p: p.status.resize == "Infeasible", "infeasible")

    text = inplace(settings, "explain", "default/web")
    assert text.returncode == 0, text.stderr
    first, second = text.stdout.split("\nresize 2:")
    assert "resize 1: asked by system:unsecured" in first
    assert "Deferred: Node didn't have enough resource: cpu, requested: 2000, used: 2500" in first
    assert (
        "cpu: 4 allocatable on node node-0, 2500m allocated to other pods (default/hog 2500m)"
        in first
    )
    assert "freed the room: default/hog was deleted" in first
    lines = first.splitlines()
    retry = next(i for i, ln in enumerate(lines) if "retried at " in ln)
    assert lines[retry].endswith("after default/hog was deleted")
    assert "Allocated on node node-0" in lines[retry + 1]
    assert "outcome  Completed" in first
    assert (
        "Infeasible: Node didn't have enough capacity: cpu, requested: 6000, capacity: 4000"
        in second
    )
    assert "now: Infeasible" in second

    as_json = inplace(settings, "explain", "default/web", "-o", "json")
    story = json.loads(as_json.stdout)
    done, refused = story["resizes"]
    assert done["outcome"] == "Completed" and refused["outcome"] == "Infeasible"
    waits = [s for s in done["steps"] if s["event"] == "ResizeStatusChanged(Deferred)"]
    assert waits[0]["decision"]["holders"] == [
        {"pod": "default/hog", "requests": {"cpu": "2500m", "memory": "128Mi"}}
    ]
    assert [f["text"] for f in done["freed_by"]] == ["default/hog was deleted"]
    assert done["retried"]["text"].endswith("after default/hog was deleted")
    allocated = next(s for s in done["steps"] if s["event"] == "Allocated")
    assert done["retried"]["time"] == allocated["time"]
    assert set(done["durations_ms"]) == {"admission", "actuation", "total"}
    assert refused["steps"][0]["decision"]["allocatable"]["cpu"] == "4"
    only_second = json.loads(
        inplace(settings, "explain", "default/web", "--resize", "2", "-o", "json").stdout
    )
    assert [r["number"] for r in only_second["resizes"]] == [2]

    node = inplace(settings, "explain", "node/node-0")
    assert node.returncode == 0, node.stderr
    assert "registered, allocatable cpu 4" in node.stdout
    assert "default/web since" in node.stdout and "default/hog 2500m" in node.stdout
    missing = inplace(settings, "explain", "default/nobody")
    assert (missing.returncode, missing.stderr.count("\n")) == (3, 1)
    assert "no events for pod default/nobody" in missing.stderr
