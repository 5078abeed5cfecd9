"""The secure profile's table of who may do what on the log, and how a process reads its
Kafka credentials."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from inplace.core.bus.access import ROLE_WRITES, Grant, grants
from inplace.core.bus.auth import KafkaAuth
from schemas import events as ev


def writes(role: str, prefix: str = "") -> set[str]:
    return {g.name for g in grants(role, prefix) if g.operation == "WRITE"}


@pytest.mark.parametrize("role", sorted(ROLE_WRITES))
def test_a_role_writes_exactly_its_own_topics_and_reads_them_all(role: str) -> None:
    assert writes(role, "t.") - {f"t.{ev.DEAD_LETTER}"} == {f"t.{t}" for t in ROLE_WRITES[role]}
    reads = {g.name for g in grants(role, "t.") if g.operation == "READ"}
    assert {f"t.{t}" for t in ev.EVENT_TOPICS} <= reads
    assert Grant(f"User:{role}", "GROUP", f"t.{role}", "READ", prefixed=True) in grants(role, "t.")


def test_the_table_matches_the_events_each_role_writes() -> None:
    # Each event type belongs to one topic; the roles that write it must be allowed to.
    assert writes("scheduler") == {ev.PodBound.TOPIC, ev.KubeEventRecorded.TOPIC, ev.DEAD_LETTER}
    assert ev.NodeCapacityChanged.TOPIC in writes("hotplug")
    assert ev.ResourceQuotaUsageChanged.TOPIC in writes("quota")
    assert writes("reader") == set()


def test_unknown_role() -> None:
    with pytest.raises(ValueError, match="unknown role 'etcd'"):
        grants("etcd")


def test_kafka_auth_plaintext_by_default_and_sasl_needs_credentials(tmp_path: Path) -> None:
    assert KafkaAuth().aiokafka() == {}
    with pytest.raises(ValidationError, match="needs INPLACE_KAFKA_USERNAME"):
        KafkaAuth(security_protocol="SASL_PLAINTEXT", username="kubelet")
    secret = tmp_path / "kubelet.kafka-password"
    secret.write_text("s3cret\n")
    auth = KafkaAuth(security_protocol="SASL_PLAINTEXT", username="kubelet", password_file=secret)
    assert auth.aiokafka() == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "kubelet",
        "sasl_plain_password": "s3cret",
    }
    with pytest.raises(ValidationError, match="INPLACE_KAFKA_PASSWORD_FILE"):
        KafkaAuth(password_file=tmp_path / "missing")
