"""Field-level validation errors and the 422 `Status` built from them, as Kubernetes does.

Mirrors k8s.io/apimachinery `util/validation/field` (`Error`, `ErrorBody`, the error type strings
and their human text) and `api/errors.NewInvalid`:

    spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to …
    spec: Forbidden: Pod QOS Class may not change as a result of resizing
    metadata.name: Required value: name or generateName is required

A bad value is printed the way Go's `ErrorBody` prints it: strings quoted with `%q`, numbers and
booleans bare, `null` for None, and values Kubernetes holds as a `fmt.Stringer` (a
`ResourceName`, a `resource.Quantity`) bare as well; wrap such strings in `Verbatim`.
Required, Forbidden, TooLong and InternalError errors never print their value.

Paths are plain strings built like `field.Path.String()`: `spec.containers[0].name`,
`spec.containers[0].resources.requests[cpu]`; the empty root path prints as `[]`.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from schemas.k8s import Status, StatusCause, StatusDetails
from schemas.quantity import Quantity

__all__ = [
    "ROOT",
    "ErrorType",
    "FieldError",
    "Verbatim",
    "aggregate",
    "child",
    "duplicate",
    "forbidden",
    "go_quote",
    "index",
    "internal",
    "invalid",
    "invalid_status",
    "key",
    "not_found",
    "not_supported",
    "required",
    "too_long",
]

ErrorType = Literal[
    "FieldValueRequired",
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueNotSupported",
    "FieldValueDuplicate",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueNotFound",
    "FieldValueTypeInvalid",
    "InternalError",
]

# ErrorType.String() in Go.
_TYPE_TEXT: dict[str, str] = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}
# Types whose body never shows the bad value.
_VALUELESS = frozenset(
    {"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"}
)

ROOT = "[]"
"""`field.NewPath("").String()`: the path of errors about the whole object."""


class Verbatim(str):
    """A bad value Kubernetes prints without quotes (it is a `fmt.Stringer` in Go, such as a
    `core.ResourceName`): `Unsupported value: storage` rather than `"storage"`."""

    __slots__ = ()


# --- Go formatting ------------------------------------------------------------------------------

_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def _go_printable(char: str) -> bool:
    # strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
    if char == " ":
        return True
    return unicodedata.category(char)[0] in "LMNPS"


def go_quote(text: str) -> str:
    """`strconv.Quote` / `%q`: a double-quoted Go string literal with Go's escapes."""
    out = ['"']
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif _go_printable(char):
            out.append(char)
        else:
            code = ord(char)
            if 0xD800 <= code <= 0xDFFF:  # a lone surrogate is invalid UTF-8 in Go
                out.append("\\ufffd")
            elif code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _go_value(value: object) -> str:
    """How `ErrorBody` prints a bad value of each kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Verbatim):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, Quantity):
        return str(value)
    if isinstance(value, int | float):
        return str(value)
    try:  # Go falls back to %#v of the struct; JSON is the readable equivalent here.
        return json.dumps(value, default=str, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


# --- the error ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field-level validation error (Go `*field.Error`)."""

    type: ErrorType
    field: str
    bad_value: object = ""
    detail: str = ""

    def error_body(self) -> str:
        """`ErrorBody()`: the message without the field path (a StatusCause's message)."""
        text = _TYPE_TEXT.get(self.type, self.type)
        if self.type not in _VALUELESS:
            text = f"{text}: {_go_value(self.bad_value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def error(self) -> str:
        """`Error()`: `<field>: <body>`."""
        return f"{self.field}: {self.error_body()}"

    def __str__(self) -> str:
        return self.error()


# --- constructors, named after the Go ones ------------------------------------------------------


def required(field: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", field, "", detail)


def invalid(field: str, value: object, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", field, value, detail)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", field, "", detail)


def duplicate(field: str, value: object) -> FieldError:
    return FieldError("FieldValueDuplicate", field, value, "")


def not_found(field: str, value: object) -> FieldError:
    return FieldError("FieldValueNotFound", field, value, "")


def not_supported(field: str, value: object, valid: Sequence[str]) -> FieldError:
    detail = ""
    if valid:
        detail = "supported values: " + ", ".join(go_quote(v) for v in valid)
    return FieldError("FieldValueNotSupported", field, value, detail)


def too_long(field: str, max_length: int) -> FieldError:
    return FieldError("FieldValueTooLong", field, "", f"must have at most {max_length} bytes")


def internal(field: str, detail: str) -> FieldError:
    return FieldError("InternalError", field, None, detail)


# --- paths --------------------------------------------------------------------------------------


def child(path: str, *names: str) -> str:
    """`path.Child(name, ...)`."""
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int) -> str:
    """`path.Index(i)`."""
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    """`path.Key(k)`: the key is printed raw, not quoted."""
    return f"{path}[{k}]"


# --- the 422 body -------------------------------------------------------------------------------


def aggregate(errors: Iterable[FieldError]) -> str:
    """`ErrorList.ToAggregate().Error()`: duplicates (by text) dropped, one error bare,
    several as `[e1, e2]`."""
    seen: set[str] = set()
    texts: list[str] = []
    for err in errors:
        text = err.error()
        if text not in seen:
            seen.add(text)
            texts.append(text)
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"


def invalid_status(
    kind: str, name: str, errors: Sequence[FieldError], *, group: str = ""
) -> Status:
    """The body of kube-apiserver's `NewInvalid`: 422, reason Invalid, one cause per error
    (`reason` is the error type, `message` its body, `field` its path); a kind of a named
    group is called `Kind.group` in the message, as its qualified kind prints."""
    causes = [
        StatusCause(reason=err.type, message=err.error_body(), field=err.field) for err in errors
    ]
    qualified = f"{kind}.{group}" if group else kind
    message = f"{qualified} {go_quote(name)} is invalid"
    if errors:
        message = f"{message}: {aggregate(errors)}"
    return Status(
        status="Failure",
        message=message,
        reason="Invalid",
        details=StatusDetails(
            name=name or None, group=group or None, kind=kind or None, causes=causes or None
        ),
        code=422,
    )
