r"""Label and field selectors, as list and watch requests carry them.

Labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a` (comma = AND).
Fields: =, ==, != on the fields kube-apiserver makes selectable for each kind (its registry
strategies' ToSelectableFields; `metadata.name` and `metadata.namespace` for every kind), with
its escapes (`\,`, `\=`, `\\` in a value). `kubectl describe` lists a pod's Events by
`involvedObject.name`, `.namespace` and `.uid`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from services.apiserver.errors import bad_request

Matcher = Callable[[dict[str, Any]], bool]

_SET = re.compile(r"^\s*(!?)([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)([A-Za-z0-9_./-]+)\s*$")

Getter = Callable[[dict[str, Any]], str]


def _at(*path: str) -> Getter:
    """The string at `path` ("" when absent), as a field set has every selectable field."""

    def get(obj: dict[str, Any]) -> str:
        value: Any = obj
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return "" if value is None else str(value)

    return get


def _flag(*path: str) -> Getter:
    """A bool at `path` as Go's strconv.FormatBool writes it (false when absent)."""
    at = _at(*path)
    return lambda obj: "true" if at(obj) == "True" else "false"


_META: dict[str, Getter] = {
    "metadata.name": _at("metadata", "name"),
    "metadata.namespace": _at("metadata", "namespace"),
}

# Per kind, as kube-apiserver's registry strategies select them (pkg/registry/core/*).
FIELDS: dict[str, dict[str, Getter]] = {
    "Pod": {
        **_META,
        "spec.nodeName": _at("spec", "nodeName"),
        "spec.restartPolicy": _at("spec", "restartPolicy"),
        "spec.schedulerName": _at("spec", "schedulerName"),
        "spec.serviceAccountName": _at("spec", "serviceAccountName"),
        "spec.hostNetwork": _flag("spec", "hostNetwork"),
        "status.phase": _at("status", "phase"),
        "status.podIP": _at("status", "podIP"),
        "status.nominatedNodeName": _at("status", "nominatedNodeName"),
    },
    "Event": {
        **_META,
        **{
            f"involvedObject.{name}": _at("involvedObject", name)
            for name in (
                "kind",
                "namespace",
                "name",
                "uid",
                "apiVersion",
                "resourceVersion",
                "fieldPath",
            )
        },
        "reason": _at("reason"),
        "reportingComponent": _at("reportingComponent"),
        "source": _at("source", "component"),
        "type": _at("type"),
    },
    "Node": {**_META, "spec.unschedulable": _flag("spec", "unschedulable")},
    "Namespace": {**_META, "status.phase": _at("status", "phase")},
}

_FIELD_TERM = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*(!=|==|=)(.*)$", re.DOTALL)
_ESCAPED = re.compile(r"\\(.)")


def _split(selector: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p for p in parts if p.strip()]


def label_matcher(selector: str | None) -> Matcher:
    if not selector:
        return lambda obj: True
    tests: list[Callable[[dict[str, str]], bool]] = []
    for part in _split(selector):
        if m := _SET.match(part):
            if m[1]:
                raise bad_request(f"unable to parse requirement: {part!r}")
            key, op = m[2], m[3]
            values = {v.strip() for v in m[4].split(",") if v.strip()}
            if op == "in":
                tests.append(lambda lb, k=key, vs=values: lb.get(k) in vs)
            else:
                tests.append(lambda lb, k=key, vs=values: lb.get(k) not in vs)
        elif m := _EQ.match(part):
            key, op, value = m[1], m[2], m[3]
            if op == "!=":
                tests.append(lambda lb, k=key, v=value: lb.get(k) != v)
            else:
                tests.append(lambda lb, k=key, v=value: lb.get(k) == v)
        elif m := _EXISTS.match(part):
            key, negate = m[2], bool(m[1])
            tests.append(lambda lb, k=key, n=negate: (k in lb) != n)
        else:
            raise bad_request(f"unable to parse requirement: {part!r}")

    def match(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(t(labels) for t in tests)

    return match


def _field_terms(selector: str) -> list[str]:
    """Split on the commas a backslash does not escape (apimachinery's fields.ParseSelector)."""
    terms, current, escaped = [], "", False
    for ch in selector:
        if escaped:
            current += "\\" + ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(current)
            current = ""
        else:
            current += ch
    if escaped:
        raise bad_request(f"invalid field selector: {selector!r}: a trailing backslash")
    terms.append(current)
    return [t for t in terms if t.strip()]


def field_equals(selector: str | None, field: str) -> str | None:
    """The value an equality term of `selector` requires of `field` (None when no term does):
    what narrows a LIST to an index before `field_matcher` checks every term."""
    for part in _field_terms(selector or ""):
        m = _FIELD_TERM.match(part)
        if m and m[1] == field and m[2] != "!=":
            return _ESCAPED.sub(r"\1", m[3].strip())
    return None


def field_matcher(selector: str | None, kind: str) -> Matcher:
    """The objects of `kind` a fieldSelector keeps; 400 for a field the kind does not select
    by (kube-apiserver's "field label not supported") or a term that is no equality."""
    if not selector:
        return lambda obj: True
    selectable = FIELDS.get(kind, _META)
    tests: list[Matcher] = []
    for part in _field_terms(selector):
        m = _FIELD_TERM.match(part)
        if not m:
            raise bad_request(f"invalid field selector: {part!r}")
        name, op, value = m[1], m[2], _ESCAPED.sub(r"\1", m[3].strip())
        get = selectable.get(name)
        if get is None:
            raise bad_request(f"field label not supported: {name}")
        if op == "!=":
            tests.append(lambda o, g=get, v=value: g(o) != v)
        else:
            tests.append(lambda o, g=get, v=value: g(o) == v)
    return lambda obj: all(t(obj) for t in tests)
