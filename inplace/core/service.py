"""What every role process shares: /healthz, /readyz, /metrics, logging and clean shutdown.

A role is a set of async loops plus optional HTTP routes; `RoleServer.run` serves them on one
event loop until SIGTERM/SIGINT, then cancels the loops and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from inplace.core.bus.consumer import DeadLetters, EventConsumer, Record
from inplace.core.bus.producer import EventProducer
from inplace.core.observability import gcpauses
from inplace.core.security.authn import Authenticator
from inplace.core.security.credentials import Credentials
from inplace.core.security.guard import (
    RequireCaller,
    caller_of,
    may_read_metrics,
    unauthorized,
)
from inplace.core.security.tls import serving_tls
from inplace.core.settings import Settings

log = logging.getLogger(__name__)

# How long an idle keep-alive connection stays open. Longer than clients keep theirs (Go's
# http.Transport, client-go's and so kubectl's, closes idle ones after 90 s): a client must
# never reuse a connection the server is closing at that instant, or a POST fails with EOF
# (uvicorn's default, 5 s, met `kubectl drain`'s retry every 5 s exactly).
KEEP_ALIVE_S = 120

Loop = Callable[[], Coroutine[Any, Any, None]]


def configure_logging(level: str, role: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format=f"%(asctime)s {role} %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("aiokafka").setLevel(logging.WARNING)


class RoleServer:
    """`callers`: who may call the role's own `routes` (users or groups, checked when the
    role serves HTTPS); None leaves them to the role (the apiserver authorizes per request)."""

    def __init__(
        self,
        role: str,
        settings: Settings,
        *,
        host: str,
        port: int,
        routes: Sequence[BaseRoute] = (),
        ready: Callable[[], bool] = lambda: True,
        callers: frozenset[str] | None = None,
    ) -> None:
        self.role = role
        self.host = host
        self.port = port
        self.gc_young_every = settings.gc_young_every_ms / 1000
        self.gc_full_every = float(settings.gc_full_every_s)
        self._ready = ready
        self._tasks: list[asyncio.Task[None]] = []
        self.tls = serving_tls(settings.credentials_dir(), settings.insecure_http, host, role)
        # Who is calling: a client certificate from the cluster CA or a token (HTTPS only).
        self._authenticator = (
            Authenticator(Credentials(self.tls.client_ca_file.parent).read_tokens())
            if self.tls is not None
            else None
        )
        own: list[BaseRoute] = list(routes)
        if own and callers is not None and self._authenticator is not None:
            guarded = RequireCaller(Starlette(routes=own), self._authenticator, callers, role)
            own = [Mount("", app=guarded)]
        self.app = Starlette(
            routes=[
                Route("/healthz", self._healthz),
                Route("/livez", self._healthz),
                Route("/readyz", self._readyz),
                Route("/metrics", self._metrics),
                *own,
            ]
        )

    def _listen(self) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP, not socket.create_server's protocol 0: asyncio turns Nagle's algorithm
        # off (TCP_NODELAY) only on sockets that say they are TCP, and accepted connections
        # inherit the listener's protocol. With Nagle on, a response written in two pieces
        # (uvicorn writes the headers, then the body) waited for the client's delayed ACK:
        # ~40 ms on every answer (PATCH …/resize p50 59 ms of which 43 after the handler).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # as socket.create_server: IPv6 only
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((self.host, self.port))
            sock.listen(socket.SOMAXCONN)
        except OSError as exc:
            sock.close()
            raise RuntimeError(
                f"{self.role}: cannot listen on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from None
        return sock

    async def _healthz(self, request: Request) -> Response:
        dead = [t.get_name() for t in self._tasks if t.done()]
        if dead:
            return JSONResponse({"status": "failed", "stopped": dead}, status_code=503)
        return PlainTextResponse("ok")

    async def _readyz(self, request: Request) -> Response:
        if self._ready():
            return PlainTextResponse("ok")
        return PlainTextResponse("not ready", status_code=503)

    async def _metrics(self, request: Request) -> Response:
        caller, bad_credentials = caller_of(request.scope, self._authenticator)
        peer = request.client.host if request.client is not None else None
        if not may_read_metrics(peer, caller, bad_credentials=bad_credentials):
            return unauthorized()
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    async def run(self, loops: dict[str, Loop]) -> None:
        """Serve HTTP and run the loops until a signal; a loop that crashes stops the role."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        gcpauses.GcPauses().install()
        with gcpauses.policy(self.gc_young_every, self.gc_full_every):
            await self._serve(loops, stop)

    async def _serve(self, loops: dict[str, Loop], stop: asyncio.Event) -> None:
        # Bound here, before any loop starts: a taken port is a one-line error and exit 1
        # (uvicorn would sys.exit from inside its task, with a traceback).
        listener = self._listen()
        tls = self.tls.uvicorn_options() if self.tls else {}
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            log_level="warning",
            lifespan="off",
            timeout_keep_alive=KEEP_ALIVE_S,
            **tls,
        )
        server = uvicorn.Server(config)
        server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        http = asyncio.create_task(server.serve(sockets=[listener]), name="http")
        self._tasks = [asyncio.create_task(fn(), name=name) for name, fn in loops.items()]
        scheme = "https" if self.tls else "http"
        loop_kind = type(asyncio.get_running_loop()).__module__.split(".")[0]  # uvloop / asyncio
        log.info(
            "%s serving on %s://%s:%d (%s)", self.role, scheme, self.host, self.port, loop_kind
        )
        waiter = asyncio.create_task(stop.wait(), name="signal")
        done, _ = await asyncio.wait([waiter, http, *self._tasks], return_when="FIRST_COMPLETED")
        if waiter not in done:  # say why a role ends without a signal
            log.warning("%s: %s ended first", self.role, ", ".join(t.get_name() for t in done))
        failed = [t for t in done if t is not waiter and t.exception() is not None]
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await http
        waiter.cancel()
        if failed:
            exc = failed[0].exception()
            raise RuntimeError(f"{self.role}: loop {failed[0].get_name()} failed: {exc}") from exc
        log.info("%s stopped", self.role)


Handler = Callable[[Record], Coroutine[Any, Any, None]]


async def follow(
    settings: Settings, *, role: str, topics: Sequence[str], handle: Handler, ready: list[bool]
) -> None:
    """Consume `topics` as consumer group `role`, hand each record to `handle`, commit after
    each batch (at-least-once: handlers are idempotent, keyed by the causing event id)."""
    producer = EventProducer(
        settings.kafka_bootstrap, client_id=role, topic_prefix=settings.topic_prefix
    )
    await producer.start()
    consumer = EventConsumer(
        settings.kafka_bootstrap,
        role=role,
        topics=[settings.topic(t) for t in topics],
        dead_letters=DeadLetters(producer, role),
    )
    await consumer.start()
    ready[0] = True
    try:
        async for batch in consumer.batches():
            for record in batch.records:
                await handle(record)
            if batch:
                await consumer.commit()
    finally:
        ready[0] = False
        await consumer.stop()
        await producer.stop()


async def _ignore(record: Record) -> None:
    return None


async def run_consumer_role(
    settings: Settings,
    *,
    role: str,
    topics: Sequence[str],
    host: str,
    port: int,
    handle: Handler = _ignore,
) -> None:
    """A role that follows its input topics as a consumer group, with health and metrics."""
    ready = [False]
    server = RoleServer(role, settings, host=host, port=port, ready=lambda: ready[0])
    await server.run(
        {"consume": lambda: follow(settings, role=role, topics=topics, handle=handle, ready=ready)}
    )
