"""A throwaway local cluster for benchmarks: Kafka, PostgreSQL and every role, as `inplace up`
starts them, in a temporary directory on free ports, stopped and removed afterwards.

    with throwaway_cluster(secure=True) as (cluster, settings, credentials):
        ...  # cluster.api_url, settings.kafka_bootstrap, credentials for the API (or None)
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from inplace.cli.localcluster import LocalCluster
from inplace.core.security.kubeconfig import Endpoint, load
from inplace.core.settings import Settings
from inplace.load.runner import LoadConfig, LoadRun
from inplace.localinfra import free_port


@contextmanager
def throwaway_cluster(
    *, secure: bool = True, keep: bool = False, prefix: str = "inplace-bench-"
) -> Iterator[tuple[LocalCluster, Settings, Endpoint | None]]:
    """Start a cluster; yield it, the settings that reach its log and database, and the
    admin's credentials (TLS + client certificate, as a user of `inplace up` has them; None
    with `secure=False`, plain HTTP). Stops everything on the way out."""
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    home.chmod(0o755)  # the postgres OS user must reach its data directory
    cluster = LocalCluster(
        home, kafka_port=free_port(), postgres_port=free_port(), say=print, secure=secure
    )
    try:
        cluster.start()
        settings = Settings(
            kafka_bootstrap=cluster.broker.bootstrap_servers,
            postgres_dsn=cluster.database.dsn("inplace"),
        )
        credentials = load(cluster.credentials.admin_kubeconfig) if cluster.secure else None
        yield cluster, settings, credentials
    finally:
        cluster.stop()
        if keep:
            print(f"cluster directory kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)


def resize_load(
    cluster: LocalCluster, settings: Settings, *, nodes: int, pods: int, resizes: int
) -> int:
    """`inplace load` on a plain-HTTP throwaway cluster, unpaced, through the API: the log
    then holds real resize records. Returns how many resizes were injected."""
    config = LoadConfig(
        settings=settings,
        api=cluster.api_url,
        credentials=None,
        mode="api",
        nodes=nodes,
        pods=pods,
        resizes=resizes,
        rate=None,
        duration=600.0,
        seed=0,
        concurrency=64,
        out=Path(tempfile.gettempdir()) / "inplace-bench",
    )
    injected: int = asyncio.run(LoadRun(config).run()).report["counts"]["injected"]
    return injected
