"""The quota role decodes the pod records of namespaces that have a ResourceQuota only
(services/quota/namespaces.py): a namespace's first quota makes its records decoded from the
next batch on and queues the take-over of the pods it skipped; its last quota's deletion
makes them skipped again and forgets its pods. (The take-over itself reads Kafka and
PostgreSQL: tests/integration/policy/test_quota_e2e.py.)"""

from __future__ import annotations

from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.admission import AdmissionRequest, GroupVersionKind
from schemas.envelope import Envelope
from schemas.k8s import ResourceQuota
from services.quota.namespaces import NamespacePods
from services.quota.reads import READS
from services.quota.service import INPUT_TOPICS, ROLE
from services.quota.totals import UsageTotals
from services.quota.webhook import QuotaWebhook
from tests import factories


def _quota(namespace: str) -> ResourceQuota:
    return ResourceQuota.model_validate(
        {"metadata": {"name": "compute", "namespace": namespace}, "spec": {"hard": {"pods": "9"}}}
    )


def _created(namespace: str, name: str) -> ev.PodCreated:
    return ev.PodCreated(
        namespace=namespace, name=name, pod=factories.pod(namespace, name), uid=f"uid-{name}"
    )


async def test_pods_are_decoded_only_while_their_namespace_has_a_quota() -> None:
    stream = [
        Envelope.wrap(payload, producer="apiserver")
        for payload in (
            _created("team-a", "early"),
            ev.ResourceQuotaCreated(namespace="team-a", quota=_quota("team-a")),
            _created("team-a", "late"),
            _created("team-b", "elsewhere"),
            ev.ResourceQuotaDeleted(namespace="team-a", name="compute"),
            _created("team-a", "after"),
        )
    ]
    namespaces = NamespacePods(Settings(), READS)
    model = ReadModel(
        Settings(), role=ROLE, topics=INPUT_TOPICS, window=0, accept=namespaces.accept
    )
    namespaces.follow(model)
    model.ready.set()
    held, followed, taking = [], [], []
    async for _ in factories.feed(model, stream, namespaces.accept, batch=1):
        held.append(sorted(name for _, name in model.pods))
        followed.append(sorted(namespaces.followed))
        taking.append(len(model._jobs))
    # "early" came before the quota: skipped, left to the take-over queued at the quota.
    assert held == [[], [], ["late"], ["late"], [], []]
    assert followed == [[], ["team-a"], ["team-a"], ["team-a"], [], []]
    assert taking == [0, 1, 1, 1, 1, 1]
    assert namespaces.held == set()  # the take-over never ran here: nothing summed


async def test_a_review_while_the_namespace_pods_are_taken_over_is_status_unknown() -> None:
    """Until a namespace's pods are all read (the take-over never runs here), a pod a quota
    applies to gets kube-apiserver's "status unknown for quota" (403, clients retry), never a
    decision on a partial count; with the quota gone it is admitted again."""
    namespaces = NamespacePods(Settings(), READS)
    model = ReadModel(
        Settings(), role=ROLE, topics=INPUT_TOPICS, window=0, accept=namespaces.accept
    )
    namespaces.follow(model)
    webhook = QuotaWebhook(model, totals=UsageTotals(model, namespaces), held_within=0.05)
    model.ready.set()
    created = ev.ResourceQuotaCreated(namespace="team-a", quota=_quota("team-a"))
    deleted = ev.ResourceQuotaDeleted(namespace="team-a", name="compute")
    review = AdmissionRequest(
        uid="u",
        kind=GroupVersionKind(kind="Pod"),
        operation="CREATE",
        namespace="team-a",
        object=factories.pod("team-a", "web-0").to_k8s(),
    )
    answers = []
    for payload in (created, deleted):
        stream = [Envelope.wrap(payload, producer="apiserver")]
        async for _ in factories.feed(model, stream, namespaces.accept):
            answers.append((await webhook.review(review)).to_k8s())
    refused, admitted = answers
    assert refused["allowed"] is False
    assert refused["status"]["code"] == 403
    assert refused["status"]["message"] == (
        'pods "web-0" is forbidden: status unknown for quota: compute, resources: pods'
    )
    assert admitted["allowed"] is True
