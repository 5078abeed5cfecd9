"""ResourceQuota and LimitRange through the apiserver, with the official Kubernetes client
(issue 6): the apiserver calls the quota process for admission on create and on `resize`, and
the quota process keeps each quota's `status.used` from the log (KEP-1287 "Resource Quota")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from inplace.core.bus.producer import EventProducer
from inplace.core.readmodel import OFF_PATH_FETCH_WAIT_MS
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import ResourceRequirements
from schemas.quantity import Quantity
from tests import factories
from tests.integration.conftest import RoleProcess, inplace, metric, read_log, wait_caught_up

NS = "team-a"


def core(apiserver: RoleProcess) -> client.CoreV1Api:
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def pod_body(name: str, cpu: str | None = "300m", memory: str = "128Mi") -> dict[str, Any]:
    """A Guaranteed pod (requests = limits), or one without resources when cpu is None."""
    resources: dict[str, Any] = {}
    if cpu is not None:
        amounts = {"cpu": cpu, "memory": memory}
        resources = {"requests": amounts, "limits": dict(amounts)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c1", "image": "nginx:1.27", "resources": resources}]},
    }


def resize(cpu: str, memory: str | None = None) -> dict[str, Any]:
    amounts = {"cpu": cpu} if memory is None else {"cpu": cpu, "memory": memory}
    resources = {"requests": amounts, "limits": dict(amounts)}
    return {"spec": {"containers": [{"name": "c1", "resources": resources}]}}


def quota_body(name: str = "compute", **hard: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"hard": hard}}


async def namespace(v1: client.CoreV1Api, name: str = NS) -> None:
    await call(v1.create_namespace, {"metadata": {"name": name}})


async def until(
    probe: Callable[[], Any], ok: Callable[[Any], bool], what: str, within: float = 30.0
) -> Any:
    """Poll `probe` until `ok` holds for its value (bounded wait, not a timing assertion)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = await call(probe)
        if ok(value):
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what}: still {value!r}")
        await asyncio.sleep(0.05)


def used_of(v1: client.CoreV1Api, ns: str, name: str = "compute") -> Callable[[], dict[str, str]]:
    def probe() -> dict[str, str]:
        used: dict[str, str] | None = v1.read_namespaced_resource_quota(name, ns).status.used
        return used or {}

    return probe


async def refused_on_log(settings: Settings, name: str) -> list[ev.ResizeRefused]:
    """The ResizeRefused events the apiserver wrote for pod NS/`name`."""
    return [
        e.payload
        for e in await read_log(settings, ev.PODS)
        if isinstance(e.payload, ev.ResizeRefused) and e.payload.name == name
    ]


def same(actual: dict[str, str], expected: dict[str, str]) -> bool:
    """Equal as quantities ("1000m" is "1")."""
    return actual.keys() == expected.keys() and all(
        Quantity(actual[k]) == Quantity(v) for k, v in expected.items()
    )


# --- admission -----------------------------------------------------------------------------------


async def two_pods_under_a_1_cpu_quota(v1: client.CoreV1Api) -> None:
    """web-0 and web-1 at 300m each in NS, under a quota of 1 CPU (requests and limits)."""
    await namespace(v1)
    await call(
        v1.create_namespaced_resource_quota,
        NS,
        quota_body(**{"requests.cpu": "1", "limits.cpu": "1", "pods": "4"}),
    )
    for name in ("web-0", "web-1"):
        await call(v1.create_namespaced_pod, NS, pod_body(name, "300m"))


async def test_resize_beyond_quota_is_403_and_within_quota_passes(
    admitting_apiserver: RoleProcess, quota: RoleProcess, settings: Settings
) -> None:
    v1 = core(admitting_apiserver)
    await two_pods_under_a_1_cpu_quota(v1)

    with pytest.raises(ApiException) as denied:
        await call(v1.patch_namespaced_pod_resize, "web-0", NS, resize("800m"))
    assert denied.value.status == 403
    body = status_of(denied.value)
    assert body["reason"] == "Forbidden" and body["kind"] == "Status"
    assert body["message"] == (
        'pods "web-0" is forbidden: exceeded quota: compute, '
        "requested: limits.cpu=500m,requests.cpu=500m, "
        "used: limits.cpu=600m,requests.cpu=600m, "
        "limited: limits.cpu=1,requests.cpu=1"
    )
    unchanged = await call(v1.read_namespaced_pod, "web-0", NS)
    assert unchanged.spec.containers[0].resources.requests["cpu"] == "300m"
    assert unchanged.status.resize is None
    # The facts on the log are those the quota webhook gave beside the message, as data.
    [logged] = await refused_on_log(settings, "web-0")
    assert (logged.code, logged.message, logged.limit_range) == (403, body["message"], None)
    assert logged.quota == ev.QuotaRefusal(
        quota="compute",
        requested={"limits.cpu": "500m", "requests.cpu": "500m"},
        used={"limits.cpu": "600m", "requests.cpu": "600m"},
        hard={"limits.cpu": "1", "requests.cpu": "1"},
    )
    # The refusal is on the log: `inplace explain` names the quota, its used and hard.
    explained = inplace(settings, "explain", f"{NS}/web-0", "-o", "json")
    [refused] = json.loads(explained.stdout)["resizes"]
    assert refused["outcome"] == "Refused by the apiserver"
    assert refused["wanted"] == [
        "c1: requests cpu=800m, memory=128Mi; limits cpu=800m, memory=128Mi"
    ]
    assert (
        refused["steps"][0]["text"]
        == f"refused by the apiserver (403 Forbidden): {body['message']}"
    )
    assert refused["steps"][0]["quota"] == {
        "quota": "compute",
        "requested": {"limits.cpu": "500m", "requests.cpu": "500m"},
        "used": {"limits.cpu": "600m", "requests.cpu": "600m"},
        "hard": {"limits.cpu": "1", "requests.cpu": "1"},
    }

    resized = await call(v1.patch_namespaced_pod_resize, "web-0", NS, resize("700m"))
    assert resized.status.resize == "Proposed"
    assert resized.spec.containers[0].resources.limits["cpu"] == "700m"

    # The quota is now full (700m + 300m): a new pod is refused too, and a shrink passes.
    with pytest.raises(ApiException) as full:
        await call(v1.create_namespaced_pod, NS, pod_body("web-2", "100m"))
    assert full.value.status == 403
    assert 'pods "web-2" is forbidden: exceeded quota: compute' in status_of(full.value)["message"]
    shrunk = await call(v1.patch_namespaced_pod_resize, "web-1", NS, resize("200m"))
    assert shrunk.spec.containers[0].resources.requests["cpu"] == "200m"
    # All of that decided by a quota role that skipped, undecoded, the records it does not read
    # (services/quota/reads.py): the namespaces created and the refused resize at least.
    sample = 'inplace_events_skipped_total{role="quota"}'
    deadline = asyncio.get_running_loop().time() + 30
    while (skipped := await metric(quota, sample)) < 2:
        assert asyncio.get_running_loop().time() < deadline, f"skipped {skipped}"
        await asyncio.sleep(0.1)


async def test_a_dry_run_resize_is_judged_by_quota_and_holds_no_reservation(
    admitting_apiserver: RoleProcess, settings: Settings
) -> None:
    """dryRun=All: the webhook decides (told it is a dry run), nothing is recorded, and an
    admitted dry run reserves nothing, so the real resize after it still fits."""
    v1 = core(admitting_apiserver)
    await two_pods_under_a_1_cpu_quota(v1)
    with pytest.raises(ApiException) as denied:
        await call(v1.patch_namespaced_pod_resize, "web-0", NS, resize("800m"), dry_run="All")
    assert denied.value.status == 403
    assert "exceeded quota: compute" in status_of(denied.value)["message"]
    tried = await call(v1.patch_namespaced_pod_resize, "web-0", NS, resize("700m"), dry_run="All")
    assert tried.spec.containers[0].resources.requests["cpu"] == "700m"
    # web-0's dry run fits only alone (700m + 300m): were it reserved, web-1 could not grow.
    grown = await call(v1.patch_namespaced_pod_resize, "web-1", NS, resize("700m"))
    assert grown.spec.containers[0].resources.requests["cpu"] == "700m"
    types = [e.type for e in await read_log(settings, ev.PODS) if e.payload.name == "web-0"]
    assert types == ["PodCreated"]  # neither the refusal nor the dry run reached the log


async def test_limit_range_defaults_on_create_and_max_blocks_a_resize(
    admitting_apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = core(admitting_apiserver)
    await namespace(v1)
    limits = {
        "metadata": {"name": "limits"},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "max": {"cpu": "1", "memory": "1Gi"},
                    "default": {"cpu": "500m", "memory": "256Mi"},
                    "defaultRequest": {"cpu": "250m", "memory": "128Mi"},
                }
            ]
        },
    }
    await call(v1.create_namespaced_limit_range, NS, limits)

    defaulted = await call(v1.create_namespaced_pod, NS, pod_body("plain", cpu=None))
    resources = defaulted.spec.containers[0].resources
    assert resources.requests == {"cpu": "250m", "memory": "128Mi"}
    assert resources.limits == {"cpu": "500m", "memory": "256Mi"}
    assert defaulted.metadata.annotations["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container c1; "
        "cpu, memory limit for container c1"
    )

    await call(v1.create_namespaced_pod, NS, pod_body("big", "800m"))
    with pytest.raises(ApiException) as denied:
        await call(v1.patch_namespaced_pod_resize, "big", NS, resize("2"))
    assert denied.value.status == 403
    assert status_of(denied.value)["message"] == (
        'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
    )
    assert (await call(v1.read_namespaced_pod, "big", NS)).status.resize is None
    [logged] = await refused_on_log(settings, "big")
    assert logged.quota is None
    assert logged.limit_range == [factories.cpu_over_container_max()]
    explained = json.loads(inplace(settings, "explain", f"{NS}/big", "-o", "json").stdout)
    [refused] = explained["resizes"]
    assert refused["steps"][0]["limit_range"] == [
        {
            "resource": "cpu",
            "per": "Container",
            "bound": "maximum",
            "enforced": "1",
            "field": "limit",
            "actual": "2",
        }
    ]
    assert refused["steps"][0]["quota"] is None
    allowed = await call(v1.patch_namespaced_pod_resize, "big", NS, resize("1"))
    assert allowed.status.resize == "Proposed"

    with pytest.raises(ApiException) as too_big:
        await call(v1.create_namespaced_pod, NS, pod_body("huge", "1500m"))
    assert too_big.value.status == 403
    assert (
        "maximum cpu usage per Container is 1, but limit is 1500m"
        in (status_of(too_big.value)["message"])
    )


async def test_limit_range_defaults_decide_the_qos_class(admitting_apiserver: RoleProcess) -> None:
    v1 = core(admitting_apiserver)
    await namespace(v1)
    limits = {
        "metadata": {"name": "limits"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]},
    }
    await call(v1.create_namespaced_limit_range, NS, limits)
    defaulted = await call(v1.create_namespaced_pod, NS, pod_body("plain", cpu=None))
    assert defaulted.spec.containers[0].resources.limits == {"cpu": "500m"}
    assert defaulted.status.qos_class == "Burstable"


@pytest.mark.parametrize("quota_env", [{"INPLACE_FOLLOW_FETCH_WAIT_MS": "500"}], indirect=True)
async def test_a_pod_right_after_its_limit_range_gets_its_defaults_from_a_lagging_webhook(
    admitting_apiserver: RoleProcess,
) -> None:
    """The quota process follows the log up to 500 ms behind here: the apiserver sends how far
    it has applied the policy log, and the webhook catches up before it decides."""
    v1 = core(admitting_apiserver)
    limits = {
        "metadata": {"name": "limits"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]},
    }
    for i in range(3):
        ns = f"fresh-{i}"
        await namespace(v1, ns)
        await call(v1.create_namespaced_limit_range, ns, limits)
        defaulted = await call(v1.create_namespaced_pod, ns, pod_body("plain", cpu=None))
        assert defaulted.spec.containers[0].resources.limits == {"cpu": "500m"}, ns


# --- status.used ---------------------------------------------------------------------------------

HARD = {
    "requests.cpu": "2",
    "requests.memory": "2Gi",
    "limits.cpu": "2",
    "limits.memory": "2Gi",
    "pods": "10",
}


def usage(cpu: str, memory: str, pods: int) -> dict[str, str]:
    return {
        "requests.cpu": cpu,
        "limits.cpu": cpu,
        "requests.memory": memory,
        "limits.memory": memory,
        "pods": str(pods),
    }


async def _kubelet_applied(settings: Settings, pod: Any, cpu: str, memory: str) -> None:
    """What a kubelet reports once a size is admitted and applied: Allocated then Actuated."""
    amounts = {"cpu": Quantity(cpu), "memory": Quantity(memory)}
    resources = ResourceRequirements(requests=amounts, limits=dict(amounts))
    meta = {"namespace": NS, "name": pod.metadata.name, "uid": pod.metadata.uid}
    async with EventProducer(
        settings.kafka_bootstrap, topic_prefix=settings.topic_prefix
    ) as producer:
        for payload in (
            ev.Allocated(
                **meta,
                node_name="node-1",
                containers=[ev.ContainerAllocation(name="c1", resources=resources)],
            ),
            ev.Actuated(
                **meta,
                node_name="node-1",
                containers=[ev.ContainerActual(name="c1", resources=resources)],
            ),
        ):
            await producer.publish(Envelope.wrap(payload, producer="test"))


async def test_quota_status_used_follows_creates_resizes_and_deletes(
    admitting_apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = core(admitting_apiserver)
    await namespace(v1)
    await call(v1.create_namespaced_resource_quota, NS, quota_body(**HARD))
    used = used_of(v1, NS)
    await until(used, lambda u: same(u, usage("0", "0", 0)), "an empty namespace uses nothing")

    web0 = await call(v1.create_namespaced_pod, NS, pod_body("web-0", "300m", "128Mi"))
    await call(v1.create_namespaced_pod, NS, pod_body("web-1", "200m", "64Mi"))
    await until(used, lambda u: same(u, usage("500m", "192Mi", 2)), "two pods")

    # A proposed resize counts at once (the scheduler and quota assume it will be accepted).
    await call(v1.patch_namespaced_pod_resize, "web-0", NS, resize("600m"))
    await until(used, lambda u: same(u, usage("800m", "192Mi", 2)), "web-0 resized up")

    await call(v1.delete_namespaced_pod, "web-1", NS)
    await until(used, lambda u: same(u, usage("600m", "128Mi", 1)), "web-1 deleted")

    # KEP-1287: usage is max(spec, status). The kubelet runs web-0 at 600m; a resize that
    # shrinks cpu (and grows memory) charges the old cpu until the smaller size is applied.
    await _kubelet_applied(settings, web0, "600m", "128Mi")
    await call(v1.patch_namespaced_pod_resize, "web-0", NS, resize("400m", "256Mi"))
    # Same pod, same partition: once the memory growth shows, the cpu shrink was seen too.
    charged = await until(
        used,
        lambda u: Quantity(u.get("requests.memory", "0")) == Quantity("256Mi"),
        "the memory growth counted",
    )
    assert same(charged, usage("600m", "256Mi", 1)), charged
    await _kubelet_applied(settings, web0, "400m", "256Mi")
    await until(used, lambda u: same(u, usage("400m", "256Mi", 1)), "the shrink applied")

    # A quota created later gets its usage too (and a replaced spec, its new resources).
    await call(v1.create_namespaced_resource_quota, NS, quota_body("count", pods="5"))
    await until(used_of(v1, NS, "count"), lambda u: same(u, {"pods": "1"}), "second quota")


async def _race_round(v1s: tuple[client.CoreV1Api, client.CoreV1Api], ns: str) -> list[Any]:
    first, second = v1s
    await namespace(first, ns)
    await call(
        first.create_namespaced_resource_quota,
        ns,
        quota_body(**{"requests.cpu": "1", "limits.cpu": "1"}),
    )
    for name in ("a", "b"):
        await call(first.create_namespaced_pod, ns, pod_body(name, "300m"))
    # The quota process has the quota and both pods once it reports their usage.
    await until(
        used_of(first, ns),
        lambda u: same(u, {"requests.cpu": "600m", "limits.cpu": "600m"}),
        f"{ns}: quota service caught up",
    )
    # 600m used; each resize adds 400m: either fits alone, both together do not.
    results: list[Any] = await asyncio.gather(
        call(first.patch_namespaced_pod_resize, "a", ns, resize("700m")),
        call(second.patch_namespaced_pod_resize, "b", ns, resize("700m")),
        return_exceptions=True,
    )
    return results


async def test_concurrent_resizes_cannot_both_pass_a_quota_that_fits_one(
    admitting_apiserver: RoleProcess,
) -> None:
    v1s = (core(admitting_apiserver), core(admitting_apiserver))
    for round_ in range(6):
        ns = f"race-{round_}"
        results = await _race_round(v1s, ns)
        passed = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, ApiException)]
        assert len(passed) == 1 and len(refused) == 1, results
        assert refused[0].status == 403
        assert "exceeded quota: compute" in status_of(refused[0])["message"]
        assert passed[0].status.resize == "Proposed"
        await until(
            used_of(v1s[0], ns),
            lambda u: same(u, {"requests.cpu": "1", "limits.cpu": "1"}),
            f"{ns}: the winner is charged",
        )


async def test_webhook_is_called_only_where_a_quota_or_limit_range_exists(
    settings: Settings, tmp_path: Path, quota: RoleProcess
) -> None:
    """The quota webhook's namespace selector: with the quota service down, a namespace
    without policies still admits pods; one with a LimitRange refuses them (failurePolicy
    Fail) with Kubernetes' "failed calling webhook" error, never admitting silently."""
    quota.stop()
    apiserver = RoleProcess(
        "apiserver", settings, tmp_path / "apiserver.log", INPLACE_QUOTA_URL=quota.url
    )
    apiserver.start()
    try:
        await apiserver.ready()
        v1 = core(apiserver)
        await namespace(v1)
        created = await call(v1.create_namespaced_pod, NS, pod_body("free"))
        assert created.metadata.name == "free"
        limits = {"metadata": {"name": "limits"}, "spec": {"limits": [{"type": "Container"}]}}
        await call(v1.create_namespaced_limit_range, NS, limits)
        with pytest.raises(ApiException) as refused:
            await call(v1.create_namespaced_pod, NS, pod_body("gated"))
        assert refused.value.status == 500
        body = status_of(refused.value)
        assert body["reason"] == "InternalError"
        assert 'failed calling webhook "quota.inplace.io"' in body["message"]
    finally:
        apiserver.stop()


async def test_a_review_makes_the_quota_role_follow_the_log_promptly(
    admitting_apiserver: RoleProcess, quota: RoleProcess
) -> None:
    """While no review waits on its view the broker holds quota's fetches (fewer, fuller
    ones); a review makes it fetch promptly for a while, so the reviews after it wait for no
    held fetch. The pod still gets the LimitRange it was created right after."""
    gauge = 'inplace_read_model_fetch_wait_ms{role="quota"}'
    assert await metric(quota, gauge) == OFF_PATH_FETCH_WAIT_MS
    v1 = core(admitting_apiserver)
    await namespace(v1)
    defaults = {"type": "Container", "default": {"cpu": "200m", "memory": "64Mi"}}
    await call(
        v1.create_namespaced_limit_range,
        NS,
        {"metadata": {"name": "limits"}, "spec": {"limits": [defaults]}},
    )
    created = await call(v1.create_namespaced_pod, NS, pod_body("reviewed", cpu=None))
    assert created.spec.containers[0].resources.limits == {"cpu": "200m", "memory": "64Mi"}
    assert await metric(quota, gauge) == 0


async def test_quota_restarted_from_the_projection_still_counts_every_pod(
    admitting_apiserver: RoleProcess,
    quota: RoleProcess,
    projector: RoleProcess,
    settings: Settings,
) -> None:
    v1 = core(admitting_apiserver)
    await namespace(v1)
    await call(v1.create_namespaced_resource_quota, NS, quota_body(**{"requests.cpu": "1"}))
    for name in ("web-0", "web-1"):
        await call(v1.create_namespaced_pod, NS, pod_body(name, "300m"))
    projector.start()
    await wait_caught_up(settings, projector)
    quota.stop()
    quota.start()  # same port: the apiserver's webhook URL stays right
    await quota.ready()
    async with quota.client(base_url=quota.url) as http:
        metrics = (await http.get("/metrics")).text
    assert 'inplace_read_model_start_source{role="quota",source="snapshot"} 1.0' in metrics
    # The pods it never saw as events are counted: 600m used, so +500m is over 1 CPU.
    with pytest.raises(ApiException) as denied:
        await call(v1.patch_namespaced_pod_resize, "web-0", NS, resize("800m"))
    assert denied.value.status == 403
    assert "used: requests.cpu=600m" in status_of(denied.value)["message"]


async def test_a_namespace_given_its_first_quota_counts_the_pods_quota_skipped_before(
    admitting_apiserver: RoleProcess,
    quota: RoleProcess,
    projector: RoleProcess,
    settings: Settings,
) -> None:
    """Quota holds only the pods of namespaces that have a ResourceQuota. The pods created
    before a namespace's first quota are taken over when it comes: from the projection (web-0,
    web-1) and the log after it (web-2, written while the projector was down); after the last
    quota is deleted and one comes again, again with the pods created in between."""
    v1 = core(admitting_apiserver)
    await namespace(v1)
    skipped = 'inplace_events_skipped_total{role="quota"}'
    before = await metric(quota, skipped)
    for name in ("web-0", "web-1"):
        await call(v1.create_namespaced_pod, NS, pod_body(name, "300m"))
    projector.start()
    await wait_caught_up(settings, projector)
    projector.stop()
    await call(v1.create_namespaced_pod, NS, pod_body("web-2", "200m"))
    for _ in range(600):  # its PodCreated records reached quota, and were not decoded
        if await metric(quota, skipped) >= before + 3:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("quota decoded the pods of a namespace without a quota")

    await call(v1.create_namespaced_resource_quota, NS, quota_body(**{"requests.cpu": "1"}))
    used = used_of(v1, NS)
    await until(used, lambda u: same(u, {"requests.cpu": "800m"}), "every pod counted")
    assert "its pods taken from the projection and 1 records of the log" in quota.log.read_text()
    with pytest.raises(ApiException) as denied:  # 800m used: +300m is over 1 CPU
        await call(v1.patch_namespaced_pod_resize, "web-0", NS, resize("600m"))
    assert denied.value.status == 403
    assert "used: requests.cpu=800m" in status_of(denied.value)["message"]

    await call(v1.delete_namespaced_resource_quota, "compute", NS)
    await call(v1.create_namespaced_pod, NS, pod_body("web-3", "200m"))
    await call(v1.create_namespaced_resource_quota, NS, quota_body(**{"requests.cpu": "1"}))
    await until(used, lambda u: same(u, {"requests.cpu": "1"}), "the pods of both times")
    with pytest.raises(ApiException) as full:
        await call(v1.create_namespaced_pod, NS, pod_body("web-4", "100m"))
    assert full.value.status == 403


async def test_without_a_projection_a_namespace_first_quota_takes_its_pods_from_the_log(
    admitting_apiserver: RoleProcess, quota: RoleProcess
) -> None:
    """No projector has run: the take-over at a namespace's first quota reads the pods topic
    from offset 0 (and says so), as a start without a snapshot does."""
    v1 = core(admitting_apiserver)
    await namespace(v1)
    for name, cpu in (("web-0", "300m"), ("web-1", "250m")):
        await call(v1.create_namespaced_pod, NS, pod_body(name, cpu))
    await call(v1.create_namespaced_resource_quota, NS, quota_body(**{"requests.cpu": "1"}))
    await until(used_of(v1, NS), lambda u: same(u, {"requests.cpu": "550m"}), "both pods")
    assert "its pods taken from the log from offset 0" in quota.log.read_text()
