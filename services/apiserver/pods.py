"""Pods: create, get, list/watch, delete, update, and the `resize` subresource (KEP-1287)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from inplace.core.projection.entries import list_key
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.k8s import Pod
from schemas.resources import is_sidecar, qos_class
from services.apiserver import dryrun, errors, eviction
from services.apiserver.admission import AdmissionClient, AdmissionDenied
from services.apiserver.defaulting import default_pod_json
from services.apiserver.deletions import deletion
from services.apiserver.disruption import evict_check
from services.apiserver.fielderrors import invalid_status
from services.apiserver.http import (
    applied_new_object,
    apply_config,
    check_kind,
    decode,
    decode_checked,
    is_apply,
    list_or_watch,
    not_older_than,
    ok,
    ok_object,
    parse_json,
    read_body,
    read_object,
    server_side_apply_request,
    wants_table,
    warn,
)
from services.apiserver.namespaces import admit_content
from services.apiserver.paging import Listing
from services.apiserver.patching import JSON_PATCH, PatchError, apply_patch
from services.apiserver.refusals import refused_by
from services.apiserver.validation import (
    default_pod,
    resize_patch_base,
    resize_view,
    validate_pod_create,
    validate_pod_resize,
    validate_pod_update,
)
from services.apiserver.writer import Writer

KIND = "Pod"
POD_DEFINITION = "io.k8s.api.core.v1.Pod"


class PodHandlers:
    def __init__(self, model: ReadModel, writer: Writer, admission: AdmissionClient) -> None:
        self.model = model
        self.writer = writer
        self.admission = admission

    # --- helpers ----------------------------------------------------------------------------

    def _pod(self, namespace: str, name: str) -> Pod:
        pod = self.model.get("pods", (namespace, name))
        if pod is None:
            raise errors.not_found(KIND, name)
        return pod

    def _current(self, namespace: str, name: str, code: int = 200) -> Response:
        """The pod as stored: its JSON, served without decoding it (in a dry run, the pod the
        write would have made)."""
        would_be = dryrun.result("pods", (namespace, name), None)
        if would_be is not None:
            return ok(would_be.to_k8s(), code)
        raw = self.model.pods.json((namespace, name))
        if raw is None:
            raise errors.not_found(KIND, name)
        return Response(raw, status_code=code, media_type="application/json")

    @staticmethod
    def _correlation(request: Request) -> str | None:
        return request.headers.get("x-correlation-id") or None

    # --- collection -------------------------------------------------------------------------

    async def list(self, request: Request) -> Response:
        namespace = request.path_params.get("namespace")
        await not_older_than(request, self.model, "pods")
        pods = self.model.pods
        keys = sorted(list_key(k) for k in pods if namespace is None or k[0] == namespace)

        def fetch(i: int) -> dict[str, Any]:
            # Parsed from the stored JSON (cheaper than decoding into models), and only the
            # pods a page looks at.
            ns, _, name = keys[i].partition("/")
            parsed: dict[str, Any] = json.loads(pods.json((ns, name)) or b"{}")
            return parsed

        listing = Listing(keys, fetch)
        return list_or_watch(request, self.model.collections["pods"], listing, "PodList", namespace)

    async def create(self, request: Request) -> Response:
        namespace = request.path_params["namespace"]
        return await self._create(request, namespace, await read_object(request))

    async def _create(self, request: Request, namespace: str, data: Any) -> Response:
        check_kind(data, KIND)
        pod = decode_checked(request, Pod, data, KIND, _name_in(data), default_pod_json)
        if pod.metadata.namespace not in (None, namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match "
                "the namespace sent on the request"
            )
        pod.metadata.namespace = namespace
        if not pod.metadata.name and pod.metadata.generate_name:
            pod.metadata.name = pod.metadata.generate_name + uuid.uuid4().hex[:5]
        pod.metadata.uid = str(uuid.uuid4())
        pod.metadata.resource_version = None
        pod.metadata.creation_timestamp = None
        pod.status = Pod().status  # status is the kubelet's, never the creator's
        pod = default_pod(pod)
        problems = validate_pod_create(pod)
        if problems:
            raise errors.ApiError(invalid_status(KIND, pod.metadata.name or "", problems))
        name = pod.metadata.name or ""
        admit_content(self.model, self.writer, namespace, KIND, name)
        async with self.writer.lock(("pods", namespace, name)):
            if self.model.get("pods", (namespace, name)) is not None:
                raise errors.already_exists(KIND, name)
            pod = await self.admission.admit_pod("CREATE", pod)
            # QoS comes from the resources after mutating admission (LimitRange defaults),
            # as Kubernetes' PrepareForCreate computes it.
            pod.status.qos_class = qos_class(pod)
            await self.writer.commit(
                ev.PodCreated(namespace=namespace, name=name, uid=pod.metadata.uid or "", pod=pod),
                self._correlation(request),
            )
        return self._current(namespace, name, 201)

    # --- one pod ----------------------------------------------------------------------------

    async def get(self, request: Request) -> Response:
        await not_older_than(request, self.model, "pods")
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        if wants_table(request) is None:
            return self._current(namespace, name)
        return ok_object(request, self._pod(namespace, name).to_k8s())

    async def delete(self, request: Request) -> Response:
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        body = await read_body(request)
        options = parse_json(body) if body.strip() else {}  # DeleteOptions, if any
        async with self.writer.lock(("pods", namespace, name)):
            pod = self._pod(namespace, name)
            eviction.check_preconditions(options if isinstance(options, dict) else {}, pod)
            final = pod.to_k8s()
            await self.writer.commit(
                ev.PodDeleted(namespace=namespace, name=name, uid=pod.metadata.uid or ""),
                self._correlation(request),
            )
        return ok(final)

    async def evict(self, request: Request) -> Response:
        """POST …/eviction (eviction.py): when the pod's disruption budget allows it, the
        disruption counted in the budget's status and the pod deleted, as a DELETE deletes it."""
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        data = await read_object(request)
        async with (
            self.writer.lock(eviction.budget_lock(namespace)),
            self.writer.lock(("pods", namespace, name)),
        ):
            pod = self._pod(namespace, name)
            dry_run = eviction.admitted(data, name, pod)
            await self._spend_disruption(pod, dry_run)
            if not dry_run:
                await self.writer.commit(
                    deletion("pods", (namespace, name), pod), self._correlation(request)
                )
        return ok(eviction.SUCCESS, 201)

    async def _spend_disruption(self, pod: Pod, dry_run: bool) -> None:
        """Ask the pod's budget (evict_check) and, when the eviction uses one of its
        disruptions, write that first, on the condition that the budget is still the one
        read (Writer.update: decided again when another replica's write came first)."""
        namespace = pod.metadata.namespace or ""

        def decide() -> ev.PodDisruptionBudgetStatusChanged | None:
            budgets = [
                budget
                for (ns, _), budget in self.model.objects("poddisruptionbudgets").items()
                if ns == namespace
            ]
            verdict = evict_check(pod, budgets, datetime.now(UTC))
            if not verdict.allowed:
                raise eviction.refusal(verdict)
            written = verdict.budget
            if dry_run or written is None:
                return None
            return ev.PodDisruptionBudgetStatusChanged(
                namespace=namespace,
                name=written.metadata.name or "",
                status=written.status,
                precondition=written.metadata.resource_version,
            )

        await self.writer.update(decide, "PodDisruptionBudget")

    async def update(self, request: Request) -> Response:
        """PUT/PATCH of the pod itself: labels, annotations and images; resources only via
        the resize subresource (Kubernetes refuses them here)."""
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        body = await read_body(request)
        if is_apply(request) and self.model.get("pods", (namespace, name)) is None:
            # Server-side apply of a new object creates it, owned by its field manager.
            config = apply_config(body, KIND)
            result = server_side_apply_request(request, {}, config, definition=POD_DEFINITION)
            return await self._create(request, namespace, applied_new_object(config, result.merged))

        def decide() -> ev.PodUpdated | None:
            """The update of the pod as this replica holds it now (None: a no-op)."""
            old = self._pod(namespace, name)
            managed = None
            if is_apply(request):
                config = apply_config(body, KIND)
                result = server_side_apply_request(
                    request, old.to_k8s(), config, definition=POD_DEFINITION
                )
                managed = result.merged["metadata"]["managedFields"]
                new = decode_checked(request, Pod, result.merged, KIND, name, default_pod_json)
            else:
                new = self._incoming(request, old, body)
            problems = validate_pod_update(old, new)
            if problems:
                raise errors.ApiError(invalid_status(KIND, name, problems))
            images = {
                c.name: c.image or ""
                for c in [*new.spec.containers, *(new.spec.init_containers or [])]
            }
            changed = (
                new.metadata.labels != old.metadata.labels
                or new.metadata.annotations != old.metadata.annotations
                or any(
                    c.image != images[c.name]
                    for c in [*old.spec.containers, *(old.spec.init_containers or [])]
                )
                or (managed is not None and managed != old.metadata.managed_fields)
            )
            if not changed:
                return None
            return ev.PodUpdated(
                namespace=namespace,
                name=name,
                uid=old.metadata.uid or "",
                labels=new.metadata.labels,
                annotations=new.metadata.annotations,
                images=images,
                managed_fields=managed,
                precondition=old.metadata.resource_version,  # decided from the version read
            )

        async with self.writer.lock(("pods", namespace, name)):
            await self.writer.update(decide, KIND, self._correlation(request))
        return self._current(namespace, name)

    async def status(self, request: Request) -> Response:
        return self._current(request.path_params["namespace"], request.path_params["name"])

    async def log(self, request: Request) -> Response:
        """pods/log, as `kubectl logs` reads it. The runtimes run no workload (the fake one
        keeps records, the cgroup one parks a sleep in each container's cgroup), so a started
        container's log is empty, and a Warning says why; the refusals are kube-apiserver's."""
        pod = self._pod(request.path_params["namespace"], request.path_params["name"])
        _started_container(pod, request.query_params.get("container"))
        warn(request, ["inplace runs no workload in its containers: they write no log"])
        return Response(b"", media_type="text/plain")

    async def connect(self, request: Request) -> Response:
        """pods/exec, pods/attach and pods/portforward (`kubectl exec`, `attach`,
        `port-forward`): the pod and its container checked as kube-apiserver checks them,
        then a 400 that says why: the runtimes run no workload, so there is no process to
        connect to (it was a 404, "the server could not find the requested resource")."""
        name = request.path_params["name"]
        pod = self._pod(request.path_params["namespace"], name)
        what = request.url.path.rsplit("/", 1)[-1]
        if what != "portforward":
            _started_container(pod, request.query_params.get("container"))
        raise errors.bad_request(
            f"pods/{what} is not supported: inplace runs no workload in its containers, "
            f"so pod {name} has no process to connect to"
        )

    # --- resize subresource -----------------------------------------------------------------

    async def resize(self, request: Request) -> Response:
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        if request.method == "GET":
            return self._current(namespace, name)
        body = await read_body(request)
        async with self.writer.lock(("pods", namespace, name)):
            old = self._pod(namespace, name)
            managed = None
            if is_apply(request):  # a controller (VPA-like) owning the resources it sets
                config = apply_config(body, KIND)
                result = server_side_apply_request(
                    request, old.to_k8s(), config, definition=POD_DEFINITION, subresource="resize"
                )
                managed = result.merged["metadata"]["managedFields"]
                patched = decode(Pod, result.merged, KIND)
            else:
                # Only resources and resizePolicy are taken from the body (resize_view), so
                # the rest is neither schema-checked nor kept: the hot path decodes what it uses.
                patched = self._incoming(request, old, body, check_schema=False, resize=True)
            desired = resize_view(old, patched)
            problems = validate_pod_resize(old, desired)
            if problems:
                error = errors.ApiError(invalid_status(KIND, name, problems))
                raise await self._refused(desired, error, request)
            if _resources_of(desired) == _resources_of(old):
                return self._current(namespace, name)  # nothing to resize: a no-op, like K8s
            try:
                desired = await self.admission.admit_pod("UPDATE", desired, old, "resize")
            except errors.ApiError as exc:
                if exc.code in (403, 422):  # quota / LimitRange said no
                    raise await self._refused(desired, exc, request) from None
                raise
            proposal = _proposal(desired)
            proposal.managed_fields = managed
            await self.writer.commit(proposal, self._correlation(request))
        return self._current(namespace, name)

    async def _refused(
        self, desired: Pod, error: errors.ApiError, request: Request
    ) -> errors.ApiError:
        """Record a refused resize on the log (who asked, what, why: `inplace explain`), then
        hand the error back to be raised."""
        status = error.status
        proposal = _proposal(desired)
        # The policy's facts come only from the webhook's reply; a validation 422 has none.
        quota, limit_range = refused_by(
            error.refusal if isinstance(error, AdmissionDenied) else None
        )
        refused = ev.ResizeRefused(
            namespace=proposal.namespace,
            name=proposal.name,
            uid=proposal.uid,
            code=error.code,
            reason=status.reason or "",
            message=status.message or "",
            containers=proposal.containers,
            quota=quota,
            limit_range=limit_range,
        )
        await self.writer.commit(refused, self._correlation(request))
        return error

    def _incoming(
        self,
        request: Request,
        old: Pod,
        body: bytes,
        *,
        check_schema: bool = True,
        resize: bool = False,
    ) -> Pod:
        """The object the client wants: PUT's body, or the patch applied to the current pod;
        a stale metadata.resourceVersion is a 409 Conflict. `resize`: only the resize view
        is taken from it, so a merge patch applies to the part of the pod it reads."""
        if request.method == "PUT":
            data: Any = parse_json(body)
            check_kind(data, KIND)
        else:
            content_type = request.headers.get("content-type", "").split(";")[0].strip()
            partial = resize and content_type.lower() != JSON_PATCH
            try:
                base = resize_patch_base(old) if partial else old.to_k8s()
                data = apply_patch(base, body, content_type)
            except PatchError as exc:
                raise errors.ApiError(exc.status()) from None
        name = old.metadata.name or ""
        new = (
            decode_checked(request, Pod, data, KIND, name, default_pod_json)
            if check_schema
            else decode(Pod, data, KIND)
        )
        if new.metadata.name not in (None, name) or new.metadata.namespace not in (
            None,
            old.metadata.namespace,
        ):
            raise errors.bad_request(
                "the name or namespace of the object does not match the request"
            )
        rv = new.metadata.resource_version
        if rv and rv != old.metadata.resource_version:
            raise errors.stale(KIND, name)
        if request.method == "PUT" and not rv:
            raise errors.ApiError(invalid_status(KIND, name, _rv_required()))
        return new


def _name_in(data: Any) -> str:
    meta = data.get("metadata") if isinstance(data, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def _rv_required() -> list[Any]:
    from services.apiserver.fielderrors import FieldError

    return [
        FieldError(
            type="FieldValueInvalid",
            field="metadata.resourceVersion",
            bad_value="",
            detail="must be specified for an update",
        )
    ]


def _resources_of(pod: Pod) -> tuple[Any, list[Any]]:
    """What a resize can change: pod-level resources, and each resizable container's."""
    containers = [
        *pod.spec.containers,
        *(c for c in pod.spec.init_containers or [] if is_sidecar(c)),
    ]
    pod_level = pod.spec.resources.to_k8s() if pod.spec.resources is not None else None
    return pod_level, [
        (c.name, c.resources.to_k8s(), [p.to_k8s() for p in c.resize_policy or []])
        for c in containers
    ]


def _proposal(pod: Pod) -> ev.ResizeProposed:
    def desired(containers: list[Any]) -> list[ev.ContainerResources]:
        return [
            ev.ContainerResources(name=c.name, resources=c.resources, resize_policy=c.resize_policy)
            for c in containers
        ]

    return ev.ResizeProposed(
        **ev.pod_ids(pod),
        containers=desired(pod.spec.containers),
        init_containers=desired([c for c in pod.spec.init_containers or [] if is_sidecar(c)]),
        pod_resources=pod.spec.resources,
    )


def _started_container(pod: Pod, container: str | None) -> str:
    """The container a pods/log or pods/exec request names (the only one when it names none),
    once started; a 400 as kube-apiserver words it otherwise."""
    name = pod.metadata.name
    if container is None:
        if len(pod.spec.containers) != 1:
            names = " ".join(c.name for c in pod.spec.containers)
            raise errors.bad_request(
                f"a container name must be specified for pod {name}, choose one of: [{names}]"
            )
        container = pod.spec.containers[0].name
    if container not in {c.name for c in [*pod.spec.containers, *(pod.spec.init_containers or [])]}:
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    statuses = [*(pod.status.container_statuses or []), *(pod.status.init_container_statuses or [])]
    state = next((s.state for s in statuses if s.name == container), None)
    if state is None or (state.running is None and state.terminated is None):
        raise errors.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
        )
    return container
