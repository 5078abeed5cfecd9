"""Field selectors as kube-apiserver takes them: the fields each kind selects by, equality and
inequality, apimachinery's escapes, and a 400 for anything else."""

from __future__ import annotations

from typing import Any

import pytest

from services.apiserver.errors import ApiError
from services.apiserver.selectors import field_equals, field_matcher

EVENT: dict[str, Any] = {
    "metadata": {"name": "web-0.1", "namespace": "default"},
    "involvedObject": {
        "kind": "Pod",
        "namespace": "default",
        "name": "web-0",
        "uid": "2e9aa321-fe1c-445b-94ce-3541dc3e7a5d",
        "apiVersion": "v1",
        "fieldPath": "spec.containers{app}",
    },
    "reason": "ResizeCompleted",
    "source": {"component": "kubelet"},
    "reportingComponent": "kubelet",
    "type": "Normal",
}
POD: dict[str, Any] = {
    "metadata": {"name": "web-0", "namespace": "default"},
    "spec": {"nodeName": "node-0", "restartPolicy": "Always", "schedulerName": "default-scheduler"},
    "status": {"phase": "Running", "podIP": "fd00::1"},
}
CORDONED: dict[str, Any] = {"metadata": {"name": "n"}, "spec": {"unschedulable": True}}
ACTIVE: dict[str, Any] = {"metadata": {"name": "a"}, "status": {"phase": "Active"}}


@pytest.mark.parametrize(
    ("kind", "obj", "selector", "kept"),
    [
        # What `kubectl describe pod` sends for the pod's Events.
        (
            "Event",
            EVENT,
            "involvedObject.name=web-0,involvedObject.namespace=default,"
            "involvedObject.uid=2e9aa321-fe1c-445b-94ce-3541dc3e7a5d",
            True,
        ),
        ("Event", EVENT, "involvedObject.uid=another", False),
        ("Event", EVENT, "involvedObject.kind==Pod,type=Normal,reason=ResizeCompleted", True),
        ("Event", EVENT, "source=kubelet,reportingComponent=kubelet", True),
        ("Event", EVENT, "type!=Warning", True),
        ("Event", EVENT, "involvedObject.fieldPath=spec.containers{app}", True),
        ("Event", EVENT, "involvedObject.resourceVersion=", True),  # absent: ""
        ("Event", EVENT, "involvedObject.apiVersion=apps/v1", False),
        ("Pod", POD, "spec.nodeName=node-0,status.phase=Running", True),
        ("Pod", POD, "status.podIP=fd00::1", True),
        ("Pod", POD, "spec.hostNetwork=false", True),  # absent: Go's false
        ("Pod", POD, "spec.nodeName=", False),  # the unscheduled ones
        ("Pod", POD, "metadata.namespace!=default", False),
        ("Node", CORDONED, "spec.unschedulable=true", True),
        ("Namespace", ACTIVE, "status.phase=Active", True),
        ("ResourceQuota", {"metadata": {"name": "q", "namespace": "a"}}, "metadata.name=q", True),
        # Escaped commas and equals signs belong to the value.
        ("Event", {**EVENT, "reason": "a,b=c"}, r"reason=a\,b\=c", True),
        ("Event", {**EVENT, "reason": "a\\b"}, r"reason=a\\b,type=Normal", True),
    ],
)  # fmt: skip
def test_field_selectors(kind: str, obj: dict[str, Any], selector: str, kept: bool) -> None:
    assert field_matcher(selector, kind)(obj) is kept


@pytest.mark.parametrize(
    ("kind", "selector", "message"),
    [
        ("Pod", "involvedObject.name=web-0", "field label not supported: involvedObject.name"),
        ("Event", "spec.nodeName=n", "field label not supported: spec.nodeName"),
        ("ResourceQuota", "status.phase=x", "field label not supported: status.phase"),
        ("Pod", "spec.nodeName", "invalid field selector: 'spec.nodeName'"),
        ("Pod", "status.phase=Running\\", "a trailing backslash"),
    ],
)
def test_bad_field_selectors_are_400(kind: str, selector: str, message: str) -> None:
    with pytest.raises(ApiError) as refused:
        field_matcher(selector, kind)
    assert refused.value.status.code == 400
    assert message in (refused.value.status.message or "")


@pytest.mark.parametrize(
    ("selector", "value"),
    [
        ("involvedObject.name=web-0,involvedObject.namespace=default", "web-0"),
        ("involvedObject.namespace=default,involvedObject.name==web-0", "web-0"),
        (r"involvedObject.name=a\,b", "a,b"),
        ("involvedObject.name=", ""),
        ("involvedObject.name!=web-0", None),  # not an equality: no index narrows it
        ("involvedObject.uid=u", None),
        ("", None),
        (None, None),
    ],
)
def test_the_value_an_equality_term_requires(selector: str | None, value: str | None) -> None:
    assert field_equals(selector, "involvedObject.name") == value
