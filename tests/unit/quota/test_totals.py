"""Running usage totals (services/quota/totals.py): the incremental rule, and totals kept from a
realistic stream equal a full recomputation over the namespace's pods at every step."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import Pod, ResourceList, ResourceQuota
from schemas.quantity import Quantity
from services.quota.service import INPUT_TOPICS, ROLE
from services.quota.totals import Charge, UsageTotals, charge, moved
from services.quota.usage import POD_RESOURCES, ScopeFacts, quota_used
from tests import factories

PLAIN = ScopeFacts(best_effort=False, priority_class=False)
BEST_EFFORT = ScopeFacts(best_effort=True, priority_class=False)


def q(**amounts: str) -> ResourceList:
    """A resource list from keyword amounts: requests_cpu="1" is requests.cpu."""
    return {name.replace("_", "."): Quantity(v) for name, v in amounts.items()}


def c(group: ScopeFacts, **amounts: str) -> Charge:
    return Charge(group, q(**amounts))


def shown(totals: Mapping[ScopeFacts, ResourceList]) -> dict[ScopeFacts, dict[str, str]]:
    return {g: {n: str(v) for n, v in t.items()} for g, t in totals.items()}


@pytest.mark.parametrize(
    ("totals", "old", "new", "expected"),
    [
        pytest.param({}, None, None, {}, id="nothing-in-nothing-out"),
        pytest.param(
            {},
            None,
            c(PLAIN, cpu="500m", pods="1"),
            {PLAIN: q(cpu="500m", pods="1")},
            id="created-into-empty",
        ),
        pytest.param(
            {PLAIN: q(cpu="500m", pods="1")},
            None,
            c(PLAIN, cpu="700m", pods="1"),
            {PLAIN: q(cpu="1200m", pods="2")},
            id="created-next-to-another",
        ),
        pytest.param(
            {PLAIN: q(cpu="1200m", pods="2")},
            c(PLAIN, cpu="500m", pods="1"),
            c(PLAIN, cpu="800m", pods="1"),
            {PLAIN: q(cpu="1500m", pods="2")},
            id="resized-old-out-new-in",
        ),
        pytest.param(
            {PLAIN: q(cpu="1200m", memory="1Gi", pods="2")},
            c(PLAIN, cpu="500m", memory="1Gi", pods="1"),
            c(PLAIN, cpu="500m", pods="1"),
            {PLAIN: q(cpu="1200m", pods="2")},
            id="resource-back-to-zero-dropped",
        ),
        pytest.param(
            {PLAIN: q(cpu="500m", pods="1"), BEST_EFFORT: q(count_pods="1")},
            c(PLAIN, cpu="500m", pods="1"),
            None,
            {BEST_EFFORT: q(count_pods="1")},
            id="deleted-last-of-group-drops-group",
        ),
        pytest.param(
            {PLAIN: q(cpu="500m", pods="1")},
            c(PLAIN, cpu="500m", pods="1"),
            c(BEST_EFFORT, pods="1"),
            {BEST_EFFORT: q(pods="1")},
            id="moved-between-groups",
        ),
        pytest.param(
            {PLAIN: q(cpu="1", count_pods="2", pods="2")},
            c(PLAIN, cpu="1", count_pods="1", pods="1"),
            c(PLAIN, count_pods="1"),
            {PLAIN: q(count_pods="2", pods="1")},
            id="finished-keeps-only-count-pods",
        ),
        pytest.param(
            {PLAIN: q(memory="1Gi")},
            None,
            c(PLAIN, memory="512Mi"),
            {PLAIN: q(memory="1536Mi")},
            id="sum-in-left-format",
        ),
    ],
)
def test_moved(
    totals: dict[ScopeFacts, ResourceList],
    old: Charge | None,
    new: Charge | None,
    expected: dict[ScopeFacts, ResourceList],
) -> None:
    before = shown(totals)
    assert shown(moved(totals, old, new)) == shown(expected)
    assert shown(totals) == before  # pure: the input is left as it was


# Quotas asking every resource a pod can consume, under every scope the API has.
_HARD = {name: "1000" for name in [*POD_RESOURCES, "hugepages-2Mi", "requests.hugepages-2Mi"]}
PROBES = [
    ResourceQuota.model_validate(
        {"metadata": {"name": f"probe-{i}"}, "spec": {"hard": _HARD, "scopes": scopes}}
    )
    for i, scopes in enumerate(
        [[], ["BestEffort"], ["NotBestEffort"], ["PriorityClass"], ["NotTerminating"]]
    )
]


def _pods_of(model: ReadModel, namespace: str) -> list[Pod]:
    return [pod for (ns, _), pod in model.objects("pods").items() if ns == namespace]


def _assert_equal_to_recomputation(model: ReadModel, totals: UsageTotals, *, text: bool) -> None:
    namespaces = {ns for ns, _ in model.objects("pods")} | set(totals.totals)
    for namespace in sorted(namespaces):
        pods = _pods_of(model, namespace)
        for probe in PROBES:
            kept, fresh = totals.used(namespace, probe), quota_used(probe, pods)
            assert kept == fresh, (namespace, probe.spec.scopes)  # by value
            if text:  # and as printed, where each resource is spelt in one format
                assert {n: str(v) for n, v in kept.items()} == {n: str(v) for n, v in fresh.items()}
        assert set(totals.charges.get(namespace, {})) == {p.metadata.name for p in pods}


STREAMS = {
    "every-type": (factories.every_type_stream(), True),
    "cluster": (list(factories.cluster_stream(pods=40, resizes_per_pod=3)), True),
    "scoped": (factories.scoped_pods_stream(), False),  # binary and decimal memory mixed
}


@pytest.mark.parametrize("stream", STREAMS)
async def test_totals_equal_a_full_recomputation_after_every_batch(stream: str) -> None:
    envelopes, text = STREAMS[stream]
    model = ReadModel(Settings(), role=ROLE, topics=INPUT_TOPICS, window=0)
    totals = UsageTotals(model)
    model.ready.set()
    batches = 0
    async for _ in factories.feed(model, envelopes, batch=7):
        _assert_equal_to_recomputation(model, totals, text=text)
        batches += 1
    assert batches > 20 and model.objects("pods")
    # Started from the same objects instead (a snapshot), the totals are the same: those of
    # the namespaces with a quota at once, any other's once asked about.
    seeded = UsageTotals(model)
    seeded._seed()
    assert seeded.tracked == {ns for ns, _ in model.objects("resourcequotas")}
    for namespace in totals.tracked:
        seeded.track(namespace)
    assert seeded.charges == totals.charges
    for namespace, groups in totals.totals.items():
        assert shown(seeded.totals[namespace]) == shown(groups) or not text


async def test_only_namespaces_with_a_quota_are_followed() -> None:
    pods = [factories.pod(ns, f"p-{i}", cpu="100m") for ns in ("free", "capped") for i in range(2)]
    created = [
        ev.PodCreated(
            namespace=p.metadata.namespace or "", name=p.metadata.name or "", uid=f"u{i}", pod=p
        )
        for i, p in enumerate(pods)
    ]
    quota = ResourceQuota.model_validate(
        {"metadata": {"name": "q", "namespace": "capped"}, "spec": {"hard": {"cpu": "4"}}}
    )
    model = ReadModel(Settings(), role=ROLE, topics=INPUT_TOPICS, window=0)
    totals = UsageTotals(model)
    async for _ in factories.feed(model, _wrap(created)):
        pass
    assert not totals.tracked and not totals.charges  # no quota anywhere: nothing summed
    stream = [ev.ResourceQuotaCreated(namespace="capped", quota=quota), created[0]]
    async for _ in factories.feed(model, _wrap(stream)):
        pass
    assert totals.tracked == {"capped"}  # summed from its pods when its quota appeared
    assert set(totals.charges) == {"capped"} and len(totals.charges["capped"]) == 2
    assert str(totals.totals["capped"][charge(pods[2]).group]["requests.cpu"]) == "200m"
    async for _ in factories.feed(
        model, _wrap([ev.ResourceQuotaDeleted(namespace="capped", name="q")])
    ):
        pass
    assert not totals.tracked and not totals.charges and not totals.totals


async def test_a_namespace_whose_pods_are_all_gone_leaves_nothing() -> None:
    ns = "gone"
    pods = [factories.pod(ns, f"p-{i}", cpu=f"{i + 1}00m") for i in range(3)]
    stream = [
        *(
            ev.PodCreated(namespace=ns, name=p.metadata.name or "", uid=f"u{i}", pod=p)
            for i, p in enumerate(pods)
        ),
        *(
            ev.PodDeleted(namespace=ns, name=p.metadata.name or "", uid=f"u{i}")
            for i, p in enumerate(pods)
        ),
    ]
    model = ReadModel(Settings(), role=ROLE, topics=INPUT_TOPICS, window=0)
    totals = UsageTotals(model)
    async for _ in factories.feed(model, _wrap(stream)):
        pass
    assert not totals.totals and not totals.charges
    assert totals.used(ns, PROBES[0])["cpu"].is_zero()


def _wrap(payloads: Sequence[ev.EventPayload]) -> list[Envelope]:
    return [Envelope.wrap(p, producer="test") for p in payloads]


def test_charge_groups_by_what_scopes_select() -> None:
    best = factories.scoped_pod("ns", "b")
    high = factories.scoped_pod("ns", "h", {"cpu": "1"}, priority_class="high")
    assert charge(best).group == BEST_EFFORT
    assert charge(high).group == ScopeFacts(best_effort=False, priority_class=True)
    assert charge(high).usage["requests.cpu"] == Quantity("1")
