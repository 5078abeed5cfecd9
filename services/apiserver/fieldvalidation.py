"""Server-side field validation against Kubernetes' own schema, as kube-apiserver does it.

Every field of the Kubernetes version we serve is accepted and kept (the typed models hold what
the roles interpret; the rest travels as validated JSON). A body is checked against the
published definition of its kind (`schemas.kubeschema`) before it is decoded:

- a value of the wrong JSON type is a 422 naming the field path
  (`spec.containers[0].ports[0].containerPort: Invalid value: "80": must be of type integer`);
- an unknown field follows the request's `fieldValidation` directive: `Strict` refuses it
  (400 `strict decoding error: unknown field "spec.foo"`, what kubectl asks for), `Warn`
  drops it and answers with a `Warning` header (kube-apiserver's default), `Ignore` drops it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema

from schemas.kubeschema import definitions
from services.apiserver import errors
from services.apiserver.fielderrors import FieldError, go_quote, invalid_status

__all__ = ["Checked", "Directive", "check", "directive"]

Directive = Literal["Ignore", "Warn", "Strict"]
DEFAULT_DIRECTIVE: Directive = "Warn"  # kube-apiserver's default since 1.27
_DIRECTIVES: dict[str, Directive] = {"Ignore": "Ignore", "Warn": "Warn", "Strict": "Strict"}


def directive(value: str | None) -> Directive:
    """The `fieldValidation` query parameter; a bad value is a 400 like kube-apiserver's."""
    if value is None or value == "":
        return DEFAULT_DIRECTIVE
    found = _DIRECTIVES.get(value)
    if found is None:
        raise errors.bad_request(
            f"fieldValidation must be one of Ignore, Warn or Strict, not {value!r}"
        )
    return found


@dataclass
class Checked:
    """A body that passed: unknown fields removed (under Ignore/Warn), and what to warn about."""

    data: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def check(definition: str, kind: str, name: str, data: Any, how: Directive) -> Checked:
    """Validate decoded JSON `data` against the Kubernetes definition `definition`
    (e.g. `io.k8s.api.core.v1.Pod`); raise the ApiError kube-apiserver would answer."""
    if not isinstance(data, dict):
        raise errors.bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: the body must be a JSON object'
        )
    problems: list[FieldError] = []
    unknown: list[tuple[list[str | int], str]] = []
    for error in _validator(definition).iter_errors(data):
        if error.validator == "required":
            # The published schema lists every Go field without omitempty as required
            # (all of a Node's nodeInfo strings); kube-apiserver decodes them as zero values
            # and leaves "required" to its validation code, as our typed validation does.
            continue
        if error.validator == "additionalProperties":
            known = error.schema.get("properties", {})
            parent = list(error.absolute_path)
            unknown += [(parent, key) for key in error.instance if key not in known]
        else:
            problems.append(_field_error(error))
    if problems:
        problems.sort(key=lambda e: e.field)
        raise errors.ApiError(invalid_status(kind, name, problems))
    if not unknown:
        return Checked(data)
    paths = [_join(_path_text(parent), key) for parent, key in unknown]
    if how == "Strict":
        detail = ", ".join(f"unknown field {go_quote(p)}" for p in paths)
        raise errors.bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: strict decoding error: {detail}'
        )
    for parent, key in unknown:
        _holder(data, parent).pop(key, None)
    warnings = [f"unknown field {go_quote(p)}" for p in paths] if how == "Warn" else []
    return Checked(data, warnings)


# --- internals ------------------------------------------------------------------------------------


@functools.cache
def _validator(definition: str) -> jsonschema.protocols.Validator:
    root = {"$defs": _closed_definitions(), "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(root)


@functools.cache
def _closed_definitions() -> dict[str, Any]:
    """The definitions with every object that lists its properties closed
    (`additionalProperties: false`), so that unknown fields surface as errors; maps
    (`additionalProperties: {…}`) and free-form objects stay open."""
    return {name: _closed(schema) for name, schema in definitions().items()}


def _closed(node: Any) -> Any:
    if isinstance(node, dict):
        out = {key: _closed(value) for key, value in node.items()}
        if "properties" in node and "additionalProperties" not in node:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_closed(value) for value in node]
    return node


def _holder(data: dict[str, Any], path: Sequence[str | int]) -> dict[str, Any]:
    node: Any = data
    for step in path:
        node = node[step]
    return node  # type: ignore[no-any-return]


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _path_text(path: Iterable[str | int], schema_path: Iterable[Any] = ()) -> str:
    """`field.Path.String()`: `spec.containers[0].name`, map keys as `metadata.labels[app]`.

    Whether a string step is a field or a map key is read from the schema path (a map value
    is reached through `additionalProperties`)."""
    map_steps = _map_key_positions(list(schema_path))
    out = ""
    for position, step in enumerate(path):
        if isinstance(step, int):
            out += f"[{step}]"
        elif position in map_steps:
            out += f"[{step}]"
        else:
            out = _join(out, step)
    return out


def _map_key_positions(schema_path: list[Any]) -> set[int]:
    """Which instance steps (by position) the schema path enters as map values."""
    positions: set[int] = set()
    step = 0
    index = 0
    while index < len(schema_path):
        token = schema_path[index]
        if token == "properties" and index + 1 < len(schema_path):
            step += 1
            index += 2
            continue
        if token == "additionalProperties":
            positions.add(step)
            step += 1
        elif token in ("items", "prefixItems"):
            step += 1
        index += 1
    return positions


_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "object": "object",
    "array": "array",
}


def _field_error(error: jsonschema.ValidationError) -> FieldError:
    where = _path_text(error.absolute_path, error.absolute_schema_path) or "<root>"
    if error.validator == "type":
        expected = error.validator_value
        names = expected if isinstance(expected, list) else [expected]
        wanted = " or ".join(_JSON_TYPES[n] for n in names if n in _JSON_TYPES)
        detail = f"must be of type {wanted}"
    elif error.validator in ("oneOf", "anyOf"):
        detail = "must be a string or a number"  # quantities and int-or-string fields
    else:
        detail = str(error.message)
    return FieldError(
        type="FieldValueTypeInvalid", field=where, bad_value=error.instance, detail=detail
    )
