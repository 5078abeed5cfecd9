"""The resize Events' messages, byte for byte as the 1.35 kubelet writes them."""

from __future__ import annotations

from schemas.k8s import Pod
from services.kubelet.resizenotices import resize_message


def test_init_containers_then_containers_then_the_generation_and_the_error() -> None:
    pod = Pod.model_validate(
        {
            "metadata": {"name": "web"},
            "spec": {
                "initContainers": [{"name": "log", "image": "x", "restartPolicy": "Always"}],
                "containers": [
                    {
                        "name": "app",
                        "image": "x",
                        "resources": {"requests": {"memory": "1Gi", "cpu": "300m"}},
                    }
                ],
            },
        }
    )
    assert resize_message("Pod resize Deferred", pod, 3, "Node didn't have enough <cpu>") == (
        'Pod resize Deferred: {"initContainers":[{"name":"log","resources":{}}],'
        '"containers":[{"name":"app","resources":{"requests":{"cpu":"300m","memory":"1Gi"}}}],'
        '"generation":3,"error":"Node didn\'t have enough \\u003ccpu\\u003e"}'
    )
