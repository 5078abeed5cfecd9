# ruff: noqa: E501  (JSON bodies read best one object per line)
"""A running pod's status as kubectl and controllers read it: container states and
identities, addresses, conditions, observedGeneration (kubelet as a real process)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import httpx

from tests.integration.conftest import RoleProcess, kubectl, until

SMP = {"content-type": "application/strategic-merge-patch+json"}


def pod(name: str) -> dict[str, Any]:
    rl = {"cpu": "100m", "memory": "64Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": "node-0",
            "containers": [{"name": "app", "image": "nginx:1.27", "resources": {"requests": rl, "limits": rl}}],
        },
    }  # fmt: skip


async def test_running_pod_status_and_describe(
    apiserver: RoleProcess, kubelet_process: RoleProcess
) -> None:
    base = f"{apiserver.url}/api/v1/namespaces/default/pods"
    async with httpx.AsyncClient(timeout=10) as http:
        for name in ("web-0", "web-1"):
            assert (await http.post(base, json=pod(name))).status_code == 201

        async def status_of(name: str) -> dict[str, Any]:
            return (await http.get(f"{base}/{name}")).json()

        running = await until(
            partial(status_of, "web-0"), lambda p: p["status"].get("phase") == "Running", "Running"
        )
        other = await until(
            partial(status_of, "web-1"), lambda p: p["status"].get("phase") == "Running", "Running"
        )
        status = running["status"]
        cs = status["containerStatuses"][0]
        assert set(cs["state"]) == {"running"} and cs["state"]["running"]["startedAt"]
        assert cs["ready"] is True and cs["started"] is True
        assert cs["containerID"].startswith("inplace://")
        assert cs["imageID"].startswith("nginx@sha256:") and cs["image"] == "nginx:1.27"
        assert status["podIP"] and status["podIPs"] == [{"ip": status["podIP"]}]
        assert status["podIP"] != other["status"]["podIP"]  # unique per pod
        assert status["hostIP"] == other["status"]["hostIP"]  # the same node
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions == {
            "PodScheduled": "True", "PodReadyToStartContainers": "True", "Initialized": "True",
            "ContainersReady": "True", "Ready": "True",
        }  # fmt: skip
        assert status["observedGeneration"] == running["metadata"]["generation"] == 1

        # A resize bumps the generation; the kubelet's next status reports it observed.
        resize = {
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}},
                    }
                ]
            }
        }
        r = await http.patch(f"{base}/web-0/resize", json=resize, headers=SMP)
        assert r.status_code == 200 and r.json()["metadata"]["generation"] == 2
        done = await until(
            partial(status_of, "web-0"),
            lambda p: p["status"].get("observedGeneration") == 2 and "resize" not in p["status"],
            "resize observed",
        )
        assert done["status"]["containerStatuses"][0]["containerID"] == cs["containerID"]

    async def describe() -> str:
        return (await kubectl(apiserver, "describe", "pod", "web-0")).stdout

    # Its Events section lists them by involvedObject name, namespace and uid (a field
    # selector kube-apiserver supports on events): "<none>" while those were refused.
    described = await until(
        describe, lambda out: "ResizeCompleted" in out.split("Events:")[-1], "Events described"
    )
    events = described.split("Events:")[-1]
    assert "Normal  ResizeStarted" in events and "Pod resize started: {" in events
    started = [row.split()[1] for row in events.splitlines() if "kubelet" in row.split()[3:4]]
    assert started[:3] == ["Pulled", "Created", "Started"]  # its container, as it started
    assert '"generation":2}' in events
    assert "Status:       Running" in described
    assert f"IP:           {status['podIP']}" in described
    assert f"Container ID:   {cs['containerID']}" in described
    assert "State:          Running" in described
    assert "Ready:          True" in described
    wide = (
        (await kubectl(apiserver, "get", "pod", "web-0", "-o", "wide"))
        .stdout.splitlines()[1]
        .split()
    )
    assert wide[1:3] == ["1/1", "Running"] and wide[5] == status["podIP"] and wide[6] == "node-0"
    assert json.loads((await kubectl(apiserver, "get", "pod", "web-0", "-o", "json")).stdout)[
        "status"
    ]["podIP"]


async def test_resize_events_as_the_kubelet_emits_them(
    apiserver: RoleProcess, kubelet_process: RoleProcess
) -> None:
    """Accepted: Normal ResizeStarted (with the generation) then ResizeCompleted; more than
    the node: Warning ResizeInfeasible; more than is free now: Warning ResizeDeferred."""
    base = f"{apiserver.url}/api/v1/namespaces/default/pods"
    events_url = f"{apiserver.url}/api/v1/namespaces/default/events"

    def cpu(value: str) -> dict[str, Any]:
        rl = {"cpu": value, "memory": "64Mi"}
        return {
            "spec": {"containers": [{"name": "app", "resources": {"requests": rl, "limits": rl}}]}
        }

    async with httpx.AsyncClient(timeout=10) as http:
        for name in ("a", "b"):
            assert (await http.post(base, json=pod(name))).status_code == 201

        async def phase(name: str) -> str | None:
            return (await http.get(f"{base}/{name}")).json()["status"].get("phase")

        for name in ("a", "b"):
            await until(partial(phase, name), lambda p: p == "Running", f"{name} Running")

        async def events_of(name: str) -> list[tuple[str, str, str]]:
            items = (await http.get(events_url)).json()["items"]
            return [
                (e["type"], e["reason"], e["message"])
                for e in items
                if e["involvedObject"]["name"] == name
            ]

        assert (
            await http.patch(f"{base}/a/resize", json=cpu("200m"), headers=SMP)
        ).status_code == 200
        seen = await until(
            partial(events_of, "a"),
            lambda es: any(r == "ResizeCompleted" for _, r, _ in es),
            "completed",
        )
        # The 1.35 kubelet's words: the allocated resources and the generation, as JSON.
        allocated = (
            '{"containers":[{"name":"app","resources":{"limits":{"cpu":"200m","memory":"64Mi"},'
            '"requests":{"cpu":"200m","memory":"64Mi"}}}],"generation":2}'
        )
        assert ("Normal", "ResizeStarted", f"Pod resize started: {allocated}") in seen
        assert ("Normal", "ResizeCompleted", f"Pod resize completed: {allocated}") in seen

        assert (
            await http.patch(f"{base}/a/resize", json=cpu("64"), headers=SMP)
        ).status_code == 200
        seen = await until(
            partial(events_of, "a"),
            lambda es: any(r == "ResizeInfeasible" for _, r, _ in es),
            "infeasible",
        )
        assert any(t == "Warning" and r == "ResizeInfeasible" for t, r, _ in seen)
        (said,) = [m for _, r, m in seen if r == "ResizeInfeasible"]
        assert said.startswith('Pod resize Infeasible: {"containers":[{"name":"app"')
        assert '"generation":3,"error":"' in said  # the desired resources and why

        async def pending(name: str) -> dict[str, Any]:
            return (await http.get(f"{base}/{name}")).json()

        def resize_pending(p: dict[str, Any]) -> dict[str, Any] | None:
            conditions = p["status"].get("conditions") or []
            return next((c for c in conditions if c["type"] == "PodResizePending"), None)

        # The conditions say which request they are about (1.34+ conditions[].observedGeneration).
        infeasible = await until(
            partial(pending, "a"),
            lambda p: (c := resize_pending(p)) is not None and c["reason"] == "Infeasible",
            "PodResizePending Infeasible",
        )
        assert infeasible["metadata"]["generation"] == 3
        assert resize_pending(infeasible)["observedGeneration"] == 3  # type: ignore[index]
        assert infeasible["status"]["observedGeneration"] == 3

        # Each resize its own Events, named at their first occurrence (`<pod>.<nanos hex>`,
        # client-go's correlator): a LIST (in name order) and `kubectl describe` (which keeps
        # that order within a second) show them as they happened.
        assert (
            await http.patch(f"{base}/a/resize", json=cpu("300m"), headers=SMP)
        ).status_code == 200

        async def resize_events() -> list[dict[str, Any]]:
            items = (await http.get(events_url)).json()["items"]
            return [e for e in items if e["involvedObject"]["name"] == "a"]

        def reasons(events: list[dict[str, Any]]) -> list[str]:
            return [e["reason"] for e in events if e["reason"].startswith("Resize")]

        listed = await until(
            resize_events, lambda es: reasons(es).count("ResizeCompleted") == 2, "two resizes"
        )
        assert reasons(listed) == [
            "ResizeStarted",  # generation 2
            "ResizeCompleted",
            "ResizeInfeasible",  # generation 3
            "ResizeStarted",  # generation 4
            "ResizeCompleted",
        ]
        first, second = [e for e in listed if e["reason"] == "ResizeStarted"]
        assert first["message"].endswith('"generation":2}')
        assert second["message"].endswith('"generation":4}')
        assert first["count"] == second["count"] == 1
        described = (await kubectl(apiserver, "describe", "pod", "a")).stdout
        rows = [line.split() for line in described.split("Events:")[1].splitlines()]
        assert [r[1] for r in rows if r and r[1].startswith("Resize")] == reasons(listed)

        assert (
            await http.patch(f"{base}/b/resize", json=cpu("3900m"), headers=SMP)
        ).status_code == 200
        seen = await until(
            partial(events_of, "b"),
            lambda es: any(r == "ResizeDeferred" for _, r, _ in es),
            "deferred",
        )
        assert any(t == "Warning" and r == "ResizeDeferred" for t, r, _ in seen)
        deferred = await until(
            partial(pending, "b"),
            lambda p: (c := resize_pending(p)) is not None and c["reason"] == "Deferred",
            "PodResizePending Deferred",
        )
        assert resize_pending(deferred)["observedGeneration"] == 2  # type: ignore[index]
        assert deferred["metadata"]["generation"] == deferred["status"]["observedGeneration"] == 2


async def test_best_effort_pod_reports_empty_resources(
    apiserver: RoleProcess, kubelet_process: RoleProcess
) -> None:
    """A running container without requests or limits reports `resources: {}` (the kubelet
    always sets them), so a resize that would make the pod Burstable is refused for its QoS
    class alone, as kube-apiserver refuses it, not also as a node without resize support."""
    base = f"{apiserver.url}/api/v1/namespaces/default/pods"
    best_effort = pod("be-0")
    del best_effort["spec"]["containers"][0]["resources"]
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.post(base, json=best_effort)).status_code == 201

        async def statuses() -> list[dict[str, Any]]:
            got = (await http.get(f"{base}/be-0")).json()
            return list(got["status"].get("containerStatuses") or [])

        reported = await until(
            statuses, lambda s: bool(s) and "resources" in s[0], "resources reported"
        )
        assert reported[0]["resources"] == {}
        resize = {
            "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}]}
        }
        refused = await http.patch(f"{base}/be-0/resize", json=resize, headers=SMP)
        assert refused.status_code == 422, refused.text
        causes = refused.json()["details"]["causes"]
        # The value kube-apiserver names is the new pod's status.qosClass: still the old one.
        assert [c["message"] for c in causes] == [
            'Invalid value: "BestEffort": Pod QOS Class may not change as a result of resizing'
        ]


async def test_kubectl_logs_and_exec_of_a_started_container(
    apiserver: RoleProcess, kubelet_process: RoleProcess
) -> None:
    """Logs empty (the runtimes run no workload) with a Warning saying so, exec / attach /
    port-forward refused saying so, debug told there are no ephemeral containers;
    kube-apiserver's refusals for a container the pod does not have and one not started yet."""
    base = f"{apiserver.url}/api/v1/namespaces/default/pods"
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.post(base, json=pod("web-0"))).status_code == 201
        pending = pod("web-1")
        pending["spec"]["nodeName"] = "elsewhere"  # bound to a node no kubelet serves
        assert (await http.post(base, json=pending)).status_code == 201

        async def phase() -> str:
            return str((await http.get(f"{base}/web-0")).json()["status"].get("phase"))

        await until(phase, lambda p: p == "Running", "Running")
    done = await kubectl(apiserver, "logs", "web-0")
    assert done.stdout == ""
    assert "they write no log" in done.stderr
    wrong = await kubectl(apiserver, "logs", "web-0", "-c", "nope", check=False)
    assert wrong.returncode != 0
    assert "container nope is not valid for pod web-0" in wrong.stderr
    waiting = await kubectl(apiserver, "logs", "web-1", check=False)
    assert waiting.returncode != 0
    assert 'container "app" in pod "web-1" is waiting to start: ContainerCreating' in waiting.stderr
    # exec, attach and port-forward: the same checks, then why there is nothing to connect to.
    for command in (("exec", "web-0", "--", "true"), ("attach", "web-0")):
        refused = await kubectl(apiserver, *command, check=False)
        assert refused.returncode != 0
        assert f"pods/{command[0]} is not supported: inplace runs no workload" in refused.stderr
    forward = await kubectl(apiserver, "port-forward", "pod/web-0", "0:80", check=False)
    assert forward.returncode != 0
    assert "pods/portforward is not supported" in forward.stderr
    wrong = await kubectl(apiserver, "exec", "web-0", "-c", "nope", "--", "true", check=False)
    assert "container nope is not valid for pod web-0" in wrong.stderr
    waiting = await kubectl(apiserver, "exec", "web-1", "--", "true", check=False)
    assert 'container "app" in pod "web-1" is waiting to start' in waiting.stderr
    # No ephemeral containers: told as kube-apiserver tells it (kubectl panicked before).
    debug = await kubectl(apiserver, "debug", "web-0", "--image=busybox", check=False)
    assert debug.returncode == 1 and "panic" not in debug.stderr
    assert "ephemeral containers are disabled for this cluster" in debug.stderr


async def test_kubectl_set_image_restarts_the_container_with_it(
    apiserver: RoleProcess, kubelet_process: RoleProcess
) -> None:
    """`kubectl set image` on a running pod: the kubelet restarts that container with the new
    image (restartCount 1, the image and imageID in its status, generation observed) and
    records Killing … Started, as a kubelet does for a changed container definition."""
    async with httpx.AsyncClient(timeout=10) as http:
        created = await http.post(
            f"{apiserver.url}/api/v1/namespaces/default/pods", json=pod("img")
        )
        assert created.status_code == 201, created.text
    get = partial(kubectl, apiserver, "get", "pod", "img", "-o", "json")

    async def status() -> dict[str, Any]:
        return json.loads((await get()).stdout)

    before = await until(status, lambda p: p["status"].get("phase") == "Running", "running")
    await kubectl(apiserver, "set", "image", "pod/img", "app=nginx:1.28")
    after = await until(
        status,
        lambda p: p["status"]["containerStatuses"][0]["image"] == "nginx:1.28",
        "restarted with the new image",
    )
    (container,) = after["status"]["containerStatuses"]
    assert container["restartCount"] == 1
    assert container["imageID"].startswith("nginx@sha256:")
    assert container["imageID"] != before["status"]["containerStatuses"][0]["imageID"]
    assert container["lastState"]["terminated"]["reason"] == "Completed"
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert after["status"]["observedGeneration"] == after["metadata"]["generation"]
    events = await kubectl(
        apiserver, "get", "events", "--field-selector", "involvedObject.name=img",
        "-o", "jsonpath={range .items[*]}{.reason}: {.message}{'\\n'}{end}",
    )  # fmt: skip
    said = set(events.stdout.splitlines())
    assert {
        "Killing: Container app definition changed, will be restarted",
        'Pulled: Container image "nginx:1.28" already present on machine',
        "Created: Created container: app",
        "Started: Started container app",
    } <= said, said
