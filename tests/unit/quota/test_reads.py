"""The quota role decodes only the event types it reads (services/quota/reads.py), and computes
usage and admits exactly as if it folded everything."""

from __future__ import annotations

from typing import Any

from inplace.core.bus.headers import Accept, of_types
from inplace.core.projection.podstore import PodForm, PodStore
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas.admission import AdmissionRequest, GroupVersionKind
from schemas.podview import resource_json
from services.quota.reads import READS, SKIPS
from services.quota.service import INPUT_TOPICS, ROLE
from services.quota.status import QuotaStatus
from services.quota.usage import pod_usage, quota_used
from services.quota.webhook import QuotaWebhook
from tests import factories

STREAM = factories.every_type_stream()
# Pods asked to grow at every step: admission then charges them against the namespace's pods.
ASKED = [("team-a", f"web-{i}") for i in (0, 3, 4, 8)] + [("team-b", "early")]


def _request(operation: str, new: dict[str, Any], old: dict[str, Any] | None) -> AdmissionRequest:
    return AdmissionRequest(
        uid="u",
        kind=GroupVersionKind(kind="Pod"),
        operation=operation,  # type: ignore[arg-type]
        sub_resource="resize" if old is not None else None,
        namespace=new["metadata"]["namespace"],
        object=new,
        old_object=old,
    )


async def _admissions(model: ReadModel, webhook: QuotaWebhook) -> list[Any]:
    """The webhook's answers to a resize of each ASKED pod and to a new pod."""
    answers = []
    for key in ASKED:
        pod = model.get("pods", key)
        if pod is None:
            continue
        grown = pod.to_k8s()
        grown["spec"]["containers"][0]["resources"] = factories.resources("3", "1Gi").to_k8s()
        answers.append(await webhook.review(_request("UPDATE", grown, pod.to_k8s())))
    new = factories.pod("team-a", "new", cpu="900m").to_k8s()
    answers.append(await webhook.review(_request("CREATE", new, None)))
    webhook._reserved.clear()  # asked here, never written: no charge may carry on
    return [a.to_k8s() for a in answers]


async def _view(model: ReadModel, webhook: QuotaWebhook, status: QuotaStatus) -> dict[str, Any]:
    pods = model.objects("pods")
    quotas = model.objects("resourcequotas")
    return {
        "pod_usage": {key: pod_usage(pod) for key, pod in pods.items()},
        "quotas": {key: q.to_k8s() for key, q in quotas.items()},  # status.used and all
        "limitranges": {key: lr.to_k8s() for key, lr in model.objects("limitranges").items()},
        "quota_used": {
            (ns, name): quota_used(q, [p for (pns, _), p in pods.items() if pns == ns])
            for (ns, name), q in quotas.items()
        },
        # What the status loop would publish now, from its own indexes.
        "to_publish": {
            ns: [(q.metadata.name, used) for q, used in status.changed_usage(ns)]
            for ns in sorted(status._quotas)
        },
        "admissions": await _admissions(model, webhook),
    }


async def _follow(
    accept: Accept | None, form: PodForm | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Quota's view after each batch of the stream, and how many records it skipped. With a
    `form`, every pod goes cold after each record and is kept in that form."""
    model = ReadModel(Settings(), role=ROLE, topics=INPUT_TOPICS, window=0)
    if form is not None:
        model.state.pods = PodStore(hot=1, held=0, form=form)
    webhook = QuotaWebhook(model)
    status = QuotaStatus(model, producer=None)  # type: ignore[arg-type]
    model.ready.set()
    views, skipped = [], 0
    async for skipped_so_far in factories.feed(model, STREAM, accept):
        views.append(await _view(model, webhook, status))
        skipped = skipped_so_far
    return views, skipped


def test_every_type_of_its_topics_is_read_or_skipped_for_a_reason() -> None:
    factories.assert_every_type_decided(READS, SKIPS, INPUT_TOPICS, STREAM)


async def test_the_filtered_quota_role_counts_and_admits_as_if_it_read_everything() -> None:
    full, none_skipped = await _follow(None)
    filtered, skipped = await _follow(of_types(READS))
    assert none_skipped == 0 and skipped > 0
    last = full[-1]
    assert last["quota_used"] and last["to_publish"]["team-a"] and last["limitranges"]
    assert {a["allowed"] for view in full for a in view["admissions"]} == {True, False}
    factories.assert_same_views(full, filtered)


async def test_pods_kept_as_their_resource_fields_count_and_admit_as_whole_ones() -> None:
    """Every pod going cold after every record, kept as `resource_json` writes it (the quota
    role's form): the same usage, statuses to publish and admission answers throughout."""
    whole, _ = await _follow(of_types(READS))
    kept, _ = await _follow(of_types(READS), resource_json)
    assert whole[-1]["quota_used"] and whole[-1]["to_publish"]["team-a"]  # not vacuous
    factories.assert_same_views(whole, kept)
