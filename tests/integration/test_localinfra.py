"""The local Kafka broker and PostgreSQL cluster, against the real servers (no mocks)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

import inplace.localinfra.postgres as pg_module
from inplace.localinfra import (
    KafkaBroker,
    LocalInfraError,
    PostgresCluster,
    ensure_kafka_jars,
    find_pg_bin,
    free_port,
)
from inplace.localinfra.ports import pid_cmdline
from tests.conftest import make_tmp_dir

QUICK_JIT = "-XX:TieredStopAtLevel=1"

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tmp_dir() -> Iterator[Path]:
    """Like tmp_path, but reachable by the postgres OS user and removed afterwards."""
    path = make_tmp_dir("inplace-test-localinfra-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _topic() -> str:
    return f"localinfra-{uuid.uuid4().hex[:10]}"


async def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()


async def _list_topics(bootstrap: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return await admin.list_topics()
    finally:
        await admin.close()


async def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(topic, value, key=b"k")
    finally:
        await producer.stop()


async def _consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
    )
    await consumer.start()
    try:
        values: list[bytes] = []
        while len(values) < count:
            msg = await asyncio.wait_for(consumer.getone(), timeout=30)
            assert msg.value is not None
            values.append(msg.value)
        return values
    finally:
        await consumer.stop()


def _assert_one_line(exc: LocalInfraError) -> str:
    message = str(exc)
    assert "\n" not in message
    assert "Traceback" not in message
    return message


# -- Kafka ---------------------------------------------------------------------------------


async def test_kafka_produce_and_consume(kafka_broker: KafkaBroker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    assert bootstrap == f"127.0.0.1:{kafka_broker.port}"
    topic = _topic()
    await _create_topic(bootstrap, topic)
    await _produce(bootstrap, topic, [b"hello", b"world"])
    assert await _consume(bootstrap, topic, 2) == [b"hello", b"world"]


async def test_kafka_does_not_auto_create_topics(kafka_broker: KafkaBroker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    missing = _topic()
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics([missing])
        assert described[0]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    finally:
        await admin.close()
    assert missing not in await _list_topics(bootstrap)


def test_kafka_start_again_is_a_noop(kafka_broker: KafkaBroker) -> None:
    pid, port = kafka_broker.pid, kafka_broker.port
    assert pid is not None and kafka_broker.is_running()
    # A test run's broker starts quick (C1 only); `inplace up`'s compiles fully (its test).
    assert QUICK_JIT in pid_cmdline(pid)
    kafka_broker.start()
    assert (kafka_broker.pid, kafka_broker.port) == (pid, port)
    # A second handle on the same data dir sees the same running broker.
    other = KafkaBroker(kafka_broker.data_dir)
    assert other.is_running()
    assert other.bootstrap_servers == kafka_broker.bootstrap_servers
    other.start()
    assert other.pid == pid
    # Asking for some other port does not matter while it runs: the running broker's wins.
    third = KafkaBroker(kafka_broker.data_dir, port=free_port())
    assert third.bootstrap_servers == kafka_broker.bootstrap_servers
    third.start()
    assert (third.pid, third.port) == (pid, port)


async def test_kafka_restart_keeps_topics_and_data(tmp_dir: Path) -> None:
    broker = KafkaBroker(tmp_dir / "kafka")
    try:
        # Called from inside a running event loop on purpose: start() must cope with that.
        broker.start()
        port, first_pid = broker.port, broker.pid
        topic = _topic()
        await _create_topic(broker.bootstrap_servers, topic)
        await _produce(broker.bootstrap_servers, topic, [b"before-restart"])

        # Stop it from another Python process, through the pid file only.
        code = (
            "from pathlib import Path; from inplace.localinfra import KafkaBroker; "
            f"b = KafkaBroker(Path({str(broker.data_dir)!r})); assert b.is_running(); b.stop(); "
            "assert not b.is_running()"
        )
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, cwd=REPO)
        assert await asyncio.wait_for(proc.wait(), timeout=120) == 0
        assert not broker.is_running()
        assert broker.pid is None
        broker.stop()  # idempotent

        await asyncio.to_thread(broker.start)
        assert broker.port == port  # remembered in ports.json
        assert broker.pid != first_pid
        assert topic in await _list_topics(broker.bootstrap_servers)
        assert await _consume(broker.bootstrap_servers, topic, 1) == [b"before-restart"]
    finally:
        broker.stop()
    assert not broker.is_running()


def test_kafka_port_in_use_is_a_clear_error(tmp_dir: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        busy = blocker.getsockname()[1]
        broker = KafkaBroker(tmp_dir / "kafka", port=busy)
        with pytest.raises(LocalInfraError) as info:
            broker.start(timeout=30)
    message = _assert_one_line(info.value)
    assert f"127.0.0.1:{busy} is in use" in message
    assert not broker.is_running()


def test_kafka_broker_exit_reports_log_tail(tmp_dir: Path) -> None:
    # The client listener is overridden to a port somebody else holds: the JVM starts, cannot
    # bind it, and exits. start() must notice at once and report the end of broker.log.
    controller_port = free_port()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        busy = blocker.getsockname()[1]
        listeners = f"PLAINTEXT://127.0.0.1:{busy},CONTROLLER://127.0.0.1:{controller_port}"
        broker = KafkaBroker(
            tmp_dir / "kafka",
            controller_port=controller_port,
            extra_properties={"listeners": listeners},
        )
        with pytest.raises(LocalInfraError) as info:
            broker.start(timeout=60)
    lines = str(info.value).splitlines()
    assert lines[0].startswith("Kafka broker exited with code")
    assert f"failed to bind to 127.0.0.1:{busy}" in lines[0]
    assert any("last lines of" in line for line in lines)
    assert not any(line.lstrip().startswith("at ") for line in lines)  # no Java stack frames
    assert not broker.is_running()
    assert broker.pid is None


def test_java_missing_is_a_clear_error(tmp_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(LocalInfraError) as info:
        KafkaBroker(tmp_dir / "kafka").start()
    assert _assert_one_line(info.value) == (
        "java not found: install a JDK 17 (apt-get install openjdk-17-jre-headless)"
    )


def test_mvn_missing_is_a_clear_error(tmp_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = shutil.which("java")
    assert java is not None
    bin_dir = tmp_dir / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").symlink_to(java)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(LocalInfraError) as info:
        ensure_kafka_jars(cache_dir=tmp_dir / "cache")
    message = _assert_one_line(info.value)
    assert message.startswith("mvn not found")
    assert not (tmp_dir / "cache" / "kafka-3.9.1").exists()


def test_an_unusable_cache_directory_is_a_clear_error(tmp_dir: Path) -> None:
    home = tmp_dir / "home"
    home.mkdir()
    (home / ".cache").symlink_to(tmp_dir / "nowhere")  # a dangling ~/.cache
    with pytest.raises(LocalInfraError) as info:
        ensure_kafka_jars(cache_dir=home / ".cache" / "inplace")
    message = _assert_one_line(info.value)
    assert message.startswith(f"cannot use {home}/.cache/inplace for Kafka's jars: File exists")
    assert message.endswith("(set INPLACE_CACHE_DIR to a directory you can write)")


def test_ensure_kafka_jars_is_cached(kafka_broker: KafkaBroker) -> None:
    jars = ensure_kafka_jars()  # the session broker already made sure they are there
    assert (jars / ".complete").is_file()
    assert (jars / "kafka_2.13-3.9.1.jar").is_file()
    assert ensure_kafka_jars() == jars


# -- PostgreSQL ----------------------------------------------------------------------------


async def test_postgres_round_trip(postgres_cluster: PostgresCluster) -> None:
    dsn = postgres_cluster.dsn()
    assert dsn == f"postgresql://postgres@127.0.0.1:{postgres_cluster.port}/postgres"
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE localinfra_rt (id int PRIMARY KEY, body text)")
        await conn.execute("INSERT INTO localinfra_rt VALUES ($1, $2)", 1, "héllo")
        assert await conn.fetchval("SELECT body FROM localinfra_rt WHERE id = 1") == "héllo"
        assert await conn.fetchval("SHOW fsync") == "off"
        assert await conn.fetchval("SHOW server_encoding") == "UTF8"
        assert int(await conn.fetchval("SHOW max_connections")) == 200
    finally:
        await conn.close()


async def test_postgres_create_database_is_idempotent(
    postgres_cluster: PostgresCluster,
) -> None:
    await asyncio.to_thread(postgres_cluster.create_database, "localinfra_db")
    # Called from inside a running event loop on purpose.
    postgres_cluster.create_database("localinfra_db")
    conn = await asyncpg.connect(postgres_cluster.dsn("localinfra_db"))
    try:
        assert await conn.fetchval("SELECT current_database()") == "localinfra_db"
    finally:
        await conn.close()


def test_postgres_start_again_is_a_noop(postgres_cluster: PostgresCluster) -> None:
    pid, port = postgres_cluster.pid, postgres_cluster.port
    assert pid is not None and postgres_cluster.is_running()
    postgres_cluster.start()
    assert (postgres_cluster.pid, postgres_cluster.port) == (pid, port)
    other = PostgresCluster(postgres_cluster.data_dir)
    assert other.is_running()
    assert other.dsn() == postgres_cluster.dsn()
    third = PostgresCluster(postgres_cluster.data_dir, port=free_port())
    assert third.dsn() == postgres_cluster.dsn()
    third.start()
    assert (third.pid, third.port) == (pid, port)


async def test_postgres_restart_keeps_data(tmp_dir: Path) -> None:
    cluster = PostgresCluster(tmp_dir / "pgdata", fsync=False)
    try:
        cluster.start()
        port = cluster.port
        conn = await asyncpg.connect(cluster.dsn())
        try:
            await conn.execute("CREATE TABLE kept (v text)")
            await conn.execute("INSERT INTO kept VALUES ('survives')")
        finally:
            await conn.close()

        cluster.stop()
        assert not cluster.is_running()
        cluster.stop()  # idempotent
        with pytest.raises(LocalInfraError) as info:
            cluster.create_database("nobody_listens")
        assert _assert_one_line(info.value).startswith("could not create database")

        again = PostgresCluster(tmp_dir / "pgdata", fsync=False)  # fresh handle, same dir
        await asyncio.to_thread(again.start)
        assert again.port == port  # remembered next to the data dir
        conn = await asyncpg.connect(again.dsn())
        try:
            assert await conn.fetchval("SELECT v FROM kept") == "survives"
        finally:
            await conn.close()
    finally:
        cluster.stop()
    assert not cluster.is_running()


def test_postgres_port_in_use_is_a_clear_error(tmp_dir: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        busy = blocker.getsockname()[1]
        cluster = PostgresCluster(tmp_dir / "pgdata", port=busy, fsync=False)
        with pytest.raises(LocalInfraError) as info:
            cluster.start()
    assert f"127.0.0.1:{busy} is in use" in _assert_one_line(info.value)
    assert not cluster.is_running()


def test_postgres_binaries_missing_is_a_clear_error(
    tmp_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_dir))
    monkeypatch.setattr(pg_module, "PG_LIB_ROOT", tmp_dir / "no-postgresql-here")
    with pytest.raises(LocalInfraError) as info:
        find_pg_bin("initdb")
    message = _assert_one_line(info.value)
    assert message.startswith("initdb not found")
    assert "apt-get install -y postgresql" in message
    with pytest.raises(LocalInfraError) as info:
        PostgresCluster(tmp_dir / "pgdata").start()
    assert _assert_one_line(info.value).startswith("initdb not found")
    assert not (tmp_dir / "pgdata").exists()


def test_find_pg_bin_falls_back_to_usr_lib(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if not installed:
        pytest.skip("no /usr/lib/postgresql/*/bin here")
    monkeypatch.setenv("PATH", os.devnull)
    assert find_pg_bin("pg_ctl").parent.parent.parent == Path("/usr/lib/postgresql")
