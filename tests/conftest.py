"""Session-wide fixtures: one real Kafka broker and one real PostgreSQL cluster per test run."""

from __future__ import annotations

import contextlib
import gc
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inplace.localinfra import KafkaBroker, PostgresCluster


def make_tmp_dir(prefix: str) -> Path:
    """A fresh directory under /tmp that the ``postgres`` OS user can traverse (mode 755).

    pytest's own ``tmp_path`` lives in ``/tmp/pytest-of-<user>/`` (mode 700), which the
    postgres user cannot enter when the tests run as root.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    return path


@contextlib.contextmanager
def started_broker(prefix: str, **options: Any) -> Iterator[KafkaBroker]:
    """A single-node KRaft broker on free ports in a fresh directory, removed afterwards."""
    root = make_tmp_dir(prefix)
    broker = KafkaBroker(root / "kafka", **options)
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A started single-node KRaft broker on free ports, stopped at session end."""
    with started_broker("inplace-test-kafka-") as broker:
        yield broker


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A started PostgreSQL cluster (fsync off) on a free port, stopped and removed at the end."""
    root = make_tmp_dir("inplace-test-pg-")
    cluster = PostgresCluster(root / "pgdata", fsync=False)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def no_automatic_collections() -> Iterator[None]:
    """Only explicit collections run while a test runs (a threshold-triggered one would move
    the objects a test watches), and the thresholds are restored after it."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.disable()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if enabled:
            gc.enable()
