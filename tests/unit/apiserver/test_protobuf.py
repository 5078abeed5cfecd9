"""The protobuf Namespace `kubectl create namespace` sends, read as its JSON."""

from __future__ import annotations

import pytest

from services.apiserver.protobuf import ProtobufError, namespace
from tests.factories import protobuf_field as field

TYPE_META = field(1, b"v1") + field(2, b"Namespace")


def test_a_protobuf_namespace_with_labels_and_annotations() -> None:
    meta = (
        field(1, b"team")
        + field(11, field(1, b"env") + field(2, b"dev"))
        + field(11, field(1, b"tier") + field(2, b"web"))
        + field(12, field(1, b"note") + field(2, b"x"))
        + field(5, b"ignored-uid")  # the server's to set
    )
    body = b"k8s\x00" + field(1, TYPE_META) + field(2, field(1, meta) + field(2, b""))
    assert namespace(body) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "team",
            "labels": {"env": "dev", "tier": "web"},
            "annotations": {"note": "x"},
        },
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{}", "missing the k8s protobuf magic prefix"),
        (
            b"k8s\x00" + field(1, field(1, b"v1") + field(2, b"Pod")) + field(2, b""),
            "expected a Namespace, got Pod",
        ),
        (b"k8s\x00" + bytes([1 << 3 | 2, 50]) + b"short", "truncated field"),
    ],
)
def test_what_is_no_namespace_says_why(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message):
        namespace(body)
