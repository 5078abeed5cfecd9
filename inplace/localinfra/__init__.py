"""Real local infrastructure for development and tests: a Kafka broker and a PostgreSQL cluster.

No Docker: the Kafka jars come from Maven Central (cached in ``~/.cache/inplace``) and run on the
local JDK; PostgreSQL runs from the distribution's ``initdb`` / ``pg_ctl``.
"""

from inplace.localinfra.kafka import (
    KAFKA_VERSION,
    KafkaBroker,
    default_cache_dir,
    ensure_kafka_jars,
    find_java,
)
from inplace.localinfra.ports import LocalInfraError, free_port
from inplace.localinfra.postgres import PostgresCluster, find_pg_bin

__all__ = [
    "KAFKA_VERSION",
    "KafkaBroker",
    "LocalInfraError",
    "PostgresCluster",
    "default_cache_dir",
    "ensure_kafka_jars",
    "find_java",
    "find_pg_bin",
    "free_port",
]
