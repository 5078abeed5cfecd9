"""The apiserver role: a Kubernetes-shaped REST API in front of the log (issue 4).

Writes become events; reads come from a read model folded from the log; the quota service is
called synchronously as an admission webhook.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from datetime import timedelta
from pathlib import Path

from starlette.routing import Mount

from inplace.core.bus.leases import PartitionLeases
from inplace.core.bus.producer import EventProducer
from inplace.core.logwriter import LogWriter
from inplace.core.readmodel import ReadModel
from inplace.core.security.authn import Authenticator
from inplace.core.security.tls import existing_credentials
from inplace.core.service import RoleServer
from inplace.core.settings import Settings
from schemas import events as ev
from services.apiserver import disruptionsync, eventttl, namespaces, nodelifecycle
from services.apiserver.admission import AdmissionClient
from services.apiserver.app import build_app
from services.apiserver.auth.audit import AuditLog
from services.apiserver.auth.authorizer import Authorizer
from services.apiserver.auth.gate import AuthGate
from services.apiserver.auth.rbac import Policy
from services.apiserver.auth.reviews import review_routes
from services.apiserver.config import ApiserverConfig
from services.apiserver.controllers import Controllers
from services.apiserver.limits import LimitRequests
from services.apiserver.metricsapi import metrics_routes
from services.apiserver.nodeleases import lease_routes
from services.apiserver.objects import ObjectHandlers
from services.apiserver.pods import PodHandlers
from services.apiserver.readiness import ReadinessGate
from services.apiserver.usage import UsageFollower
from services.apiserver.workloads import CloneSetHandlers
from services.apiserver.writer import Writer

ROLE = "apiserver"
CONTROLLERS_STOP_S = 30.0  # a revocation waits this long for a pass in hand
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
log = logging.getLogger(__name__)


async def run(settings: Settings, *, host: str, port: int) -> None:
    config = ApiserverConfig()
    policy = Policy.load(Path(config.policy_file) if config.policy_file else None)
    model = ReadModel(settings, role=ROLE, snapshot=config.start_from_projection)
    producer = EventProducer(
        settings.kafka_bootstrap, client_id=ROLE, topic_prefix=settings.topic_prefix
    )
    await producer.start()
    writer = Writer(LogWriter(producer, model, ROLE))
    pki = settings.credentials_dir()
    credentials = existing_credentials(pki, ROLE) if pki else None
    admission = AdmissionClient(
        config.quota_url,
        applies=lambda ns: _has_policy(model, ns),
        progress=lambda: model.progress(settings.topic(ev.POLICY)),
        # The webhook knows us by our client certificate (system:apiserver).
        tls=credentials.client_context("apiserver") if credentials else True,
    )
    authorizer = Authorizer(policy, lambda ns, name: _pod_node(model, ns, name))
    samples = UsageFollower(settings)  # the metrics API's source
    app = build_app(
        PodHandlers(model, writer, admission),
        ObjectHandlers(model, writer),
        f"{host}:{port}",
        CloneSetHandlers(model, writer),
        [
            *review_routes(authorizer),
            *metrics_routes(model, samples),
            *lease_routes(model, samples),
        ],
    )
    ready = asyncio.Event()
    audit = AuditLog(config.audit_log) if config.audit_log else None
    # No credentials directory: the explicit plain-HTTP mode (RoleServer refuses any other).
    authenticator = Authenticator(credentials.read_tokens()) if credentials else None
    # The limits sit inside the gate (as kube-apiserver's max-in-flight filter sits inside
    # authentication and audit): a 413 or 429 is audited, with the user it refused.
    limited = LimitRequests(ReadinessGate(app, ready.is_set), config.limits())
    gate = AuthGate(limited, authenticator, authorizer, audit)

    async def bootstrap() -> None:
        await model.ready.wait()
        for name in DEFAULT_NAMESPACES:
            if model.get("namespaces", name) is None:
                await writer.commit(ev.NamespaceCreated(namespace=name))
        ready.set()
        await asyncio.Event().wait()  # keep the loop alive; RoleServer cancels it on stop

    server = RoleServer(
        ROLE,
        settings,
        host=host,
        port=port,
        routes=[Mount("", app=gate)],
        ready=ready.is_set,
    )

    async def finish_namespaces() -> None:
        await ready.wait()
        await namespaces.sweep_forever(model, writer, config.namespace_sweep_s)

    tasks = {"read-model": model.run, "bootstrap": bootstrap, "usage": samples.run}
    # kube-controller-manager's loops, run by one replica at a time (controllers.py).
    loops = {"namespaces": finish_namespaces}
    if config.event_ttl_s > 0:

        async def expire_events() -> None:
            await ready.wait()
            await eventttl.sweep_forever(
                lambda cutoff: model.objects("events").written_before(cutoff),  # EventStore
                writer.commit_all,
                timedelta(seconds=config.event_ttl_s),
                config.event_sweep_s,
            )

        loops["event-ttl"] = expire_events
    if config.node_monitor_period_s > 0:

        async def monitor_nodes() -> None:
            await ready.wait()
            await nodelifecycle.monitor_forever(
                model,
                writer,
                samples.heard,
                timedelta(seconds=config.node_monitor_grace_s),
                config.node_monitor_period_s,
            )

        loops["node-lifecycle"] = monitor_nodes
    if config.disruption_sync_s > 0:

        async def sync_budgets() -> None:
            await ready.wait()
            await disruptionsync.sync_forever(model, writer, config.disruption_sync_s)

        loops["disruption"] = sync_budgets
    controllers = Controllers(loops)
    leases = PartitionLeases(
        settings.kafka_bootstrap,
        role=ROLE,
        topic=settings.topic(ev.NODES),
        group=f"{settings.topic_prefix}{ROLE}-controllers",
        on_assigned=controllers.assigned,
        on_revoked=controllers.revoked,
        session_timeout=config.group_session_timeout,
        # One static name per replica: a replica restarted on its port gets its part back.
        instance=config.instance or f"{socket.gethostname()}:{port}",
        stop_timeout=CONTROLLERS_STOP_S,
    )
    tasks |= {"controllers": controllers.run, "controllers-group": leases.run}
    try:
        await server.run(tasks)
    finally:
        await admission.close()
        await producer.stop()
        if audit is not None:
            audit.close()


def _pod_node(model: ReadModel, namespace: str, name: str) -> str | None:
    pod = model.get("pods", (namespace, name))
    return pod.spec.node_name if pod is not None else None


def _has_policy(model: ReadModel, namespace: str) -> bool:
    """Does the namespace hold a ResourceQuota or LimitRange (the webhook's selector)?"""
    return any(
        ns == namespace
        for collection in ("resourcequotas", "limitranges")
        for ns, _ in model.objects(collection)
    )
