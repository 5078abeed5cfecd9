"""PATCH bodies applied to a stored object, the way kube-apiserver applies them.

`apply_patch(original, body, content_type)` supports:

- `application/json-patch+json`: RFC 6902, through the `jsonpatch` library (at most 10,000
  operations, as kube-apiserver allows);
- `application/merge-patch+json`: RFC 7386 JSON merge patch;
- `application/strategic-merge-patch+json`: Kubernetes' strategic merge patch
  (k8s.io/apimachinery/pkg/util/strategicpatch), with the Pod's patch strategies: lists merged
  by key (containers by `name`, ports by `containerPort`, conditions by `type`, ...), maps
  merged recursively, `null` deleting a key, every other list replaced; and the directives
  kubectl sends: `$patch: replace|delete|merge` in a map or a list item, `$retainKeys`,
  `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`. Any other `$` key is a 400.

Server-side apply (`application/apply-patch+yaml`) is not implemented: 415, like any other
content type. Every failure is a `PatchError` carrying the Kubernetes Status code and reason:

- 413 RequestEntityTooLarge: body over `max_body_bytes` (kube-apiserver's 3 MiB by default), or
  a JSON patch with more than 10,000 operations;
- 415 UnsupportedMediaType: `the body of the request was in an unknown format - accepted media
  types include: ...`;
- 400 BadRequest: the body is not JSON (for a merge patch: `Invalid JSON Patch`), not the right
  JSON shape, or a malformed strategic-merge directive;
- 422 Invalid: a well-formed patch that cannot be applied (a JSON patch `test` that fails, a
  path that does not exist, a result that is not a JSON object), or a strategic patch
  Kubernetes answers with 422 (lists of lists, content outside `$retainKeys`). Kubernetes'
  message for those is only "the server rejected our request due to an error in our request";
  here the reason follows it after a colon.

Nothing else escapes `apply_patch`, whatever the bytes; the original is never modified.
Deviations from apimachinery, all on malformed input: `$patch: merge` is accepted (as the
default it names) where Kubernetes errors; a strategic-merge error Kubernetes would return as a
500 (unknown `$patch` value, a list item without its merge key) is a 400 here; directives inside
a subtree the original lacks are processed rather than stored verbatim; lone UTF-16 surrogates
in strings become U+FFFD, as Go's JSON decoder does.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import jsonpatch

from schemas.k8s import Status

__all__ = [
    "ACCEPTED_CONTENT_TYPES",
    "APPLY_PATCH",
    "JSON_PATCH",
    "MAX_BODY_BYTES",
    "MAX_JSON_PATCH_OPERATIONS",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "PatchError",
    "apply_patch",
    "json_merge_patch",
    "strategic_merge",
]

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
ACCEPTED_CONTENT_TYPES: Final = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)

MAX_BODY_BYTES: Final = 3 * 1024 * 1024  # kube-apiserver's --max-request-body-bytes default
MAX_JSON_PATCH_OPERATIONS: Final = 10_000

_REJECTED = "the server rejected our request due to an error in our request"


class PatchError(Exception):
    """A patch that cannot be applied, with the HTTP code and Status reason to answer with."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def status(self) -> Status:
        """The Kubernetes Status body for this error."""
        return Status(status="Failure", message=self.message, reason=self.reason, code=self.code)

    def __repr__(self) -> str:
        return f"PatchError({self.code}, {self.reason!r}, {self.message!r})"


def _bad_request(message: str) -> NoReturn:
    raise PatchError(400, "BadRequest", message)


def _unprocessable(message: str) -> NoReturn:
    raise PatchError(422, "Invalid", f"{_REJECTED}: {message}")


# --- JSON decoding ------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
# A lone surrogate can only come from a `\uD800`-`\uDFFF` escape (UTF-8 cannot carry one):
# a body without such an escape needs no walk over what it decodes to.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON value {name}")


def _fix_text(text: str) -> str:
    # json.loads keeps a lone "\ud800" escape; Go decodes it as U+FFFD.
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _fix_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _fix_text(value)
    if isinstance(value, list):
        return [_fix_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_fix_text(k): _fix_surrogates(v) for k, v in value.items()}
    return value


def _decode(body: bytes, error: Callable[[str], NoReturn]) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        error(f"the body is not valid UTF-8: {exc}")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        error(str(exc) or type(exc).__name__)
    return _fix_surrogates(value) if _SURROGATE_ESCAPE.search(text) else value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# --- entry point --------------------------------------------------------------------------------


def apply_patch(
    original: Mapping[str, Any],
    body: bytes,
    content_type: str,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    kind: str = "Pod",
) -> dict[str, Any]:
    """`original` (an object's JSON, e.g. `pod.to_k8s()`) patched with `body`.

    `content_type` may carry parameters (`; charset=utf-8`), which are ignored. `kind` picks the
    strategic-merge schema (Pod's, and the pod template of a CloneSet; for the other kinds
    their metadata's lists: their own lists have no patch strategy and are replaced).
    Raises only `PatchError`.
    """
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in ACCEPTED_CONTENT_TYPES:
        raise PatchError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join(ACCEPTED_CONTENT_TYPES),
        )
    if len(body) > max_body_bytes:
        raise PatchError(
            413, "RequestEntityTooLarge", f"Request entity too large: limit is {max_body_bytes}"
        )
    try:
        if media_type == JSON_PATCH:
            result = _json_patch(original, body)
        elif media_type == MERGE_PATCH:
            result = _merge_patch(original, body)
        else:
            result = _strategic_patch(original, body, kind)
    except PatchError:
        raise
    except RecursionError:
        _bad_request("the patch is nested too deeply")
    except Exception as exc:  # a bug here must still answer with a Status, never escape
        raise PatchError(500, "InternalError", f"Internal error occurred: {exc!r}") from None
    if not isinstance(result, dict):
        _unprocessable(f"the patched object is a JSON {_json_type(result)}, not an object")
    return result


def _json_patch(original: Mapping[str, Any], body: bytes) -> Any:
    def error(message: str) -> NoReturn:
        _bad_request(f"error decoding patch: {message}")

    operations = _decode(body, error)
    if not isinstance(operations, list):
        error(f"a JSON patch is an array of operations, not a JSON {_json_type(operations)}")
    for operation in operations:
        if not isinstance(operation, dict):
            error(f"a JSON patch operation is an object, not a JSON {_json_type(operation)}")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}",
        )
    try:
        patch = jsonpatch.JsonPatch(operations)
        return patch.apply(copy.deepcopy(dict(original)), in_place=True)
    except RecursionError:
        raise
    except Exception as exc:  # every jsonpatch/jsonpointer failure is the patch's fault
        _unprocessable(str(exc) or type(exc).__name__)


# --- RFC 7386 -----------------------------------------------------------------------------------


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch(target, patch); neither argument is modified."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = json_merge_patch(result.get(name), value)
    return result


def _merge_patch(original: Mapping[str, Any], body: bytes) -> Any:
    def error(message: str) -> NoReturn:
        _bad_request("Invalid JSON Patch")

    patch = _decode(body, error)
    return json_merge_patch(copy.deepcopy(dict(original)), patch)


# --- strategic merge patch ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ListMeta:
    """A list field with patchStrategy=merge: items merged by `merge_key` (None: a list of
    scalars merged as a set); `item` names the schema of the items."""

    merge_key: str | None
    item: str | None = None


# Object-valued fields of each schema, and the merge lists (from the Go struct tags
# `patchStrategy:"merge" patchMergeKey:"..."`; resizePolicy and the container status lists
# merge by key in this project, as the issue asks). Lists not named here are replaced.
_OBJECTS: Final[dict[str, dict[str, str]]] = {
    "Pod": {"metadata": "ObjectMeta", "spec": "PodSpec", "status": "PodStatus"},
    # A CloneSet's template is Kubernetes' PodTemplateSpec, and its OpenAPI says so: kubectl
    # computes a client-side apply's patch with the Pod's merge keys from it.
    "CloneSet": {"metadata": "ObjectMeta", "spec": "CloneSetSpec"},
    "CloneSetSpec": {"template": "PodTemplateSpec"},
    "PodTemplateSpec": {"metadata": "ObjectMeta", "spec": "PodSpec"},
    **{
        kind: {"metadata": "ObjectMeta"}
        for kind in (
            "Node",
            "Namespace",
            "ResourceQuota",
            "LimitRange",
            "PodDisruptionBudget",
            "Event",
        )
    },
}
_LISTS: Final[dict[str, dict[str, _ListMeta]]] = {
    "ObjectMeta": {
        "ownerReferences": _ListMeta("uid"),
        "finalizers": _ListMeta(None),
    },
    "PodSpec": {
        "containers": _ListMeta("name", "Container"),
        "initContainers": _ListMeta("name", "Container"),
        "ephemeralContainers": _ListMeta("name", "Container"),
        "volumes": _ListMeta("name"),
        "imagePullSecrets": _ListMeta("name"),
        "hostAliases": _ListMeta("ip"),
        "schedulingGates": _ListMeta("name"),
        "resourceClaims": _ListMeta("name"),
        "topologySpreadConstraints": _ListMeta("topologyKey"),
    },
    "Container": {
        "env": _ListMeta("name"),
        "ports": _ListMeta("containerPort"),
        "volumeMounts": _ListMeta("mountPath"),
        "volumeDevices": _ListMeta("devicePath"),
        "resizePolicy": _ListMeta("resourceName"),
    },
    "PodStatus": {
        "conditions": _ListMeta("type"),
        "containerStatuses": _ListMeta("name"),
        "initContainerStatuses": _ListMeta("name"),
        "ephemeralContainerStatuses": _ListMeta("name"),
        "podIPs": _ListMeta("ip"),
        "hostIPs": _ListMeta("ip"),
    },
}

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder/"
_DELETE_FROM = "$deleteFromPrimitiveList/"
_ABSENT: Any = object()


def _object_schema(schema: str | None, name: str) -> str | None:
    return _OBJECTS.get(schema or "", {}).get(name)


def _list_meta(schema: str | None, name: str) -> _ListMeta | None:
    return _LISTS.get(schema or "", {}).get(name)


def _hkey(value: Any) -> Hashable:
    """A hashable identity for a JSON value: 1, 1.0 and true are three different values."""
    if value is None or isinstance(value, bool | int | float | str):
        return (type(value).__name__, value)
    return ("json", json.dumps(value, sort_keys=True, default=str))


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 200 else text[:200] + "..."


def _strategic_patch(original: Mapping[str, Any], body: bytes, kind: str) -> Any:
    def error(message: str) -> NoReturn:
        _bad_request(f"error decoding patch: {message}")

    patch = _decode(body, error)
    if not isinstance(patch, dict):
        error(f"a strategic merge patch is a JSON object, not a JSON {_json_type(patch)}")
    return strategic_merge(dict(original), patch, kind)


def strategic_merge(
    original: Mapping[str, Any], patch: Mapping[str, Any], kind: str = "Pod"
) -> dict[str, Any]:
    """Kubernetes' StrategicMergeMapPatch of `patch` into `original` (neither is modified);
    raises PatchError for a malformed patch."""
    return _merge_map(original, patch, kind)


def _merge_map(
    original: Mapping[str, Any], patch: Mapping[str, Any], schema: str | None
) -> dict[str, Any]:
    patch = dict(patch)
    directive = patch.pop(_DIRECTIVE, _ABSENT)
    if directive is not _ABSENT:
        if directive == "replace":
            return _merge_map({}, patch, schema)
        if directive == "delete":
            return {}
        if directive != "merge":
            _bad_request(f"unknown patch type: {_show(directive)} in map: {_show(patch)}")
    result = dict(original)

    if _RETAIN_KEYS in patch:
        retain = patch.pop(_RETAIN_KEYS)
        if not isinstance(retain, list) or not all(isinstance(k, str) for k in retain):
            _bad_request("invalid patch format of retainKeys")
        for name, value in patch.items():
            if value is None or name.startswith((_SET_ORDER, _DELETE_FROM)):
                continue
            if name not in retain:
                _bad_request("invalid patch format of retainKeys")
        result = {name: value for name, value in result.items() if name in retain}

    for order_key in [k for k in patch if k.startswith(_SET_ORDER)]:
        _apply_set_element_order(result, patch, order_key, schema)

    for delete_key in [k for k in patch if k.startswith(_DELETE_FROM)]:
        values = patch.pop(delete_key)
        name = delete_key[len(_DELETE_FROM) :]
        if not isinstance(values, list):
            _bad_request("invalid patch format of primitive list")
        current = result.get(name)
        if isinstance(current, list):
            doomed = {_hkey(v) for v in values}
            result[name] = [item for item in current if _hkey(item) not in doomed]

    for name, value in patch.items():
        if name.startswith("$"):
            _bad_request(
                f"unknown strategic merge patch directive {name!r}: the directives are "
                "$patch, $retainKeys, $setElementOrder/<list> and $deleteFromPrimitiveList/<list>"
            )
        if value is None:
            result.pop(name, None)
            continue
        result[name] = _merge_value(result.get(name), value, schema, name)
    return result


def _merge_value(current: Any, value: Any, schema: str | None, name: str) -> Any:
    """The patched value of field `name` (current may be None: the original lacks it)."""
    if isinstance(value, dict):
        base = current if isinstance(current, dict) else {}
        return _merge_map(base, value, _object_schema(schema, name))
    if isinstance(value, list):
        meta = _list_meta(schema, name)
        if meta is None:
            return copy.deepcopy(value)
        base_list = current if isinstance(current, list) else []
        return _merge_list(base_list, value, meta, name)
    return value


def _check_elements(items: Sequence[Any], meta: _ListMeta, name: str) -> None:
    """apimachinery's `sliceElementType`: one element type, no lists of lists."""
    if any(isinstance(item, list) for item in items):
        _unprocessable("lists of lists are not supported")
    if meta.merge_key is None:
        if any(isinstance(item, dict) for item in items):
            _bad_request(f"cannot merge lists without merge key for {name}")
    elif not all(isinstance(item, dict) for item in items):
        _bad_request(f"list element types are not identical: {name} holds objects and values")


def _merge_list(
    original: Sequence[Any], patch: Sequence[Any], meta: _ListMeta, name: str
) -> list[Any]:
    if meta.merge_key is None:
        _check_elements([*original, *patch], meta, name)
        merged: list[Any] = []
        seen: set[Hashable] = set()
        for item in [*original, *patch]:
            if _hkey(item) not in seen:
                seen.add(_hkey(item))
                merged.append(item)
        return _order(merged, patch, original, None)

    merge_key = meta.merge_key
    # Items carrying `$patch` are directives; they need not look like the other items.
    plain: list[dict[str, Any]] = []
    work = [item for item in original]
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            _check_elements([*original, *patch], meta, name)
        directive = item.get(_DIRECTIVE, _ABSENT)
        if directive is _ABSENT:
            plain.append(item)
        elif directive == "delete":
            if merge_key not in item:
                _bad_request(f"map: {_show(item)} does not contain declared merge key: {merge_key}")
            doomed = _hkey(item[merge_key])
            work = [
                x for x in work if not (isinstance(x, dict) and _key_of(x, merge_key) == doomed)
            ]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            plain.append({k: v for k, v in item.items() if k != _DIRECTIVE})
        else:
            _bad_request(f"unknown patch type: {_show(directive)} in map: {_show(item)}")
    _check_elements(work, meta, name)
    if replace:
        work = []
    positions = {_key_of(x, merge_key): i for i, x in reversed(list(enumerate(work)))}
    for item in plain:
        if merge_key not in item:
            _bad_request(f"map: {_show(item)} does not contain declared merge key: {merge_key}")
        item_key = _hkey(item[merge_key])
        if item_key in positions:
            at = positions[item_key]
            work[at] = _merge_map(work[at], item, meta.item)
        else:
            positions[item_key] = len(work)
            work.append(_merge_map({}, item, meta.item))
    return _order(work, plain, original, merge_key)


def _key_of(item: Any, merge_key: str | None) -> Hashable:
    if merge_key is None:
        return _hkey(item)
    if isinstance(item, dict) and merge_key in item:
        return _hkey(item[merge_key])
    return ("absent", id(item))


def _order(
    merged: Sequence[Any], order: Sequence[Any], server_order: Sequence[Any], merge_key: str | None
) -> list[Any]:
    """apimachinery's ordering of a merged list: the items the patch names (`order`) in its
    order, the server-only items in their live order, interleaved by their live positions
    (an item only the patch has comes before the server-only items it is compared with)."""
    wanted: dict[Hashable, int] = {}
    for i, item in enumerate(order):
        wanted.setdefault(_key_of(item, merge_key), i)
    live: dict[Hashable, int] = {}
    for i, item in enumerate(server_order):
        live.setdefault(_key_of(item, merge_key), i)
    named = [item for item in merged if _key_of(item, merge_key) in wanted]
    server_only = [item for item in merged if _key_of(item, merge_key) not in wanted]
    named.sort(key=lambda item: wanted[_key_of(item, merge_key)])
    server_only.sort(key=lambda item: live.get(_key_of(item, merge_key), len(server_order)))
    result: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(named):
        if j >= len(named):
            result.append(server_only[i])
            i += 1
        elif i >= len(server_only):
            result.append(named[j])
            j += 1
        else:
            left = live.get(_key_of(server_only[i], merge_key), -1)
            right = live.get(_key_of(named[j], merge_key), -1)
            if left >= 0 and right >= 0 and left < right:
                result.append(server_only[i])
                i += 1
            else:
                result.append(named[j])
                j += 1
    return result


def _apply_set_element_order(
    result: dict[str, Any], patch: dict[str, Any], order_key: str, schema: str | None
) -> None:
    """`$setElementOrder/<list>`: merge the list (if the patch has it) and put its items in
    the given order; live items the order does not name keep their relative places."""
    order = patch.pop(order_key)
    name = order_key[len(_SET_ORDER) :]
    if not isinstance(order, list):
        _bad_request("invalid patch format of setElementOrder list")
    meta = _list_meta(schema, name)
    merge_key = meta.merge_key if meta is not None else None
    current = result.get(name)
    live = current if isinstance(current, list) else None
    incoming = patch.pop(name, _ABSENT)
    if incoming is not _ABSENT and incoming is not None and not isinstance(incoming, list):
        _bad_request("invalid patch format of setElementOrder list")
    if merge_key is not None:
        for item in order:
            if not isinstance(item, dict) or merge_key not in item:
                _bad_request(f"map: {_show(item)} does not contain declared merge key: {merge_key}")
    if isinstance(incoming, list):
        _check_order(incoming, order, merge_key)
        merged = _merge_value(live, incoming, schema, name)
    elif incoming is None and incoming is not _ABSENT:
        result.pop(name, None)  # the list itself is deleted
        return
    elif live is not None:
        merged = list(live)
    else:
        return
    if not isinstance(merged, list):
        return
    result[name] = _order(merged, order, live or [], merge_key)


def _check_order(incoming: Sequence[Any], order: Sequence[Any], merge_key: str | None) -> None:
    """`validatePatchWithSetOrderList`: the patch's items appear in the order list, in the
    same relative order (deletions and other directives excluded)."""
    if not incoming or not order:
        return
    items = [item for item in incoming if not (isinstance(item, dict) and _DIRECTIVE in item)]
    wanted = [_key_of(item, merge_key) for item in order]
    at = 0
    for item in items:
        item_key = _key_of(item, merge_key)
        while at < len(wanted) and wanted[at] != item_key:
            at += 1
        if at == len(wanted):
            _bad_request(
                "invalid patch format of setElementOrder list: the order of the patch list "
                f"{_show(list(incoming))} doesn't match the $setElementOrder list {_show(order)}"
            )
        at += 1
