"""Answers with one object: the same JSON whichever way it is written."""

from __future__ import annotations

import json

from schemas.k8s import Pod
from services.apiserver.http import ok, ok_model
from tests import factories


def test_a_typed_object_is_written_as_its_kubernetes_json() -> None:
    pod: Pod = factories.pod("default", "web")
    pod.metadata.labels = {"app": "wéb"}  # written as UTF-8, as JSONResponse writes it
    pod.metadata.annotations = {"note": 'a "quote" and a \\\\ backslash'}
    fast, slow = ok_model(pod, 201), ok(pod.to_k8s(), 201)
    assert fast.status_code == slow.status_code == 201
    assert fast.headers["content-type"] == slow.headers["content-type"]
    assert json.loads(fast.body) == json.loads(slow.body) == pod.to_k8s()
    assert fast.body == slow.body
