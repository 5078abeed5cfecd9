"""Pod defaulting and validation, with Kubernetes' rules, field paths and messages.

Pure functions over `schemas.k8s.Pod`; nothing here does I/O or raises for a well-typed pod.
They follow kube-apiserver (pkg/apis/core/v1/defaults.go, pkg/apis/core/validation, the pod
registry strategies) at v1.34, where in-place resize (KEP-1287) is beta and on by default:

- `default_pod`: SetDefaults_Pod / PodSpec / Container / ResourceList, plus the phase and QoS
  class the create strategy records.
- `validate_pod_create`: ValidatePodCreate (the parts our Pod model can express).
- `validate_pod_update`: ValidatePodUpdate; resources are immutable here, as in Kubernetes.
- `validate_pod_resize`: ValidatePodResize, for the `/resize` subresource.
- `resize_view`: the resize strategy's PrepareForUpdate (only resources and resizePolicy are
  taken from the request; every other change is dropped, as kube-apiserver drops it).

The apiserver's resize flow is::

    patched = Pod.from_k8s(apply_patch(old.to_k8s(), body, content_type))  # or the PUT body
    desired = resize_view(old, patched)
    errors = validate_pod_resize(old, desired)

Deliberate differences from Kubernetes, each noted where it happens:

- Kubernetes reports some resize and update errors against the whole `spec` (its own TODO asks
  to pinpoint the field); here they name the exact field, with Kubernetes' message text.
- Adding a resource other than cpu/memory through `/resize` is refused even when the container
  had no requests (or limits) at all; Kubernetes lets that case through by accident.
- `resizePolicy` may change through `/resize` (KEP-1287 as written; Kubernetes v1.33+ made it
  immutable after creation).
- The diff after "pod updates may not change fields other than ..." lists changed paths, not
  Go's `cmp.Diff` output; `terminationGracePeriodSeconds` is not required before defaulting.
- `metadata.resourceVersion` is left to the caller (optimistic concurrency).
- A bound pod in phase Running whose container statuses report `resources` nowhere is refused
  as running on a kubelet without resize support; Kubernetes only asks a running container.
- Memory limits may decrease (Kubernetes v1.34; v1.33 refused that with NotRequired).

Update and resize validate the new pod as kube-apiserver decodes it: defaulted, with the name,
namespace and uid the request left out taken from the stored pod.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from schemas.k8s import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    Container,
    ContainerResizePolicy,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    Pod,
    ResourceList,
    ResourceRequirements,
)
from schemas.quantity import ZERO, Quantity, QuantityError
from schemas.resources import (
    aggregate_container_limits,
    aggregate_container_requests,
    is_pod_level_resource,
    is_sidecar,
    qos_class,
)
from services.apiserver.fielderrors import (
    ROOT,
    FieldError,
    Verbatim,
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    key,
    not_supported,
    required,
    too_long,
)

__all__ = [
    "MIRROR_POD_ANNOTATION",
    "SET_OPERATORS",
    "UPDATABLE_POD_SPEC_FIELDS",
    "default_pod",
    "is_label_value",
    "is_qualified_name",
    "regex_error",
    "resize_view",
    "set_operator_values",
    "validate_labels",
    "validate_node_affinity_and_tolerations",
    "validate_pod_create",
    "validate_pod_resize",
    "validate_pod_update",
]

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_SCHEDULER_NAME = "default-scheduler"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

# ValidatePodUpdate's message lists these, joined with "," (no space), as Kubernetes does.
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)

_CPU_MEMORY = (RESOURCE_CPU, RESOURCE_MEMORY)
_RESIZE_POLICY_NAMES = ("NotRequired", "RestartContainer")
_HUGEPAGES_PREFIX = "hugepages-"
_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_STANDARD_CONTAINER_RESOURCES = frozenset(
    {RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE}
)
_STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")


# --- string formats (k8s.io/apimachinery/pkg/util/validation) -----------------------------------


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """`RegexError`; Kubernetes' own double space before each ` or` is kept."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    quoted = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {quoted}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _byte_len(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_PORT_NAME_CHARSET_RE = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER_RE = re.compile("[a-z]")


def _is_dns1123_label(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > 63:
        errs.append(_max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def _is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > 253:
        errs.append(_max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in _is_dns1123_subdomain(prefix))
    else:
        example = regex_error(
            _QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"
        )
        return [
            f"a qualified name {example} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > 63:
        errs.append("name part " + _max_len_error(63))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > 63:
        errs.append(_max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]


def _is_valid_port_name(port: str) -> list[str]:
    errs = []
    if _byte_len(port) > 15:
        errs.append(_max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER_RE.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _is_relaxed_env_var_name(value: str) -> list[str]:
    errs = []
    if not value:
        errs.append("environment variable name must be non-empty")
    if any(ord(c) > 127 or not c.isprintable() or c == "=" for c in value):
        errs.append(
            "a valid environment variable name must consist only of printable ASCII characters "
            "other than '='"
        )
    return errs


def _name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    """`NameIsDNSSubdomain`: a generateName prefix may end with '-'."""
    if prefix and len(name) > 1 and name.endswith("-"):
        name = name[:-1] + "a"
    return _is_dns1123_subdomain(name)


# --- resource names (pkg/apis/core/helper) ------------------------------------------------------


def _is_hugepages(name: str) -> bool:
    return name.startswith(_HUGEPAGES_PREFIX)


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    if _is_native(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not _is_hugepages(name)


def _is_standard_resource(name: str) -> bool:
    return (
        name in _STANDARD_RESOURCES
        or _is_hugepages(name)
        or name.startswith("requests." + _HUGEPAGES_PREFIX)
    )


def _validate_resource_name(name: str, path: str) -> list[FieldError]:
    errs = [invalid(path, Verbatim(name), msg) for msg in is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name and not _is_standard_resource(name):
        return [
            invalid(path, Verbatim(name), "must be a standard resource type or fully qualified")
        ]
    return errs


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    errs = _validate_resource_name(name, path)
    if "/" not in name:
        if not (name in _STANDARD_CONTAINER_RESOURCES or _is_hugepages(name)):
            errs.append(invalid(path, Verbatim(name), "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(invalid(path, Verbatim(name), "doesn't follow extended resource name standard"))
    return errs


def _validate_pod_resource_name(name: str, path: str) -> list[FieldError]:
    """`validatePodResourceName`: cpu, memory and hugepages-* only."""
    errs = _validate_resource_name(name, path)
    if errs:
        return errs
    if not is_pod_level_resource(name):
        return [not_supported(path, name, ["cpu", "hugepages-", "memory"])]
    return []


def _validate_quantity_value(name: str, quantity: Quantity, path: str) -> list[FieldError]:
    errs = []
    if quantity < ZERO:
        errs.append(invalid(path, str(quantity), "must be greater than or equal to 0"))
    if _is_extended(name) and quantity.milli_value() % 1000 != 0:
        errs.append(invalid(path, quantity, "must be an integer"))
    return errs


def _hugepage_value_error(name: str, quantity: Quantity) -> str | None:
    """`validateResourceQuantityHugePageValue`: a multiple of the page size in the name."""
    try:
        page = Quantity(name[len(_HUGEPAGES_PREFIX) :])
    except (QuantityError, ValueError, TypeError):
        page = ZERO
    divisible = (
        ZERO < page and page.milli_value() % 1000 == 0 and quantity.value() % page.value() == 0
    )
    return None if divisible else f"{quantity} is not positive integer multiple of {name}"


def _validate_resource_requirements(
    requirements: ResourceRequirements, path: str, *, pod_level: bool = False
) -> list[FieldError]:
    """`ValidateContainerResourceRequirements` (maps are walked in sorted key order), or with
    `pod_level` the same rules over pod-level resource names (`validatePodResources`)."""
    check_name = _validate_pod_resource_name if pod_level else _validate_container_resource_name
    errs: list[FieldError] = []
    limits: ResourceList = requirements.limits or {}
    requests: ResourceList = requirements.requests or {}
    lim_path, req_path = child(path, "limits"), child(path, "requests")
    has_cpu_memory = has_hugepages = False
    for name in sorted(limits):
        quantity, fld = limits[name], key(lim_path, name)
        errs += check_name(name, fld)
        errs += _validate_quantity_value(name, quantity, fld)
        if _is_hugepages(name):
            has_hugepages = True
            if (message := _hugepage_value_error(name, quantity)) is not None:
                errs.append(invalid(fld, str(quantity), message))
        has_cpu_memory = has_cpu_memory or name in _CPU_MEMORY
    for name in sorted(requests):
        quantity, fld = requests[name], key(req_path, name)
        errs += check_name(name, fld)
        errs += _validate_quantity_value(name, quantity, fld)
        if name in limits:
            limit = limits[name]
            if quantity != limit and not _overcommit_allowed(name):
                errs.append(
                    invalid(req_path, str(quantity), f"must be equal to {name} limit of {limit}")
                )
            elif limit < quantity:
                errs.append(
                    invalid(
                        req_path,
                        str(quantity),
                        f"must be less than or equal to {name} limit of {limit}",
                    )
                )
        elif not _overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        if _is_hugepages(name):
            has_hugepages = True
            if (message := _hugepage_value_error(name, quantity)) is not None:
                errs.append(invalid(fld, str(quantity), message))
        has_cpu_memory = has_cpu_memory or name in _CPU_MEMORY
    if has_hugepages and not has_cpu_memory:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    return errs


def _validate_pod_resources(pod: Pod) -> list[FieldError]:
    """`validatePodResources` + `validatePodResourceConsistency`: valid pod-level names and
    values, pod-level requests at least the containers' aggregate, a pod-level hugepages limit
    at least theirs, no container limit above the pod's."""
    resources = pod.spec.resources
    if resources is None:
        return []
    path = "spec.resources"
    errs = _validate_resource_requirements(resources, path, pod_level=True)
    pod_requests_, pod_limits_ = resources.requests or {}, resources.limits or {}
    for name, aggregate in sorted(aggregate_container_requests(pod).items()):
        requested = pod_requests_.get(name)
        if requested is not None and requested < aggregate:
            errs.append(
                invalid(
                    key(child(path, "requests"), name),
                    str(requested),
                    f"must be greater than or equal to aggregate container requests of {aggregate}",
                )
            )
    for name, aggregate in sorted(aggregate_container_limits(pod).items()):
        limit = pod_limits_.get(name)
        if _is_hugepages(name) and limit is not None and limit < aggregate:
            errs.append(
                invalid(
                    key(child(path, "limits"), name),
                    str(limit),
                    f"must be greater than or equal to aggregate container limits of {aggregate}",
                )
            )
    for i, container in enumerate(pod.spec.containers):
        for name, limit in sorted((container.resources.limits or {}).items()):
            pod_limit = pod_limits_.get(name)
            if pod_limit is not None and pod_limit < limit:
                # kube-apiserver builds this path from the pod-level resources path.
                errs.append(
                    invalid(
                        child(key(index(child(path, "containers"), i), name), "limits"),
                        str(limit),
                        f"must be less than or equal to pod limits of {pod_limit}",
                    )
                )
    return errs


# --- defaulting ---------------------------------------------------------------------------------


def _image_tag(image: str | None) -> str:
    """The tag `parsers.ParseImageName` finds: `latest` when the image names neither a tag nor
    a digest."""
    if not image:
        return ""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def _round_up_to_milli(resources: ResourceList | None) -> ResourceList | None:
    """`SetDefaults_ResourceList`: values are rounded up (away from zero) to milli units."""
    if resources is None:
        return None
    rounded: ResourceList = {}
    for name, quantity in resources.items():
        try:
            rounded[name] = quantity.rounded_up_to_milli()
        except (QuantityError, ValueError):  # beyond what a Quantity holds: leave it
            rounded[name] = quantity
    return rounded


def _default_container(container: Container) -> None:
    if container.image_pull_policy is None:
        container.image_pull_policy = (
            "Always" if _image_tag(container.image) == "latest" else "IfNotPresent"
        )
    for port in container.ports or []:
        if port.protocol is None:
            port.protocol = "TCP"
    _default_requirements(container.resources)


def _default_requirements(resources: ResourceRequirements) -> None:
    resources.limits = _round_up_to_milli(resources.limits)
    resources.requests = _round_up_to_milli(resources.requests)
    # SetDefaults_Pod: a limit without a request defaults the request.
    if resources.limits is not None:
        requests = dict(resources.requests or {})
        for name, quantity in resources.limits.items():
            requests.setdefault(name, quantity)
        if requests or resources.requests is not None:
            resources.requests = requests


def _default_pod_requests(pod: Pod) -> None:
    """`defaultPodRequests`, only when pod-level limits are set: a resource without a
    pod-level request takes the containers' aggregate request (cpu, memory), else the
    pod-level limit."""
    resources = pod.spec.resources
    if resources is None:
        return
    resources.limits = _round_up_to_milli(resources.limits)
    resources.requests = _round_up_to_milli(resources.requests)
    if not resources.limits:
        return
    requests = dict(resources.requests or {})
    for name, aggregate in aggregate_container_requests(pod).items():
        if name not in requests and is_pod_level_resource(name) and not _is_hugepages(name):
            requests[name] = aggregate
    for name, limit in resources.limits.items():
        if name not in requests and is_pod_level_resource(name):
            requests[name] = limit
    if requests:
        resources.requests = requests


def default_pod(pod: Pod) -> Pod:
    """A defaulted copy of `pod`, as kube-apiserver stores a created pod.

    - PodSpec: dnsPolicy ClusterFirst, restartPolicy Always, terminationGracePeriodSeconds 30,
      schedulerName default-scheduler.
    - Containers and init containers: imagePullPolicy (Always for `:latest` or untagged images,
      else IfNotPresent), port protocol TCP, quantities rounded up to milli units, and requests
      defaulted from limits per resource.
    - Pod-level resources (`spec.resources`): rounded like containers'; with pod-level
      limits, a missing pod-level request defaults to the containers' aggregate, else the limit.
    - resizePolicy is NOT defaulted: Kubernetes dropped that defaulting (an absent policy means
      NotRequired to the kubelet), so a pod keeps exactly the policies its author wrote.
    - status.phase Pending when unset; status.qosClass computed from the defaulted spec.
    """
    out = pod.model_copy(deep=True)
    _default_spec(out)
    if out.status.phase is None:
        out.status.phase = "Pending"
    out.status.qos_class = qos_class(out)
    return out


def _default_spec(pod: Pod) -> None:
    """`default_pod`'s defaults of the spec, in place."""
    spec = pod.spec
    if spec.dns_policy is None:
        spec.dns_policy = "ClusterFirst"
    if spec.termination_grace_period_seconds is None:
        spec.termination_grace_period_seconds = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    if not spec.scheduler_name:
        spec.scheduler_name = DEFAULT_SCHEDULER_NAME
    spec.overhead = _round_up_to_milli(spec.overhead)
    for container in [*spec.containers, *(spec.init_containers or [])]:
        _default_container(container)
    _default_pod_requests(pod)


def _as_decoded(new: Pod, old: Pod) -> Pod:
    """`new` as kube-apiserver validates an update of `old`: decoded with defaults, and with
    the name, namespace and uid the request left out taken from the stored object."""
    # Only what is changed here is copied: the spec (defaulted in place) and the metadata's
    # top level; the status is `new`'s own, only read. Deep copies of whole pods (here and
    # again through default_pod) were half of validate_pod_resize, on every resize.
    out = new.model_copy()
    out.metadata = new.metadata.model_copy()
    out.spec = new.spec.model_copy(deep=True)
    _default_spec(out)
    meta = out.metadata
    meta.name = meta.name or old.metadata.name
    meta.namespace = meta.namespace or old.metadata.namespace
    meta.uid = meta.uid or old.metadata.uid
    return out


# --- object metadata ----------------------------------------------------------------------------


def validate_labels(labels: Mapping[str, str] | None, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    items = labels or {}
    for name in sorted(items):
        errs += [invalid(path, name, msg) for msg in is_qualified_name(name)]
        errs += [invalid(path, items[name], msg) for msg in is_label_value(items[name])]
    return errs


def _validate_annotations(annotations: Mapping[str, str] | None, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in sorted(annotations or {}):
        errs += [invalid(path, name, msg) for msg in is_qualified_name(name.lower())]
    size = sum(_byte_len(k) + _byte_len(v) for k, v in (annotations or {}).items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _validate_object_meta(meta: ObjectMeta) -> list[FieldError]:
    """`ValidateObjectMeta` for a namespaced object named like a DNS subdomain."""
    path = "metadata"
    errs: list[FieldError] = []
    if meta.generate_name:
        fld = child(path, "generateName")
        errs += [
            invalid(fld, meta.generate_name, m)
            for m in _name_is_dns_subdomain(meta.generate_name, True)
        ]
    if not meta.name:
        errs.append(required(child(path, "name"), "name or generateName is required"))
    else:
        errs += [
            invalid(child(path, "name"), meta.name, m)
            for m in _name_is_dns_subdomain(meta.name, False)
        ]
    if not meta.namespace:
        errs.append(required(child(path, "namespace")))
    else:
        errs += [
            invalid(child(path, "namespace"), meta.namespace, m)
            for m in _is_dns1123_label(meta.namespace)
        ]
    if meta.generation is not None and meta.generation < 0:
        errs.append(
            invalid(
                child(path, "generation"), meta.generation, "must be greater than or equal to 0"
            )
        )
    errs += validate_labels(meta.labels, child(path, "labels"))
    errs += _validate_annotations(meta.annotations, child(path, "annotations"))
    refs_path = child(path, "ownerReferences")
    controllers: list[str] = []
    for ref in meta.owner_references or []:
        group_version = ref.api_version.split("/")
        version = group_version[-1] if len(group_version) <= 2 else ""
        if not version:
            errs.append(
                invalid(
                    child(refs_path, "apiVersion"), ref.api_version, "version must not be empty"
                )
            )
        if not ref.kind:
            errs.append(invalid(child(refs_path, "kind"), ref.kind, "must not be empty"))
        if not ref.name:
            errs.append(invalid(child(refs_path, "name"), ref.name, "must not be empty"))
        if not ref.uid:
            errs.append(invalid(child(refs_path, "uid"), ref.uid, "must not be empty"))
        if ref.controller:
            controllers.append(f"{ref.kind}/{ref.name}")
    if len(controllers) > 1:
        errs.append(
            invalid(
                refs_path,
                [r.to_k8s() for r in meta.owner_references or []],
                'Only one reference can have Controller set to true. Found "true" in references '
                f"for {controllers[0]} and {controllers[1]}",
            )
        )
    finalizers_path = child(path, "finalizers")
    finalizers = meta.finalizers or []
    for finalizer in finalizers:
        errs += [invalid(finalizers_path, finalizer, m) for m in is_qualified_name(finalizer)]
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(
            invalid(
                finalizers_path,
                finalizers,
                "finalizer orphan and foregroundDeletion cannot be both set",
            )
        )
    for i, finalizer in enumerate(finalizers):
        if "/" not in finalizer and finalizer not in _STANDARD_FINALIZERS:
            errs.append(
                invalid(
                    index(finalizers_path, i),
                    finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return errs


def _validate_object_meta_update(new: ObjectMeta, old: ObjectMeta) -> list[FieldError]:
    """The immutable parts of `ValidateObjectMetaUpdate` (resourceVersion is the caller's)."""
    errs = []
    for name, new_value, old_value in (
        ("name", new.name, old.name),
        ("namespace", new.namespace, old.namespace),
    ):
        if (new_value or "") != (old_value or ""):
            errs.append(invalid(child("metadata", name), new_value or "", "field is immutable"))
    if new.uid and new.uid != old.uid:  # an update without a uid keeps the stored one
        errs.append(invalid("metadata.uid", new.uid, "field is immutable"))
    return errs


# --- containers ---------------------------------------------------------------------------------


def _validate_resize_policy(
    policies: Sequence[ContainerResizePolicy] | None, path: str, pod_restart_policy: str
) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, policy in enumerate(policies or []):
        name, restart = policy.resource_name, policy.restart_policy
        if name in seen:
            errs.append(duplicate(index(path, i), Verbatim(name)))
        seen.add(name)
        if name == "":
            errs.append(required(path))
        elif name not in _CPU_MEMORY:
            errs.append(not_supported(path, Verbatim(name), _CPU_MEMORY))
        if restart == "":
            errs.append(required(path))
        elif restart not in _RESIZE_POLICY_NAMES:
            errs.append(not_supported(path, restart, _RESIZE_POLICY_NAMES))
        if pod_restart_policy == "Never" and restart != "NotRequired":
            errs.append(
                invalid(path, restart, "must be 'NotRequired' when `restartPolicy` is 'Never'")
            )
    return errs


def _validate_container_common(
    container: Container, path: str, pod_restart_policy: str
) -> list[FieldError]:
    errs: list[FieldError] = []
    name_path = child(path, "name")
    if not container.name:
        errs.append(required(name_path))
    else:
        errs += [invalid(name_path, container.name, m) for m in _is_dns1123_label(container.name)]
    if not container.image:
        errs.append(required(child(path, "image")))
    port_names: set[str] = set()
    for i, port in enumerate(container.ports or []):
        port_path = index(child(path, "ports"), i)
        if port.name:
            messages = _is_valid_port_name(port.name)
            errs += [invalid(child(port_path, "name"), port.name, m) for m in messages]
            if not messages and port.name in port_names:
                errs.append(duplicate(child(port_path, "name"), port.name))
            port_names.add(port.name)
        if port.container_port == 0:
            errs.append(required(child(port_path, "containerPort")))
        else:
            for message in _is_valid_port_num(port.container_port):
                errs.append(
                    invalid(child(port_path, "containerPort"), port.container_port, message)
                )
        if port.host_port:
            for message in _is_valid_port_num(port.host_port):
                errs.append(invalid(child(port_path, "hostPort"), port.host_port, message))
    for i, env in enumerate(container.env or []):
        env_path = child(index(child(path, "env"), i), "name")
        if not env.name:
            errs.append(required(env_path))
        errs += [invalid(env_path, env.name, m) for m in _is_relaxed_env_var_name(env.name)]
    errs += _validate_resource_requirements(container.resources, child(path, "resources"))
    errs += _validate_resize_policy(
        container.resize_policy, child(path, "resizePolicy"), pod_restart_policy
    )
    return errs


def _host_port_conflicts(containers: Sequence[Container], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for ci, container in enumerate(containers):
        for pi, port in enumerate(container.ports or []):
            if not port.host_port:
                continue
            spec = f"{port.protocol or 'TCP'}/{port.host_ip or ''}/{port.host_port}"
            if spec in seen:
                errs.append(
                    duplicate(child(index(child(index(path, ci), "ports"), pi), "hostPort"), spec)
                )
            seen.add(spec)
    return errs


def _validate_containers(pod: Pod) -> list[FieldError]:
    restart = pod.spec.restart_policy
    errs: list[FieldError] = []
    path = "spec.containers"
    if not pod.spec.containers:
        errs.append(required(path))
    else:
        names: set[str] = set()
        for i, container in enumerate(pod.spec.containers):
            c_path = index(path, i)
            errs += _validate_container_common(container, c_path, restart)
            if container.name in names:
                errs.append(duplicate(child(c_path, "name"), container.name))
            names.add(container.name)
            if container.restart_policy is not None:
                errs.append(
                    forbidden(
                        child(c_path, "restartPolicy"), "may not be set for non-init containers"
                    )
                )
        errs += _host_port_conflicts(pod.spec.containers, path)
    init_path = "spec.initContainers"
    all_names = {c.name for c in pod.spec.containers}
    for i, container in enumerate(pod.spec.init_containers or []):
        c_path = index(init_path, i)
        errs += _validate_container_common(container, c_path, restart)
        if container.restart_policy is not None and container.restart_policy != "Always":
            errs.append(
                not_supported(child(c_path, "restartPolicy"), container.restart_policy, ["Always"])
            )
        if container.name in all_names:
            errs.append(duplicate(child(c_path, "name"), container.name))
        elif container.name:
            all_names.add(container.name)
        # Kubernetes checks each init container alone, always as index 0.
        errs += _host_port_conflicts([container], init_path)
    return errs


def _validate_pod_metadata_and_spec(pod: Pod) -> list[FieldError]:
    """`validatePodMetadataAndSpec`: what create, update and resize all require of a pod."""
    errs = _validate_object_meta(pod.metadata)
    mirror = (pod.metadata.annotations or {}).get(MIRROR_POD_ANNOTATION)
    if mirror is not None and not pod.spec.node_name:
        errs.append(
            invalid(
                key("metadata.annotations", MIRROR_POD_ANNOTATION),
                mirror,
                "must set spec.nodeName if mirror pod annotation is set",
            )
        )
    spec = pod.spec
    errs += _validate_containers(pod)
    errs += validate_labels(spec.node_selector, "spec.nodeSelector")
    if spec.node_name:
        errs += [
            invalid("spec.nodeName", spec.node_name, m)
            for m in _name_is_dns_subdomain(spec.node_name, False)
        ]
    if spec.priority_class_name:
        errs += [
            invalid("spec.priorityClassName", spec.priority_class_name, m)
            for m in _name_is_dns_subdomain(spec.priority_class_name, False)
        ]
    if spec.overhead is not None:
        errs += _validate_resource_requirements(
            ResourceRequirements(limits=spec.overhead), "spec.overhead"
        )
    errs += _validate_pod_resources(pod)
    for path, containers in (
        ("spec.containers", spec.containers),
        ("spec.initContainers", spec.init_containers or []),
    ):
        for i, container in enumerate(containers):
            if container.image and container.image != container.image.strip():
                errs.append(
                    invalid(
                        child(index(path, i), "image"),
                        container.image,
                        "must not have leading or trailing whitespace",
                    )
                )
    return errs


def validate_pod_create(pod: Pod) -> list[FieldError]:
    """Errors Kubernetes' ValidatePodCreate finds in a new pod (empty when it is valid).

    Metadata (name a DNS subdomain, namespace a DNS label, labels, annotations, finalizers,
    owner references), at least one container, names unique across containers and init
    containers, images, ports, env names, resources (known names, non-negative quantities,
    requests <= limits for cpu/memory, == for hugepages and extended resources), resizePolicy
    (cpu|memory, NotRequired|RestartContainer, no duplicates, NotRequired only when the pod's
    restartPolicy is Never) and init containers' restartPolicy (only Always, a sidecar).
    """
    return _validate_pod_metadata_and_spec(pod) + validate_node_affinity_and_tolerations(pod)


# --- node affinity and tolerations --------------------------------------------------------------

_NODE_SELECTOR_OPS = ["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"]
_TOLERATION_OPS = ["Equal", "Exists"]
_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "PreferNoSchedule"]


SET_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def set_operator_values(operator: str, values: list[str], values_path: str) -> list[FieldError]:
    """The values rule of a set-based selector requirement (one of SET_OPERATORS), for node
    and label selectors alike: In and NotIn need values, Exists and DoesNotExist take none."""
    if operator in ("In", "NotIn") and not values:
        return [required(values_path, "must be specified when `operator` is 'In' or 'NotIn'")]
    if operator in ("Exists", "DoesNotExist") and values:
        return [
            forbidden(
                values_path, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        ]
    return []


def _validate_node_selector_requirement(
    req: NodeSelectorRequirement, path: str, *, field_selector: bool
) -> list[FieldError]:
    """ValidateNodeSelectorRequirement / ValidateNodeFieldSelectorRequirement."""
    errs: list[FieldError] = []
    values = req.values or []
    values_path = child(path, "values")
    if field_selector:
        if req.operator in ("In", "NotIn"):
            if len(values) != 1:
                errs.append(
                    required(
                        values_path,
                        "must be only one value when `operator` is 'In' or 'NotIn' for node "
                        "field selector",
                    )
                )
        else:
            errs.append(not_supported(child(path, "operator"), req.operator, ["In", "NotIn"]))
        if req.key != "metadata.name":
            errs.append(invalid(child(path, "key"), req.key, "not a valid field selector key"))
        return errs
    if req.operator in SET_OPERATORS:
        errs += set_operator_values(req.operator, values, values_path)
    elif req.operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(
                required(
                    values_path, "must be specified single value when `operator` is 'Lt' or 'Gt'"
                )
            )
        else:
            # The scheduler compares Gt/Lt as integers; a value that is not one never matches.
            try:
                int(values[0])
            except ValueError:
                errs.append(invalid(index(values_path, 0), values[0], "must be a valid integer"))
    else:
        errs.append(not_supported(child(path, "operator"), req.operator, _NODE_SELECTOR_OPS))
    errs += [invalid(child(path, "key"), req.key, msg) for msg in is_qualified_name(req.key)]
    return errs


def _validate_node_selector_term(term: NodeSelectorTerm, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, req in enumerate(term.match_expressions or []):
        errs += _validate_node_selector_requirement(
            req, index(child(path, "matchExpressions"), i), field_selector=False
        )
    for i, req in enumerate(term.match_fields or []):
        errs += _validate_node_selector_requirement(
            req, index(child(path, "matchFields"), i), field_selector=True
        )
    return errs


def validate_node_affinity_and_tolerations(pod: Pod) -> list[FieldError]:
    """validateAffinity (node affinity part) and ValidateTolerations, with kube-apiserver's
    messages: the scheduler would otherwise silently treat a bad term as matching nothing."""
    errs: list[FieldError] = []
    spec = pod.spec
    node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    if node_affinity is not None:
        path = "spec.affinity.nodeAffinity"
        req = node_affinity.required_during_scheduling_ignored_during_execution
        if req is not None:
            terms_path = child(
                path, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"
            )
            if not req.node_selector_terms:
                errs.append(required(terms_path, "must have at least one node selector term"))
            for i, term in enumerate(req.node_selector_terms):
                errs += _validate_node_selector_term(term, index(terms_path, i))
        preferred = node_affinity.preferred_during_scheduling_ignored_during_execution or []
        pref_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, pref in enumerate(preferred):
            if not 1 <= pref.weight <= 100:
                errs.append(
                    invalid(
                        child(index(pref_path, i), "weight"),
                        pref.weight,
                        "must be in the range 1-100",
                    )
                )
            errs += _validate_node_selector_term(
                pref.preference, child(index(pref_path, i), "preference")
            )
    for i, tol in enumerate(spec.tolerations or []):
        path = index("spec.tolerations", i)
        if tol.key:
            errs += [
                invalid(child(path, "key"), tol.key, msg) for msg in is_qualified_name(tol.key)
            ]
        if not tol.key and tol.operator != "Exists":
            errs.append(
                invalid(
                    child(path, "operator"),
                    tol.operator or "",
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if tol.toleration_seconds is not None and tol.effect != "NoExecute":
            errs.append(
                invalid(
                    child(path, "effect"),
                    tol.effect or "",
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if tol.operator in (None, "", "Equal"):
            errs += [
                invalid(child(path, "operator"), tol.value or "", msg)
                for msg in is_label_value(tol.value or "")
            ]
        elif tol.operator == "Exists":
            if tol.value:
                errs.append(
                    invalid(
                        child(path, "operator"),
                        tol.operator,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            errs.append(not_supported(child(path, "operator"), tol.operator, _TOLERATION_OPS))
        if tol.effect and tol.effect not in _TAINT_EFFECTS:
            errs.append(not_supported(child(path, "effect"), tol.effect, _TAINT_EFFECTS))
    return errs


# --- JSON diffs ---------------------------------------------------------------------------------

_MISSING: Any = object()
# Object fields that are maps (their keys print as `[key]`) and, of those, resource lists.
_RESOURCE_LIST_FIELDS = frozenset(
    {"requests", "limits", "overhead", "allocatedResources", "capacity", "allocatable"}
)
_MAP_FIELDS = _RESOURCE_LIST_FIELDS | {"labels", "annotations", "nodeSelector"}

Skip = Callable[[str, Any, Any], bool]


def _empty(value: Any) -> bool:
    # Go's semantic equality: nil == empty for maps and slices, "" == absent for strings.
    return value is _MISSING or value is None or value in ("", {}, [])


def _same_scalar(a: Any, b: Any, quantities: bool) -> bool:
    if _empty(a) and _empty(b):
        return True
    if type(a) is not type(b):
        return False
    if quantities and isinstance(a, str):
        try:
            return Quantity(a) == Quantity(b)
        except (QuantityError, ValueError, TypeError):
            return bool(a == b)
    return bool(a == b)


def _diff(a: Any, b: Any, path: str, skip: Skip, *, field: str = "") -> list[tuple[str, Any, Any]]:
    """Paths (Kubernetes style) where two JSON documents differ, outermost first."""
    if skip(path, a, b):
        return []
    a_map = isinstance(a, dict) or (_empty(a) and isinstance(b, dict))
    b_map = isinstance(b, dict) or (_empty(b) and isinstance(a, dict))
    if a_map and b_map:
        left = a if isinstance(a, dict) else {}
        right = b if isinstance(b, dict) else {}
        out: list[tuple[str, Any, Any]] = []
        for name in [*left, *(k for k in right if k not in left)]:
            sub = key(path, name) if field in _MAP_FIELDS else child(path, name)
            out += _diff(
                left.get(name, _MISSING),
                right.get(name, _MISSING),
                sub,
                skip,
                field="" if field in _MAP_FIELDS else name,
            )
        if field in _RESOURCE_LIST_FIELDS:
            return [(p, x, y) for p, x, y in out if not _same_scalar(x, y, True)]
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += _diff(x, y, index(path, i), skip, field=field)
        return out
    if _same_scalar(a, b, False):
        return []
    return [(path, a, b)]


def _never(path: str, a: Any, b: Any) -> bool:
    return False


def _render(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _diff_text(changes: Iterable[tuple[str, Any, Any]]) -> str:
    lines = []
    for path, old, new in changes:
        if old is not _MISSING:
            lines.append(f"- {path}: {_render(old)}")
        if new is not _MISSING:
            lines.append(f"+ {path}: {_render(new)}")
    return "\n".join(lines)


# --- update -------------------------------------------------------------------------------------


def _container_updates(
    new: Sequence[Container], old: Sequence[Container], path: str
) -> tuple[list[FieldError], bool]:
    """`ValidateContainerUpdates`: (errors, stop)."""
    if len(new) != len(old):
        return [forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, container in enumerate(new):
        if not container.image:
            errs.append(required(child(index(path, i), "image")))
        elif container.image != container.image.strip():
            errs.append(
                invalid(
                    child(index(path, i), "image"),
                    container.image,
                    "must not have leading or trailing whitespace",
                )
            )
    return errs, False


def _mirror_annotation_updates(new: Pod, old: Pod) -> list[FieldError]:
    path = key("metadata.annotations", MIRROR_POD_ANNOTATION)
    new_value = (new.metadata.annotations or {}).get(MIRROR_POD_ANNOTATION)
    old_value = (old.metadata.annotations or {}).get(MIRROR_POD_ANNOTATION)
    if old_value is not None and new_value != old_value:
        return [forbidden(path, "may not remove or update mirror pod annotation")]
    if old_value is None and new_value is not None:
        return [forbidden(path, "may not add mirror pod annotation")]
    return []


def validate_pod_update(old: Pod, new: Pod) -> list[FieldError]:
    """Errors Kubernetes' ValidatePodUpdate finds in a PUT/PATCH of the pod itself.

    Metadata may change (labels, annotations; not name, namespace or uid), containers and init
    containers may only get new images, and `terminationGracePeriodSeconds` may go from a
    negative value to 1; any other spec change — resources included, which only the `/resize`
    subresource may change — is `spec: Forbidden: pod updates may not change fields other than
    ...` followed by the changed paths. The status is not the client's and is not compared.
    """
    new = _as_decoded(new, old)
    errs = _validate_object_meta_update(new.metadata, old.metadata)
    errs += _validate_pod_metadata_and_spec(new)
    errs += _mirror_annotation_updates(new, old)
    for path, new_list, old_list in (
        ("spec.containers", new.spec.containers, old.spec.containers),
        ("spec.initContainers", new.spec.init_containers or [], old.spec.init_containers or []),
    ):
        found, stop = _container_updates(new_list, old_list, path)
        errs += found
        if stop:
            return errs
    old_spec = old.spec.to_k8s()
    munged = new.spec.model_copy(deep=True)
    for new_c, old_c in zip(munged.containers, old.spec.containers, strict=True):
        new_c.image = old_c.image
    for new_c, old_c in zip(
        munged.init_containers or [], old.spec.init_containers or [], strict=True
    ):
        new_c.image = old_c.image
    old_grace = old.spec.termination_grace_period_seconds
    if old_grace is not None and old_grace < 0 and munged.termination_grace_period_seconds == 1:
        munged.termination_grace_period_seconds = old_grace
    changes = _diff(old_spec, munged.to_k8s(), "spec", _never)
    if changes:
        errs.append(
            forbidden(
                "spec",
                "pod updates may not change fields other than "
                + ",".join(UPDATABLE_POD_SPEC_FIELDS)
                + "\n"
                + _diff_text(changes),
            )
        )
    return errs


# --- resize -------------------------------------------------------------------------------------


def _resize_supported(pod: Pod) -> bool:
    """Whether the pod's kubelet supports resize: it reports `status.containerStatuses[*]
    .resources` (for every container, running or not) if and only if it does.

    Kubernetes' `isPodResizeRequestSupported` asks the first running container. Beyond it, a
    bound pod in phase Running whose statuses report `resources` nowhere (or that has no
    container statuses at all) is also refused: the issue's "running pod whose container
    statuses lack resources". A pod with no node, or not yet Running, may be resized.
    """
    statuses = pod.status.container_statuses or []
    for status in statuses:
        if status.state.running is not None:
            return status.resources is not None
    if pod.status.phase == "Running" and pod.spec.node_name:
        return any(status.resources is not None for status in statuses)
    return True


def _removed(new: ResourceList | None, old: ResourceList | None) -> bool:
    new, old = new or {}, old or {}
    return len(old) > len(new) or any(name not in new for name in old)


def _container_resize(
    new: ResourceRequirements, old: ResourceRequirements, path: str
) -> list[FieldError]:
    """`validateContainerResize`: requests and limits may change but not be removed."""
    errs = []
    if _removed(new.requests, old.requests):
        errs.append(forbidden(child(path, "requests"), "resource requests cannot be removed"))
    if _removed(new.limits, old.limits):
        errs.append(forbidden(child(path, "limits"), "resource limits cannot be removed"))
    return errs


def _non_cpu_memory_changes(
    new: ResourceRequirements, old: ResourceRequirements, path: str, message: str
) -> list[FieldError]:
    errs = []
    for part in ("requests", "limits"):
        new_list: ResourceList = getattr(new, part) or {}
        old_list: ResourceList = getattr(old, part) or {}
        for name in sorted(set(new_list) | set(old_list)):
            if name in _CPU_MEMORY:
                continue
            if name not in new_list or name not in old_list or new_list[name] != old_list[name]:
                errs.append(forbidden(key(child(path, part), name), message))
    return errs


def _pod_level_resize(
    new: ResourceRequirements | None, old: ResourceRequirements | None, message: str
) -> list[FieldError]:
    """Pod-level resources through `/resize` (1.35 alpha InPlacePodLevelResourcesVerticalScaling,
    on here): cpu and memory may change like a container's, but pod-level resources cannot be
    added to a pod that has none, or dropped from one that has them."""
    path = "spec.resources"
    if old is None and new is None:
        return []
    if old is None or new is None:
        verb = "added" if old is None else "removed"
        return [forbidden(path, f"pod-level resources cannot be {verb} by a resize")]
    return _container_resize(new, old, path) + _non_cpu_memory_changes(new, old, path, message)


def _skip_resources(path: str, a: Any, b: Any) -> bool:
    return path.endswith((".resources", ".resizePolicy"))


def _shares_all_but(new: BaseModel, old: BaseModel, fields: frozenset[str]) -> bool:
    """Every field of `new` but `fields` is `old`'s own object, as in a resize view (which
    copies only what it resizes): nothing changed there, no need to diff it."""
    if type(new) is not type(old):
        return False
    mine, theirs = new.__dict__, old.__dict__
    if any(mine[f] is not theirs[f] for f in mine if f not in fields):
        return False
    extra, old_extra = new.__pydantic_extra__ or {}, old.__pydantic_extra__ or {}
    return extra.keys() == old_extra.keys() and all(extra[k] is old_extra[k] for k in extra)


_RESIZABLE = frozenset({"resources", "resize_policy"})
_RESIZED_IN_SPEC = frozenset({"containers", "init_containers", "resources"})


def _container_other_changes(
    new: Container, old: Container, path: str, message: str
) -> list[FieldError]:
    if _shares_all_but(new, old, _RESIZABLE):
        return []
    changes = _diff(old.to_k8s(), new.to_k8s(), path, _skip_resources)
    return [forbidden(p, message) for p, _, _ in changes]


def _collapse(path: str, container_path: str) -> str:
    """A change inside a container's resources (or resizePolicy) is reported on that field."""
    for name in ("resources", "resizePolicy"):
        whole = child(container_path, name)
        if path == whole or path.startswith((whole + ".", whole + "[")):
            return whole
    return path


def validate_pod_resize(old: Pod, new: Pod) -> list[FieldError]:
    """Errors Kubernetes' ValidatePodResize finds in a resize (`new` is the resize view).

    The new pod must pass create validation (so requests <= limits, resizePolicy rules,
    restartPolicy Never => NotRequired), then:

    - static (mirror) pods cannot be resized (`[]: Forbidden: static pods cannot be resized`);
    - the computed QoS class may not change (`spec: Invalid value: "Guaranteed": Pod QOS Class
      may not change as a result of resizing`);
    - a pod whose first running container has no `status.containerStatuses[*].resources` runs
      on a kubelet without resize support (`spec: Forbidden: Pod running on node without support
      for resize`), and so does (beyond Kubernetes) a bound Running pod whose statuses report no
      `resources` at all; an unscheduled or not yet running pod may be resized;
    - requests and limits cannot be removed from containers and sidecars;
    - only cpu and memory may change (per resource: `...requests[ephemeral-storage]:
      Forbidden: only cpu and memory resources are mutable`), on sidecars too, and nothing of
      a non-sidecar init container may change;
    - pod-level resources (`spec.resources`) follow the containers' rules, and cannot be
      added or removed by a resize.

    Resizing to the resources the pod already has is valid (a no-op).

    `new` is decoded and defaulted as the stored pod is (`resize_view` builds it so, from the
    stored pod): unlike an update, nothing here defaults it again.
    """
    errs = _validate_object_meta_update(new.metadata, old.metadata)
    errs += _validate_pod_metadata_and_spec(new)
    if MIRROR_POD_ANNOTATION in (old.metadata.annotations or {}):
        return [forbidden(ROOT, "static pods cannot be resized")]
    old_qos = old.status.qos_class or qos_class(old)
    if old_qos != qos_class(new):
        errs.append(
            invalid(
                "spec",
                new.status.qos_class or "",
                "Pod QOS Class may not change as a result of resizing",
            )
        )
    if not _resize_supported(old):
        errs.append(forbidden("spec", "Pod running on node without support for resize"))

    old_inits, new_inits = old.spec.init_containers or [], new.spec.init_containers or []
    paired_inits = list(zip(new_inits, old_inits, strict=False))
    paired = list(zip(new.spec.containers, old.spec.containers, strict=False))
    for i, (new_c, old_c) in enumerate(paired_inits):
        if is_sidecar(old_c):
            errs += _container_resize(
                new_c.resources, old_c.resources, f"spec.initContainers[{i}].resources"
            )
    for i, (new_c, old_c) in enumerate(paired):
        errs += _container_resize(
            new_c.resources, old_c.resources, f"spec.containers[{i}].resources"
        )

    message = "only cpu and memory resources are mutable"
    for i, (new_c, old_c) in enumerate(paired):
        path = index("spec.containers", i)
        errs += _non_cpu_memory_changes(
            new_c.resources, old_c.resources, child(path, "resources"), message
        )
        errs += _container_other_changes(new_c, old_c, path, message)
    for i, (new_c, old_c) in enumerate(paired_inits):
        path = index("spec.initContainers", i)
        if is_sidecar(old_c):
            sidecar = "only cpu and memory resources for sidecar containers are mutable"
            errs += _non_cpu_memory_changes(
                new_c.resources, old_c.resources, child(path, "resources"), sidecar
            )
            errs += _container_other_changes(new_c, old_c, path, sidecar)
        else:
            fixed = "resources for non-sidecar init containers are immutable"
            changes = _diff(old_c.to_k8s(), new_c.to_k8s(), path, _never)
            errs += [
                forbidden(p, fixed) for p in sorted({_collapse(p, path) for p, _, _ in changes})
            ]
    errs += _pod_level_resize(new.spec.resources, old.spec.resources, message)
    if errs:
        return errs

    def skip_containers(path: str, a: Any, b: Any) -> bool:
        if path == "spec.resources":
            return True  # checked by _pod_level_resize
        return path in ("spec.containers", "spec.initContainers") and (
            isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
        )

    same_lengths = len(new.spec.containers) == len(old.spec.containers) and len(new_inits) == len(
        old_inits
    )
    if same_lengths and _shares_all_but(new.spec, old.spec, _RESIZED_IN_SPEC):
        return []
    changes = _diff(old.spec.to_k8s(), new.spec.to_k8s(), "spec", skip_containers)
    return [forbidden(p, message) for p, _, _ in changes]


# What a merge or strategic-merge patch of pods/resize is applied to (`resize_patch_base`).
_CONTAINER_FIELDS = {"name", "image", "resources", "resize_policy"}
_RESIZE_BASE: dict[str, Any] = {
    "api_version": True,
    "kind": True,
    "metadata": {"name", "namespace", "resource_version"},
    "spec": {
        "containers": {"__all__": _CONTAINER_FIELDS},
        "init_containers": {"__all__": _CONTAINER_FIELDS},
        "resources": True,
    },
}


def resize_patch_base(pod: Pod) -> dict[str, Any]:
    """The part of `pod` a merge or strategic-merge patch of pods/resize is applied to: its
    identity (a patch's resourceVersion precondition still meets the stored one) and each
    container's name, image, resources and resizePolicy, in order. Both patch kinds change
    a field from the patch's own content and the field itself, never from its siblings, so
    everything `resize_view` takes from the result comes out as from the whole pod; the
    status and the rest of the spec only made the patch and the decode after it dearer.
    (A JSON patch may `test` any path: it gets the whole pod.)"""
    base: dict[str, Any] = pod.model_dump(
        mode="json", by_alias=True, exclude_none=True, include=_RESIZE_BASE
    )
    return base


def resize_view(old: Pod, patched: Pod) -> Pod:
    """The pod a resize leaves behind, as kube-apiserver's resize strategy builds it
    (`dropNonResizeUpdates`): a copy of `old` where each container and init container takes
    `resources` and `resizePolicy` from the container of the same name in `patched`.

    Every other change in the request is dropped, not refused: a merge patch that carries
    only a container's name and resources, a PUT of a stale copy, added or renamed containers
    all leave the rest of the pod as stored. Containers pair up by name, so a reordered list
    cannot move resources between containers. Init containers are all carried over, like
    Kubernetes does, so that `validate_pod_resize` refuses a change to a non-sidecar one with
    Kubernetes' message. The resources are defaulted as kube-apiserver defaults a decoded
    object (a limit without a request defaults it; quantities rounded up to milli units).
    """
    # Only what a resize changes is copied: the spec's top level, and each container it
    # resizes; the metadata, the status and every other field are `old`'s own objects (a deep
    # copy of the spec was ~110 us a PATCH). Callers read them, never change them, and
    # `validate_pod_resize` skips the diff of a field it finds shared.
    result = old.model_copy()
    result.spec = spec = old.spec.model_copy()
    # Pod-level resources resize too (1.35 alpha InPlacePodLevelResourcesVerticalScaling).
    spec.resources = (
        None if patched.spec.resources is None else patched.spec.resources.model_copy(deep=True)
    )
    spec.containers = _resized(old.spec.containers, patched.spec.containers)
    if old.spec.init_containers is not None:
        spec.init_containers = _resized(
            old.spec.init_containers, patched.spec.init_containers or []
        )
    _default_pod_requests(result)
    return result


def _resized(mine: list[Container], theirs: list[Container]) -> list[Container]:
    """`mine`, each container of a name in `theirs` copied with its resources (defaulted) and
    resizePolicy; the others as they are."""
    incoming_by_name = {c.name: c for c in theirs}
    out = []
    for container in mine:
        incoming = incoming_by_name.get(container.name)
        if incoming is not None:
            container = container.model_copy()
            container.resources = incoming.resources.model_copy(deep=True)
            _default_requirements(container.resources)
            container.resize_policy = (
                None
                if incoming.resize_policy is None
                else [p.model_copy() for p in incoming.resize_policy]
            )
        out.append(container)
    return out
