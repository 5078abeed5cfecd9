"""Server-side apply (`application/apply-patch+yaml`): field ownership, conflicts, merge.

What kube-apiserver's structured-merge-diff does, for the fields a configuration sets:

- the set of fields an applied configuration names (its leaves; items of keyed lists named
  `k:{"name":"app"}` by their merge key, from Kubernetes' schema) is what its field manager
  owns afterwards, recorded in `metadata.managedFields` as FieldsV1 (`f:`/`k:` keys, `.` for
  an owned list item);
- a field another manager owns, set here to a different value, is a conflict: 409 with
  `Apply failed with N conflict(s): conflict with "<manager>" …: .spec.containers[name="app"].image`
  unless `force=true`, which moves the field to this manager;
- the configuration is merged into the live object (maps recursively, keyed lists by key,
  other lists replaced); a field this manager owned and now omits is removed unless another
  manager still owns it.

Pure functions over Kubernetes JSON. Writes other than apply do not record `Update` entries
here (a simplification: only appliers own fields, so only appliers conflict).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from schemas.base import format_time
from schemas.kubeschema import REF_PREFIX, definitions

__all__ = ["ApplyConflict", "ApplyResult", "conflict_message", "field_paths", "server_side_apply"]

Path = tuple[str, ...]


@dataclass(frozen=True)
class ApplyConflict(Exception):
    """Fields other managers own with other values: (manager, path) pairs."""

    conflicts: tuple[tuple[str, Path], ...]


@dataclass(frozen=True)
class ApplyResult:
    merged: dict[str, Any]  # the live object with the configuration applied, managedFields set


# --- field sets -----------------------------------------------------------------------------------


Defs = Mapping[str, Any]


def _resolve(schema: Any, defs: Defs) -> dict[str, Any]:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        schema = defs.get(ref[len(REF_PREFIX) :], {}) if ref.startswith(REF_PREFIX) else {}
    return schema if isinstance(schema, dict) else {}


def _list_keys(schema: Mapping[str, Any]) -> list[str] | None:
    keys = schema.get("x-kubernetes-list-map-keys")
    if isinstance(keys, list) and keys:
        return [str(k) for k in keys]
    merge_key = schema.get("x-kubernetes-patch-merge-key")
    if isinstance(merge_key, str) and schema.get("x-kubernetes-list-type") != "atomic":
        return [merge_key]
    return None


def _item_key(item: Mapping[str, Any], keys: list[str]) -> str:
    return "k:" + json.dumps({k: item.get(k) for k in keys}, separators=(",", ":"), sort_keys=True)


def field_paths(value: Any, schema: Any, defs: Defs | None = None) -> set[Path]:
    """The leaves a configuration sets, as FieldsV1 paths."""
    out: set[Path] = set()
    defs = definitions() if defs is None else defs
    _collect(value, _resolve(schema, defs), (), out, defs)
    return out


def _collect(value: Any, schema: Mapping[str, Any], path: Path, out: set[Path], defs: Defs) -> None:
    if isinstance(value, dict) and value:
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            child = properties.get(key) if key in properties else extra
            _collect(sub, _resolve(child, defs), (*path, f"f:{key}"), out, defs)
        return
    if isinstance(value, list) and value:
        keys = _list_keys(schema)
        items = _resolve(schema.get("items"), defs)
        if keys and all(isinstance(item, dict) for item in value):
            for item in value:
                item_path = (*path, _item_key(item, keys))
                out.add((*item_path, "."))
                _collect(item, items, item_path, out, defs)
            return
    out.add(path)


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for step in path:
            node = node.setdefault(step, {})
    return tree


def from_fields_v1(tree: Mapping[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for step, sub in tree.items():
        path = (*prefix, step)
        if isinstance(sub, dict) and sub:
            out |= from_fields_v1(sub, path)
        else:
            out.add(path)
    return out


def _render(path: Path) -> str:
    text = ""
    for step in path:
        if step.startswith("f:"):
            text += "." + step[2:]
        elif step.startswith("k:"):
            keys = json.loads(step[2:])
            text += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
    return text


def conflict_message(conflicts: Iterable[tuple[str, Path]], api_version: str) -> str:
    found = sorted(conflicts, key=lambda c: (c[0], _render(c[1])))
    noun = "conflict" if len(found) == 1 else "conflicts"
    lines = [f'conflict with "{m}" using {api_version}: {_render(p)}' for m, p in found]
    if len(lines) == 1:
        return f"Apply failed with 1 conflict: {lines[0]}"
    return f"Apply failed with {len(lines)} {noun}: " + "\n".join(f"- {line}" for line in lines)


def render_path(path: Path) -> str:
    return _render(path)


# --- values at paths ------------------------------------------------------------------------------

_MISSING = object()


def _get(obj: Any, path: Path) -> Any:
    node = obj
    for step in path:
        if step == ".":
            return node
        if step.startswith("f:") and isinstance(node, dict):
            node = node.get(step[2:], _MISSING)
        elif step.startswith("k:") and isinstance(node, list):
            keys = json.loads(step[2:])
            node = next(
                (
                    i
                    for i in node
                    if isinstance(i, dict) and all(i.get(k) == v for k, v in keys.items())
                ),
                _MISSING,
            )
        else:
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def _delete(obj: Any, path: Path) -> None:
    if not path:
        return
    if path[-1] == ".":
        path = path[:-1]
    parent = _get(obj, path[:-1]) if len(path) > 1 else obj
    step = path[-1]
    if step.startswith("f:") and isinstance(parent, dict):
        parent.pop(step[2:], None)
    elif step.startswith("k:") and isinstance(parent, list):
        keys = json.loads(step[2:])
        parent[:] = [
            i
            for i in parent
            if not (isinstance(i, dict) and all(i.get(k) == v for k, v in keys.items()))
        ]


def _merge(live: Any, config: Any, schema: Mapping[str, Any], defs: Defs) -> Any:
    """The configuration merged into the live value: maps recursively, keyed lists by key."""
    if isinstance(live, dict) and isinstance(config, dict):
        out = dict(live)
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, value in config.items():
            child = _resolve(properties.get(key) if key in properties else extra, defs)
            out[key] = (
                _merge(live.get(key), value, child, defs) if key in live else copy.deepcopy(value)
            )
        return out
    if isinstance(live, list) and isinstance(config, list):
        keys = _list_keys(schema)
        if keys and all(isinstance(i, dict) for i in [*live, *config]):
            items = _resolve(schema.get("items"), defs)
            by_key = {_item_key(i, keys): i for i in live}
            merged = [
                _merge(by_key[_item_key(i, keys)], i, items, defs)
                if _item_key(i, keys) in by_key
                else copy.deepcopy(i)
                for i in config
            ]
            named = {_item_key(i, keys) for i in config}
            return merged + [i for i in live if _item_key(i, keys) not in named]
    return copy.deepcopy(config)


# --- apply ----------------------------------------------------------------------------------------


def server_side_apply(
    live: dict[str, Any],
    config: dict[str, Any],
    *,
    definition: str,
    manager: str,
    force: bool,
    now: datetime,
    api_version: str = "v1",
    subresource: str | None = None,
    defs: Defs | None = None,
) -> ApplyResult:
    """Apply `config` for `manager` to `live` (both Kubernetes JSON); raises ApplyConflict.
    `defs` holds `definition` and what it references (Kubernetes' own by default)."""
    defs = definitions() if defs is None else defs
    schema = _resolve({"$ref": REF_PREFIX + definition}, defs)
    ignored = {"apiVersion", "kind"}
    meta_ignored = {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "managedFields",
        "creationTimestamp",
        "generation",
    }
    scoped = {k: v for k, v in config.items() if k not in ignored}
    if isinstance(scoped.get("metadata"), dict):
        scoped["metadata"] = {k: v for k, v in scoped["metadata"].items() if k not in meta_ignored}
        if not scoped["metadata"]:
            scoped.pop("metadata")
    applied = field_paths(scoped, schema, defs)
    entries = [
        dict(e)
        for e in (live.get("metadata") or {}).get("managedFields") or []
        if isinstance(e, dict)
    ]
    mine = [
        e
        for e in entries
        if e.get("manager") == manager
        and e.get("operation") == "Apply"
        and e.get("subresource") == subresource
    ]
    others = [e for e in entries if e not in mine]
    previously = (
        set().union(*(from_fields_v1(e.get("fieldsV1") or {}) for e in mine)) if mine else set()
    )
    conflicts: list[tuple[str, Path]] = []
    for entry in others:
        owned = from_fields_v1(entry.get("fieldsV1") or {})
        for path in owned & applied:
            if path[-1] == ".":
                continue
            if _get(live, path) != _get(scoped, path):
                conflicts.append((str(entry.get("manager")), path))
    if conflicts and not force:
        raise ApplyConflict(tuple(conflicts))
    merged = _merge(live, scoped, schema, defs)
    owned_by_others = (
        set().union(*(from_fields_v1(e.get("fieldsV1") or {}) for e in others)) if others else set()
    )
    for path in sorted(previously - applied - owned_by_others, key=len, reverse=True):
        _delete(merged, path)
    taken = {p for _, p in conflicts}
    kept: list[dict[str, Any]] = []
    for entry in others:
        owned = from_fields_v1(entry.get("fieldsV1") or {})
        if taken & owned:
            owned -= taken
            if not owned:
                continue
            entry["fieldsV1"] = to_fields_v1(owned)
        kept.append(entry)
    record: dict[str, Any] = {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": format_time(now),
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(applied),
    }
    if subresource:
        record["subresource"] = subresource
    merged.setdefault("metadata", {})["managedFields"] = [*kept, record]
    return ApplyResult(merged)
