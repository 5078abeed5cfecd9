"""The reusable vertical-update module, row by row (no broker)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from schemas.k8s import Pod
from schemas.workload import PodTemplateSpec
from services.workload.verticalupdate import (
    calculate_spec,
    can_vertical_update,
    check_pod_update_completed,
    needs_resize,
    resize_failure,
    resize_patch,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def template(cpu: str = "100m", *, image: str = "nginx:1.27", **container: Any) -> PodTemplateSpec:
    return PodTemplateSpec.model_validate(
        {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": image,
                        "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}},
                        **container,
                    }
                ]
            },
        }
    )


RESTART = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]


@pytest.mark.parametrize(
    ("name", "old", "new", "vertical"),
    [
        ("same template", template(), template(), True),
        ("cpu only", template("100m"), template("200m"), True),
        ("resizePolicy too", template("100m"), template("200m", resizePolicy=RESTART), True),
        ("image", template(), template(image="nginx:1.28"), False),
        ("image and cpu", template("100m"), template("200m", image="nginx:1.28"), False),
        ("env", template(), template(env=[{"name": "A", "value": "1"}]), False),
        (
            "labels",
            template(),
            PodTemplateSpec.model_validate(
                {**template().to_k8s(), "metadata": {"labels": {"app": "x"}}}
            ),
            False,
        ),
    ],
)
def test_can_vertical_update(
    name: str, old: PodTemplateSpec, new: PodTemplateSpec, vertical: bool
) -> None:
    assert can_vertical_update(old, new) is vertical, name


def test_calculate_spec_and_patch() -> None:
    spec = calculate_spec(template("100m"), template("200m", resizePolicy=RESTART), "web-2")
    assert spec is not None and spec.revision == "web-2"
    assert resize_patch(spec) == {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}},
                    "resizePolicy": RESTART,
                }
            ]
        }
    }


def pod(spec_cpu: str, actual_cpu: str | None, resize: str | None = None, **status: Any) -> Pod:
    statuses = []
    if actual_cpu is not None:
        statuses = [
            {
                "name": "app",
                "resources": {"requests": {"cpu": actual_cpu}, "limits": {"cpu": actual_cpu}},
            }
        ]
    return Pod.model_validate(
        {
            "metadata": {"name": "web-a"},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "nginx:1.27",
                        "resources": {"requests": {"cpu": spec_cpu}, "limits": {"cpu": spec_cpu}},
                    }
                ]
            },
            "status": {"containerStatuses": statuses, "resize": resize, **status},
        }
    )


TARGET = calculate_spec(template("100m"), template("200m"), "web-2")


@pytest.mark.parametrize(
    ("name", "the_pod", "resize", "completed"),
    [
        ("not asked yet", pod("100m", "100m"), True, False),
        ("asked, same value other spelling", pod("0.2", "100m", "Proposed"), False, False),
        ("in progress", pod("200m", "100m", "InProgress"), False, False),
        ("cleared but not read back", pod("200m", "100m"), False, False),
        ("actuated", pod("200m", "200m"), False, True),
        ("actuated, other spelling", pod("200m", "0.2"), False, True),
        ("no container status", pod("200m", None), False, False),
    ],
)
def test_resize_needed_and_completed(
    name: str, the_pod: Pod, resize: bool, completed: bool
) -> None:
    assert TARGET is not None
    assert needs_resize(the_pod, TARGET) is resize, name
    assert (check_pod_update_completed(the_pod, TARGET) is None) is completed, name


def pending(resize: str, since: datetime) -> Pod:
    condition = {
        "type": "PodResizePending",
        "status": "True",
        "reason": resize,
        "message": "Node didn't have enough capacity",
        "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return pod("200m", "100m", resize, conditions=[condition])


@pytest.mark.parametrize(
    ("name", "the_pod", "reason"),
    [
        ("infeasible at once", pending("Infeasible", NOW), "Infeasible"),
        ("deferred briefly", pending("Deferred", NOW - timedelta(seconds=5)), None),
        ("deferred too long", pending("Deferred", NOW - timedelta(seconds=61)), "DeferredTimeout"),
        ("in progress", pod("200m", "100m", "InProgress"), None),
    ],
)
def test_resize_failure(name: str, the_pod: Pod, reason: str | None) -> None:
    failure = resize_failure(the_pod, now=NOW, deferred_timeout=timedelta(seconds=60))
    assert (failure.reason if failure else None) == reason, name
