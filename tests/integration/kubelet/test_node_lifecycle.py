"""Node lifecycle (services/apiserver/nodelifecycle.py): a node whose kubelet stops posting
its heartbeat goes NotReady and is tainted unreachable, so nothing new is scheduled there and
a pod tolerating that for less than it lasts is evicted; once a kubelet serves it again it is
Ready, untainted, and the pod waiting for it runs. Its pods are marked not ready while it is
silent, and Ready again once it is back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inplace.core.settings import Settings
from schemas.events import NODES, PODS
from tests.integration.conftest import RoleProcess, kubectl, read_log, until

pytestmark = pytest.mark.integration
UNREACHABLE = "node.kubernetes.io/unreachable"


def ready(node: Any) -> str:
    conditions = node.get("status", {}).get("conditions", [])
    return next((c["status"] for c in conditions if c["type"] == "Ready"), "")


def unreachable(node: Any) -> list[str]:
    return sorted(t["effect"] for t in node.get("spec", {}).get("taints", [])
                  if t["key"] == UNREACHABLE)  # fmt: skip


async def test_a_silent_node_goes_not_ready_and_back(settings: Settings, tmp_path: Path) -> None:
    apiserver = RoleProcess(
        "apiserver", settings, tmp_path / "apiserver.log", INPLACE_QUOTA_URL="",
        INPLACE_APISERVER_NODE_MONITOR_GRACE_S="2", INPLACE_APISERVER_NODE_MONITOR_PERIOD_S="0.3",
    )  # fmt: skip
    scheduler = RoleProcess("scheduler", settings, tmp_path / "scheduler.log")
    env = {"INPLACE_KUBELET_NODES": "1", "INPLACE_KUBELET_USAGE_EVERY_S": "0.3"}
    kubelet = RoleProcess("kubelet", settings, tmp_path / "kubelet.log", **env)

    async def get(*args: str) -> Any:
        shown = await kubectl(apiserver, "get", *args, "-o", "json", check=False)
        return json.loads(shown.stdout) if shown.returncode == 0 else {}

    async def node() -> Any:
        return await get("node", "node-0")

    for role in (apiserver, scheduler, kubelet):
        role.start()
        await role.ready()
    try:
        await until(lambda: get("lease", "node-0", "-n", "kube-node-lease"), bool,
                    "the node's first heartbeat", 30)  # fmt: skip
        assert ready(await node()) == "True"
        # Two pods on the node: one tolerates its being unreachable for a second, the other
        # for the default 300 s.
        brief = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 1}  # fmt: skip
        for name, tolerations in (("brief", [brief]), ("patient", [])):
            manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                        "spec": {"nodeName": "node-0", "tolerations": tolerations,
                                 "containers": [{"name": "c", "image": "app"}]}}  # fmt: skip
            await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(manifest))
        await until(lambda: get("pod", "patient"), lambda p: ready(p) == "True", "patient Ready")
        kubelet.kill9()
        silent = await until(node, lambda n: ready(n) == "Unknown", "the node NotReady", 30)
        condition = next(c for c in silent["status"]["conditions"] if c["type"] == "Ready")
        assert condition["reason"] == "NodeStatusUnknown"
        assert condition["message"] == "Kubelet stopped posting node status."
        held = await until(node, lambda n: unreachable(n) == ["NoExecute", "NoSchedule"],
                           "the unreachable taints", 30)  # fmt: skip
        assert next(t for t in held["spec"]["taints"] if t["effect"] == "NoExecute")["timeAdded"]
        await until(lambda: get("pod", "brief"), lambda p: p == {}, "brief evicted", 30)
        # The pod it keeps is marked not ready meanwhile (MarkPodsNotReady), with a Warning.
        patient = await until(lambda: get("pod", "patient"), lambda p: ready(p) == "False",
                              "patient marked not ready", 30)  # fmt: skip
        assert patient["spec"]["nodeName"] == "node-0"
        warned = await get("events", "--field-selector", "involvedObject.name=patient")
        assert ("Warning", "NodeNotReady", "Node is not ready") in [
            (e["type"], e["reason"], e["message"]) for e in warned["items"]
        ]
        evicted = await get("events", "--field-selector", "reason=TaintManagerEviction")
        assert [e["message"] for e in evicted["items"]] == [
            "Marking for deletion Pod default/brief"
        ]
        # Written as kube's node controller (the log says who asked for each change).
        controller = ("PodDeleted", "NodeConditionChanged", "PodReadinessChanged")
        written = [e for e in await read_log(settings, PODS, NODES) if e.type in controller]
        assert {(e.type, e.user.username if e.user else None) for e in written} == {
            ("PodDeleted", "system:serviceaccount:kube-system:node-controller"),
            ("NodeConditionChanged", "system:serviceaccount:kube-system:node-controller"),
            ("PodReadinessChanged", "system:serviceaccount:kube-system:node-controller"),
        }
        listed = await kubectl(apiserver, "get", "nodes", "--no-headers")
        assert listed.stdout.split()[:2] == ["node-0", "NotReady"]
        events = await get(
            "events", "-n", "default", "--field-selector", "involvedObject.kind=Node"
        )
        assert "NodeNotReady" in [e["reason"] for e in events["items"]]

        # Nothing new lands on it meanwhile: the NoSchedule taint is not tolerated.
        await kubectl(apiserver, "run", "web", "--image", "app", "--restart", "Never")
        pending = await until(
            lambda: get("pod", "web"),
            lambda p: f"untolerated taint {{{UNREACHABLE}: }}" in str(p.get("status")),
            "web unschedulable on the tainted node",
            30,
        )
        assert pending["status"]["phase"] == "Pending"
        assert pending["status"]["conditions"][0]["message"].startswith("0/1 nodes are available")

        kubelet.start()  # a kubelet serves the node again: its heartbeat is back
        await kubelet.ready()
        back = await until(node, lambda n: ready(n) == "True" and not unreachable(n),
                           "the node Ready and untainted", 30)  # fmt: skip
        assert "taints" not in back["spec"]
        await until(lambda: get("pod", "web"), lambda p: p["status"]["phase"] == "Running",
                    "web running on node-0", 60)  # fmt: skip
        events = await get("events", "-n", "default", "--field-selector", "reason=NodeReady")
        assert [e["involvedObject"]["name"] for e in events["items"]] == ["node-0"]
        # The kubelet serving it again sets its pod Ready again.
        await until(lambda: get("pod", "patient"), lambda p: ready(p) == "True",
                    "patient Ready again", 30)  # fmt: skip
    finally:
        for role in (kubelet, scheduler, apiserver):
            role.stop()
