"""Label and field selectors, as list and watch requests carry them.

Labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a` (comma = AND).
Fields: `metadata.name`, `metadata.namespace`, `spec.nodeName`, `status.phase` with =, ==, !=.
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

FIELDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "metadata.name": lambda o: o.get("metadata", {}).get("name", ""),
    "metadata.namespace": lambda o: o.get("metadata", {}).get("namespace", ""),
    "spec.nodeName": lambda o: o.get("spec", {}).get("nodeName", ""),
    "status.phase": lambda o: o.get("status", {}).get("phase", ""),
    "involvedObject.name": lambda o: o.get("involvedObject", {}).get("name", ""),
    "involvedObject.kind": lambda o: o.get("involvedObject", {}).get("kind", ""),
}


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


def field_matcher(selector: str | None, supported: tuple[str, ...] = tuple(FIELDS)) -> Matcher:
    if not selector:
        return lambda obj: True
    tests: list[Matcher] = []
    for part in _split(selector):
        m = _EQ.match(part)
        if not m:
            raise bad_request(f"invalid field selector: {part!r}")
        name, op, value = m[1], m[2], m[3]
        if name not in supported:
            raise bad_request(f'field label not supported: "{name}"')
        get = FIELDS[name]
        if op == "!=":
            tests.append(lambda o, g=get, v=value: g(o) != v)
        else:
            tests.append(lambda o, g=get, v=value: g(o) == v)
    return lambda obj: all(t(obj) for t in tests)
