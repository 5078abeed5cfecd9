"""Which running containers restart for a changed image (services/kubelet/imagechange.py)."""

from __future__ import annotations

from schemas.k8s import ContainerStatus, Pod
from services.kubelet.imagechange import ImageChange, changed_images, notices
from tests import factories


def _running(image_in_status: str) -> Pod:
    pod = factories.pod("default", "web")
    pod.status.phase = "Running"
    pod.status.container_statuses = [
        ContainerStatus(name="app", ready=True, restart_count=0, image=image_in_status)
    ]
    return pod


def test_a_spec_image_the_status_does_not_report_restarts_the_container() -> None:
    pod = _running("nginx:1.26")
    assert changed_images(pod) == [ImageChange("app", "nginx:1.27")]
    assert changed_images(_running("nginx:1.27")) == []


def test_a_pod_not_running_restarts_nothing() -> None:
    pod = _running("nginx:1.26")
    pod.status.phase = "Pending"
    assert changed_images(pod) == []


def test_the_events_a_kubelet_records_for_it() -> None:
    assert [r for r, _ in notices(ImageChange("app", "nginx:1.28"))] == [
        "Killing",
        "Pulled",
        "Created",
        "Started",
    ]
