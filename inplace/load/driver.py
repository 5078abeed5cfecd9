"""Creating the workload through the API, then injecting its resizes.

Two entry modes: `api` sends `PATCH …/pods/{name}/resize` (strategic merge, what users do)
with bounded concurrency; `log` writes ResizeProposed events straight onto the log in batches
(the back end alone). Both can be paced to a target rate, and both carry a correlation id per
resize (`X-Correlation-Id` in `api` mode). A pod has one resize in flight at a time: its next
one goes when the tracker saw the previous one settle (`Chains.settled`), so no proposal ever
supersedes another and every resize has a result of its own.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from inplace.core.bus.producer import EventProducer
from inplace.load.http import HttpClient, Response, TransportError
from inplace.load.plan import CONTAINER, LoadPlan, ResizePlan
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import ResourceRequirements

Mode = Literal["api", "log"]
SMP = "application/strategic-merge-patch+json"
PRODUCER = "inplace-load"
TRANSIENT = (500, 502, 503, 504)


class SetupError(RuntimeError):
    """The workload could not be created; the message is one line."""


class Landed(Exception):
    """A write whose answer was lost is already on the log: sending it again would repeat it
    (a retried resize would set an older desired state over a newer one)."""


@dataclass
class DriverStats:
    sent: int = 0
    errors: int = 0
    skipped: int = 0
    retries: int = 0
    retry_kinds: Counter[str] = field(default_factory=Counter)
    error_kinds: Counter[str] = field(default_factory=Counter)
    request_seconds: list[float] = field(default_factory=list)
    sent_at: dict[str, float] = field(default_factory=dict)
    confirmed: set[str] = field(default_factory=set)  # the API answered 200 / the log has it

    def error(self, message: str) -> None:
        self.errors += 1
        self.error_kinds[message[:160]] += 1


class Pacer:
    """Hands out send slots `1/rate` apart (None: as fast as possible)."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self._next = 0.0

    async def wait(self, n: int = 1) -> None:
        if not self.rate:
            return
        now = time.monotonic()
        slot = max(now, self._next)
        self._next = slot + n / self.rate
        if slot > now:
            await asyncio.sleep(slot - now)


class Chains:
    """Each pod's resizes, one in flight at a time; `ready` holds those that may go now."""

    def __init__(self, plan: LoadPlan, prefix: str) -> None:
        self.prefix = prefix
        self.total = len(plan.resizes)
        self._waiting = {pod: deque(chain) for pod, chain in plan.chains().items()}
        self.by_cid: dict[str, ResizePlan] = {}
        self.inflight: set[str] = set()
        self.skipped = 0
        self.ready: asyncio.Queue[ResizePlan] = asyncio.Queue()
        firsts = sorted((chain.popleft() for chain in self._waiting.values()), key=_index)
        for resize in firsts:
            self.ready.put_nowait(resize)

    def cid(self, resize: ResizePlan) -> str:
        return f"{self.prefix}{resize.index}"

    def take(self, resize: ResizePlan) -> str:
        cid = self.cid(resize)
        self.by_cid[cid] = resize
        self.inflight.add(cid)
        return cid

    def settled(self, cid: str) -> None:
        """The tracker saw this resize reach a final state: its pod's next one may go."""
        if cid not in self.inflight:
            return
        self.inflight.discard(cid)
        chain = self._waiting.get(self.by_cid[cid].pod)
        if chain:
            self.ready.put_nowait(chain.popleft())

    def abandon(self, cid: str) -> None:
        """The resize failed for good: its pod's remaining resizes are skipped."""
        self.inflight.discard(cid)
        chain = self._waiting.pop(self.by_cid[cid].pod, None)
        self.skipped += len(chain or ())


def _index(resize: ResizePlan) -> int:
    return resize.index


# --- HTTP --------------------------------------------------------------------------------------


async def request(
    client: HttpClient,
    method: str,
    url: str,
    *,
    stats: DriverStats | None = None,
    patience: float = 60.0,
    landed: Callable[[], bool] | None = None,
    **kwargs: Any,
) -> Response:
    """One API call, retried with back-off on connection errors and 5xx (a role restarting)
    for up to `patience` seconds; any other answer is returned as is. `landed`: whether the
    write is already on the log, asked before each retry (Landed when it is)."""
    deadline = time.monotonic() + patience
    delay = 0.05
    retry = False
    while True:
        if retry and landed is not None and landed():
            raise Landed(f"{method} {url}")
        retry = True
        try:
            response = await client.request(method, url, **kwargs)
            if response.status_code not in TRANSIENT:
                return response
            problem: str = f"HTTP {response.status_code}"
        except TransportError as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if time.monotonic() + delay > deadline:
            raise TransportError(f"{method} {url}: {problem} (gave up after {patience:.0f}s)")
        if stats is not None:
            stats.retries += 1
            stats.retry_kinds[problem[:120]] += 1
        await asyncio.sleep(delay)
        delay = min(2.0, delay * 2)


def _message(response: Response) -> str:
    try:
        body = response.json()
        text = body.get("message") if isinstance(body, dict) else None
    except ValueError:
        text = None
    return f"HTTP {response.status_code}: {text or response.text[:200]}"


async def _bounded(items: list[Any], limit: int, work: Callable[[Any], Awaitable[None]]) -> None:
    queue: deque[Any] = deque(items)

    async def worker() -> None:
        while queue:
            await work(queue.popleft())

    await asyncio.gather(*(worker() for _ in range(max(1, min(limit, len(items))))))


async def setup(
    client: HttpClient,
    plan: LoadPlan,
    run: str,
    *,
    concurrency: int,
    on_node: Callable[[], None] = lambda: None,
    on_pod: Callable[[], None] = lambda: None,
) -> dict[str, str]:
    """Namespace, simulated nodes, then pods bound to them; returns pod name → uid."""
    ns = plan.namespace
    r = await request(client, "POST", "/api/v1/namespaces", json={"metadata": {"name": ns}})
    if r.status_code not in (201, 409):
        raise SetupError(f"creating namespace {ns}: {_message(r)}")

    async def node(n: Any) -> None:
        r = await request(client, "POST", "/api/v1/nodes", json=n.to_k8s(run))
        if r.status_code not in (201, 409):
            raise SetupError(f"creating node {n.name}: {_message(r)}")
        on_node()

    uids: dict[str, str] = {}

    async def pod(p: Any) -> None:
        base = f"/api/v1/namespaces/{ns}/pods"
        r = await request(client, "POST", base, json=p.to_k8s())
        if r.status_code == 409:  # an earlier attempt landed
            r = await request(client, "GET", f"{base}/{p.name}")
        if r.status_code not in (200, 201):
            raise SetupError(f"creating pod {ns}/{p.name}: {_message(r)}")
        uids[p.name] = r.json()["metadata"]["uid"]
        on_pod()

    await _bounded(list(plan.nodes), concurrency, node)
    await _bounded(list(plan.pods), concurrency, pod)
    return uids


# --- injecting --------------------------------------------------------------------------------


class Driver:
    """Sends every planned resize (in plan order, one per pod at a time) until all are sent
    or the deadline passes."""

    def __init__(
        self,
        plan: LoadPlan,
        chains: Chains,
        *,
        mode: Mode,
        rate: float | None,
        concurrency: int,
        client: HttpClient | None = None,
        producer: EventProducer | None = None,
        uids: dict[str, str] | None = None,
        batch: int = 500,
        patience: float = 60.0,
        landed: Callable[[str], bool] = lambda cid: False,
    ) -> None:
        """`landed(cid)`: whether the log has the resize `cid` (the tracker saw it)."""
        if mode == "api" and client is None:
            raise ValueError("api mode needs an HTTP client")
        if mode == "log" and (producer is None or uids is None):
            raise ValueError("log mode needs a producer and the pods' uids")
        self.plan = plan
        self.chains = chains
        self.mode = mode
        self.pacer = Pacer(rate)
        self.concurrency = concurrency
        self.client = client
        self.producer = producer
        self.uids = uids or {}
        self.batch = batch if not rate else max(1, min(batch, int(rate * 0.05)))
        self.patience = patience
        self.landed = landed
        self.stats = DriverStats()
        self._done = asyncio.Event()

    def _account(self) -> None:
        handled = self.stats.sent + self.stats.errors + self.chains.skipped
        if handled >= self.chains.total:
            self._done.set()

    async def run(self, deadline: float) -> None:
        """Inject until everything is sent or `deadline` (monotonic) passes."""
        if self.chains.total == 0:
            return
        if self.mode == "api":
            tasks = [asyncio.create_task(self._api_worker()) for _ in range(self.concurrency)]
        else:
            tasks = [asyncio.create_task(self._log_loop())]
        waiter = asyncio.create_task(self._done.wait())
        try:
            await asyncio.wait(
                [waiter, *tasks],
                timeout=max(0.0, deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in tasks:
                if task.done() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        finally:
            waiter.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(waiter, *tasks, return_exceptions=True)
        self.stats.skipped = self.chains.total - self.stats.sent - self.stats.errors

    # --- api ---------------------------------------------------------------------------------

    async def _api_worker(self) -> None:
        assert self.client is not None
        ns = self.plan.namespace
        while True:
            resize = await self.chains.ready.get()
            cid = self.chains.take(resize)
            await self.pacer.wait()
            started = time.monotonic()
            self.stats.sent_at[cid] = time.time()
            try:
                r = await request(
                    self.client,
                    "PATCH",
                    f"/api/v1/namespaces/{ns}/pods/{resize.pod}/resize",
                    stats=self.stats,
                    patience=self.patience,
                    json=resize.patch(),
                    headers={"content-type": SMP, "x-correlation-id": cid},
                    landed=functools.partial(self.landed, cid),
                )
            except Landed:  # the apiserver wrote it, then died before it answered
                self.stats.sent += 1
                self.stats.confirmed.add(cid)
            except TransportError as exc:
                self.stats.error(str(exc).split(": ", 1)[-1])
                self.chains.abandon(cid)
            else:
                if r.status_code == 200:
                    self.stats.sent += 1
                    self.stats.confirmed.add(cid)
                    self.stats.request_seconds.append(time.monotonic() - started)
                else:
                    self.stats.error(_message(r))
                    self.chains.abandon(cid)
            self._account()

    # --- log ---------------------------------------------------------------------------------

    def envelope(self, resize: ResizePlan, cid: str) -> Envelope:
        payload = ev.ResizeProposed(
            namespace=self.plan.namespace,
            name=resize.pod,
            uid=self.uids[resize.pod],
            containers=[
                ev.ContainerResources(
                    name=CONTAINER,
                    resources=ResourceRequirements.model_validate(resize.after.requirements()),
                )
            ],
        )
        return Envelope.wrap(payload, producer=PRODUCER, correlation_id=cid)

    async def _log_loop(self) -> None:
        assert self.producer is not None
        while True:
            items = [await self.chains.ready.get()]
            while len(items) < self.batch and not self.chains.ready.empty():
                items.append(self.chains.ready.get_nowait())
            await self.pacer.wait(len(items))
            now = time.time()
            envelopes = []
            for resize in items:
                cid = self.chains.take(resize)
                self.stats.sent_at[cid] = now
                envelopes.append(self.envelope(resize, cid))
            await self.producer.publish_many(envelopes)
            self.stats.sent += len(envelopes)
            self.stats.confirmed.update(e.correlation_id for e in envelopes)
            self._account()
