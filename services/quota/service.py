"""The quota role: ResourceQuota and LimitRange admission for the apiserver (issue 6).

It keeps pods, quotas and limit ranges from the log (a read model over `pods` and `policy`),
answers the apiserver's AdmissionReview on POST /admit, and keeps each ResourceQuota's
`status.used` up to date from the same read model (`status.QuotaStatus`).
"""

from __future__ import annotations

from starlette.routing import Route

from inplace.core.bus.producer import EventProducer
from inplace.core.readmodel import OFF_PATH_FETCH_WAIT_MS, ReadModel
from inplace.core.service import RoleServer
from inplace.core.settings import Settings
from schemas.events import PODS, POLICY
from schemas.podview import resource_json
from services.quota.namespaces import NamespacePods, quota_namespaces
from services.quota.reads import READS
from services.quota.status import QuotaStatus
from services.quota.totals import UsageTotals
from services.quota.webhook import QuotaWebhook

ROLE = "quota"
INPUT_TOPICS = (PODS, POLICY)


async def run(settings: Settings, *, host: str, port: int) -> None:
    # Its state is the objects (indexes are seeded from them): start from the projection.
    # Records of types it does not read are skipped undecoded (reads.py), and so are the pods
    # of namespaces without a ResourceQuota (namespaces.py).
    namespaces = NamespacePods(settings, READS)
    model = ReadModel(
        settings,
        role=ROLE,
        topics=INPUT_TOPICS,
        window=0,
        snapshot=True,
        accept=namespaces.accept,
        pod_namespaces=quota_namespaces,  # a snapshot brings just theirs
        pod_form=resource_json,  # of a pod gone cold, the fields it charges for
        # Fewer, fuller fetches while no review waits on it (the webhook hurries the model).
        fetch_wait_ms=OFF_PATH_FETCH_WAIT_MS,
    )
    producer = EventProducer(
        settings.kafka_bootstrap, client_id=ROLE, topic_prefix=settings.topic_prefix
    )
    await producer.start()
    namespaces.follow(model)  # before the totals: a namespace is held before it is summed
    totals = UsageTotals(model, namespaces)  # one index of the pods' charges for both
    webhook = QuotaWebhook(model, totals=totals)
    status = QuotaStatus(model, producer, totals=totals)
    server = RoleServer(
        ROLE,
        settings,
        host=host,
        port=port,
        routes=[Route("/admit", webhook.handle, methods=["POST"])],
        ready=model.ready.is_set,
        callers=frozenset({"system:apiserver", "system:masters"}),  # the apiserver's identity
    )
    try:
        await server.run({"read-model": model.run, "status": status.run})
    finally:
        await producer.stop()
