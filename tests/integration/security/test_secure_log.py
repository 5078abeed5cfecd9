"""The secure profile's log and database (issue 17): a SASL-only broker with the standard
authorizer; `inplace kafka provision` gives each role a SCRAM principal and ACLs so it writes
only its own events' topics; roles run under their principal; `inplace postgres provision`
gives each role a database login, the projector the only writer."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from aiokafka.errors import KafkaError, TopicAuthorizationFailedError

from inplace.core.bus import auth
from inplace.core.bus.producer import EventProducer
from inplace.core.settings import Settings
from inplace.localinfra import KafkaBroker, PostgresCluster
from inplace.localinfra.kafka import SASL_ADMIN
from schemas import events as ev
from schemas.envelope import Envelope
from tests.conftest import started_broker
from tests.factories import node
from tests.integration.conftest import RoleProcess, inplace

ADMIN_PASSWORD = "admin-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def sasl_broker() -> Iterator[KafkaBroker]:
    """Its own broker: SASL only, deny unless an ACL allows."""
    with started_broker(
        "inplace-test-sasl-", heap="384m", sasl_admin_password=ADMIN_PASSWORD
    ) as broker:
        yield broker


def as_principal(user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
    return {
        "INPLACE_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "INPLACE_KAFKA_SASL_MECHANISM": mechanism,
        "INPLACE_KAFKA_USERNAME": user,
        "INPLACE_KAFKA_PASSWORD": password,
    }


ADMIN = as_principal(SASL_ADMIN, ADMIN_PASSWORD, "PLAIN")


@pytest.fixture
def secure(
    sasl_broker: KafkaBroker, postgres_cluster: PostgresCluster, tmp_path: Path
) -> tuple[Settings, Path]:
    """Topics made and every role provisioned by the CLI, as an operator does."""
    tag = uuid.uuid4().hex[:10]
    settings = Settings(
        kafka_bootstrap=sasl_broker.bootstrap_servers,
        postgres_dsn=postgres_cluster.dsn(f"inplace_{tag}"),
        topic_prefix=f"s{tag}.",
    )
    topics = inplace(settings, "topics", **ADMIN)
    assert topics.returncode == 0, topics.stderr
    secrets = tmp_path / "secrets"
    provisioned = inplace(settings, "kafka", "provision", "--passwords", str(secrets), **ADMIN)
    assert provisioned.returncode == 0, provisioned.stderr
    assert "User:scheduler: writes pods, k8s-events;" in provisioned.stdout
    assert (secrets / "kubelet.kafka-password").stat().st_mode & 0o777 == 0o600
    return settings, secrets


def password(secrets: Path, role: str) -> str:
    return (secrets / f"{role}.kafka-password").read_text().strip()


@pytest.fixture
def principal(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Switch this test process's Kafka principal (read once per process: clear the cache)."""

    def use(env: dict[str, str]) -> None:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        auth.kafka_auth.cache_clear()

    yield use
    auth.kafka_auth.cache_clear()


async def _publish(settings: Settings, payload: ev.EventPayload) -> None:
    async with EventProducer(settings.kafka_bootstrap, topic_prefix=settings.topic_prefix) as p:
        await p.publish(Envelope.wrap(payload, producer="test"))


async def test_each_role_writes_only_its_own_topics(
    secure: tuple[Settings, Path], principal: object, tmp_path: Path
) -> None:
    settings, secrets = secure
    use = principal  # type: ignore[assignment]

    # The hotplug role may write node events, not pod events.
    use(as_principal("hotplug", password(secrets, "hotplug")))  # type: ignore[operator]
    n = node("n1", cpu="4", memory="8Gi")
    await _publish(settings, ev.NodeRegistered(name="n1", node=n))
    with pytest.raises(TopicAuthorizationFailedError):
        await _publish(settings, ev.PodDeleted(namespace="default", name="x", uid="u"))

    # A wrong password is refused at the handshake.
    use(as_principal("hotplug", "not-the-password"))  # type: ignore[operator]
    with pytest.raises(KafkaError):
        await asyncio.wait_for(_publish(settings, ev.NodeRegistered(name="n2", node=n)), timeout=30)

    # The apiserver, as its own principal, writes pods and reads its writes back.
    apiserver = RoleProcess(
        "apiserver",
        settings,
        tmp_path / "apiserver.log",
        INPLACE_QUOTA_URL="",
        **as_principal("apiserver", password(secrets, "apiserver")),
    )
    apiserver.start()
    try:
        await apiserver.ready()
        body = {
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
        }
        async with httpx.AsyncClient(timeout=10) as http:
            base = f"{apiserver.url}/api/v1/namespaces/default/pods"
            created = await http.post(base, json=body)
            assert created.status_code == 201, created.text
            assert (await http.get(f"{base}/web")).status_code == 200
            nodes = (await http.get(f"{apiserver.url}/api/v1/nodes")).json()["items"]
            assert [x["metadata"]["name"] for x in nodes] == ["n1"]
    finally:
        apiserver.stop()


def test_a_role_without_credentials_on_a_secure_profile_stops_with_one_line(
    secure: tuple[Settings, Path], tmp_path: Path
) -> None:
    settings, _ = secure
    done = inplace(
        settings,
        "serve",
        "scheduler",
        INPLACE_KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT",
        INPLACE_KAFKA_USERNAME="scheduler",
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "inplace: error: INPLACE_KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT needs "
        "INPLACE_KAFKA_USERNAME and INPLACE_KAFKA_PASSWORD_FILE (or _PASSWORD)"
    ]


async def test_postgres_roles_the_projector_writes_the_others_read(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:10]
    settings = Settings(postgres_dsn=postgres_cluster.dsn(f"inplace_{tag}"))
    assert inplace(settings, "migrate").returncode == 0
    secrets = tmp_path / "secrets"
    done = inplace(settings, "postgres", "provision", "--passwords", str(secrets))
    assert done.returncode == 0, done.stderr
    assert "inplace_projector: writes schema projection" in done.stdout
    table = f"{settings.projection_schema}.namespaces"

    async def connect(role: str) -> asyncpg.Connection:
        return await asyncpg.connect(
            settings.postgres_dsn, user=f"inplace_{role}", passfile=secrets / f"{role}.pgpass"
        )

    writer = await connect("projector")
    try:
        await writer.execute(f"DELETE FROM {table}")
    finally:
        await writer.close()
    reader = await connect("scheduler")
    try:
        await reader.fetch(f"SELECT * FROM {table}")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await reader.execute(f"DELETE FROM {table}")
    finally:
        await reader.close()
