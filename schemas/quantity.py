"""Kubernetes resource quantities, with the rules of k8s.io/apimachinery/pkg/api/resource.

A quantity is a fixed-point number with a suffix: binary ``Ki Mi Gi Ti Pi Ei``, decimal
``n u m "" k M G T P E`` or a decimal exponent (``12e6``, ``1E-3``).  The suffix picks the
``Format`` used when the value is printed back, and printing uses Kubernetes' canonical form
(``"1.5Gi"`` -> ``"1536Mi"``, ``"0.5"`` -> ``"500m"``).  Like Kubernetes, some inputs that
merely look canonical are printed back verbatim (``"+1"``, ``"1.001"``, ``"1e0"``); see
``_verbatim``.

Values are held as an exact integer count of nano-units: Kubernetes rounds every parsed
value up (away from zero) to a multiple of 10^-9, and sums of such values stay multiples.

Deliberate departures from apimachinery v0.37, where it misreads input, loses data or hangs:

* a number part without any digit (``"Gi"``, ``"."``, ``"+"``, ``"k"``) is rejected; Kubernetes'
  scanner reads those as zero.
* values past the largest suffix print with that suffix (``"1000E"``, ``"1024Ei"``);
  Kubernetes drops the suffix and prints ``"1"``.
* ``value()`` / ``milli_value()`` return exact Python ints rounded away from zero; Kubernetes
  wraps around past int64 and rounds some negative values the wrong way.
* inputs longer than 1024 characters, or whose magnitude reaches 1e1024, are rejected;
  Kubernetes truncates exponents to int32 and can spend unbounded time on them.
"""

from __future__ import annotations

import decimal
import functools
from fractions import Fraction
from typing import Any, Final, Literal, cast, get_args

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

__all__ = [
    "QUANTITY_PATTERN",
    "ZERO",
    "Format",
    "Quantity",
    "QuantityError",
    "parse_quantity",
]

Format = Literal["DecimalSI", "BinarySI", "DecimalExponent"]
_FORMATS: Final[tuple[str, ...]] = get_args(Format)

# Kubernetes' splitREString: only quoted in errors and the JSON schema; parsing uses a scanner.
QUANTITY_PATTERN: Final = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

_ERR_FORMAT: Final = f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
_ERR_SUFFIX: Final = "unable to parse quantity's suffix"

_MAX_LENGTH: Final = 1024  # keeps int() well below CPython's 4300-digit conversion limit
_MAX_DIGITS: Final = 1024  # every accepted value is below 10**_MAX_DIGITS in magnitude

_NANO: Final = 10**9  # values are stored as integer multiples of 10^-9
_MILLI_IN_NANO: Final = 10**6
_MAX_INT64: Final = 2**63 - 1  # BinarySI values are capped here when parsed

_DIGITS: Final = frozenset("0123456789")
_SUFFIX_LETTERS: Final = frozenset("eEinumkKMGTP")

_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
_DECIMAL_BY_EXPONENT: Final = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")  # index = power of 1024


class QuantityError(ValueError):
    """A string (or number) is not a valid Kubernetes quantity."""


def _scan(text: str) -> tuple[bool, str, str, str]:
    """Split ``text`` into (negative, integer digits, fraction digits, suffix).

    Mirrors apimachinery's parseQuantityString: sign, digits, optional ``.digits``, then suffix
    letters, an optional sign and digits; anything left over is a format error.
    """
    end = len(text)
    pos = 0
    negative = False
    if text[0] in "+-":
        negative = text[0] == "-"
        pos = 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    whole = text[start:pos]
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos != end:
        raise QuantityError(_ERR_FORMAT)
    return negative, whole, fraction, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """Return (base, exponent, format) for a suffix, like apimachinery's suffixer."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[2:] if suffix[1] in "+-" else suffix[1:]
        if digits and set(digits) <= _DIGITS:
            exponent = int(suffix[1:])
            # Go parses the exponent as an int64 and rejects anything wider.
            if -(2**63) <= exponent <= _MAX_INT64:
                return 10, exponent, "DecimalExponent"
    raise QuantityError(_ERR_SUFFIX)


def _ceil_div(numerator: int, denominator: int) -> int:
    """Ceiling of a non-negative numerator over a positive denominator."""
    return -(-numerator // denominator)


def _verbatim(text: str, num: str, fraction: str, exponent: int, fmt: Format) -> str | None:
    """Return ``text`` when Kubernetes would keep the input string as the printed form.

    ParseQuantity has an int64 fast path that stores the raw input as its String() cache when
    a cheap check says it "looks canonical"; the check ignores signs, leading zeros and
    trailing dots, so Kubernetes echoes "+1", "01", "1." and "1e0" back unchanged.
    """
    if fmt == "BinarySI":
        if fraction:
            return None
        precision = 14 - len(num) - exponent * 3 // 10
        scale = 0
    else:
        precision = 18 - len(num) - len(fraction)
        scale = exponent - len(fraction)
    if precision < 0 or scale < -9:
        return None
    shifted = num + fraction
    if fmt == "BinarySI":
        return text if int(shifted) & 0x07 else None
    if scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
        return text
    return None


def _parse_text(text: str) -> tuple[int, Format, str | None]:
    """Parse a quantity string into (nanos, format, verbatim text or None)."""
    if not text:
        raise QuantityError(_ERR_FORMAT)
    if len(text) > _MAX_LENGTH:
        raise QuantityError(f"quantities may not be longer than {_MAX_LENGTH} characters")
    if text == "0":
        return 0, "DecimalSI", "0"
    negative, whole, fraction, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)
    if not whole and not fraction:
        raise QuantityError(_ERR_FORMAT)

    num = whole.lstrip("0") or "0"
    significant = (num + fraction).lstrip("0")
    mantissa = int(significant or "0")
    if mantissa == 0:
        nanos = 0  # whatever the exponent, e.g. "0e9223372036854775807"
    elif base == 10:
        if len(significant) + exponent - len(fraction) > _MAX_DIGITS:
            raise QuantityError(f"quantities must be smaller than 1e{_MAX_DIGITS} in magnitude")
        shift = exponent - len(fraction) + 9  # power of ten between mantissa and nano-units
        if shift >= 0:
            nanos = mantissa * 10**shift
        elif -shift > len(significant):
            nanos = 1  # 0 < value < 0.1n: rounds up to the smallest unit
        else:
            nanos = _ceil_div(mantissa, 10**-shift)
    else:
        nanos = _ceil_div(mantissa * 2**exponent * _NANO, 10 ** len(fraction))

    verbatim = _verbatim(text, num, fraction, exponent, fmt)
    if fmt == "BinarySI":
        nanos = min(nanos, _MAX_INT64 * _NANO)  # Kubernetes caps binary values at int64
        if 0 < nanos < _NANO:
            fmt = "DecimalSI"  # below one, a binary suffix could only be printed by rounding
    return (-nanos if negative else nanos), fmt, verbatim


def _strip_factor(value: int, factor: int) -> tuple[int, int]:
    """Divide ``value`` (non-zero) by ``factor`` while exact; return (rest, times)."""
    times = 0
    while value % factor == 0:
        value //= factor
        times += 1
    return value, times


def _canonical(nanos: int, fmt: Format) -> str:
    """Kubernetes' canonical String() of a value in a format (CanonicalizeBytes)."""
    if nanos == 0:
        return "0"
    if fmt == "BinarySI" and abs(nanos) >= 1024 * _NANO and nanos % _NANO == 0:
        mantissa, power = _strip_factor(nanos // _NANO, 1024)
        top = len(_BINARY_BY_POWER) - 1
        if power > top:
            mantissa, power = mantissa * 1024 ** (power - top), top
        return f"{mantissa}{_BINARY_BY_POWER[power]}"
    # Small or fractional binary values print as DecimalSI rather than round.
    mantissa, exponent = _strip_factor(nanos, 10)
    exponent -= 9
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    if fmt == "DecimalExponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    if exponent > 18:
        mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
    return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"


def _round_away(nanos: int, unit: int) -> int:
    """``nanos`` expressed in ``unit`` nano-units, rounded away from zero."""
    magnitude = _ceil_div(abs(nanos), unit)
    return -magnitude if nanos < 0 else magnitude


def _check_format(fmt: str) -> Format:
    if fmt not in _FORMATS:
        raise ValueError(f"unknown quantity format {fmt!r}; expected one of {_FORMATS}")
    return cast("Format", fmt)


def _restore(nanos: int, fmt: Format, text: str) -> Quantity:
    """Pickle helper: rebuild a Quantity without re-parsing (which could change its format)."""
    return Quantity._make(nanos, fmt, text)


@functools.total_ordering
class Quantity:
    """An immutable, exact Kubernetes resource quantity.

    ``Quantity("1.5Gi")`` parses like ``Quantity.parse``.  Equality, hashing and ordering use
    the numeric value only, so ``Quantity("1Gi") == Quantity("1073741824")``; strings and
    numbers on the other side are parsed first.
    """

    __slots__ = ("_format", "_nanos", "_text")

    _nanos: int
    _format: Format
    _text: str | None  # None until first printed (see _set)

    def __init__(self, value: str | int | float | Quantity) -> None:
        if isinstance(value, Quantity):
            self._set(value._nanos, value._format, value._text)
            return
        if isinstance(value, bool):
            raise TypeError("a bool is not a quantity")
        if isinstance(value, int):
            text = str(value)
        elif isinstance(value, float):
            text = repr(value)  # the shortest text that round-trips, as JSON would carry it
        elif isinstance(value, str):
            text = value
        else:
            raise TypeError(f"cannot parse a {type(value).__name__} as a quantity")
        self._set(*_parse_text(text))

    def _set(self, nanos: int, fmt: Format, text: str | None) -> None:
        object.__setattr__(self, "_nanos", nanos)
        object.__setattr__(self, "_format", fmt)
        # The canonical text of a computed quantity is made when it is first printed: sums and
        # differences are mostly compared, never printed (rendering each one was most of the
        # cost of quota's and the scheduler's arithmetic).
        object.__setattr__(self, "_text", text)

    @classmethod
    def _make(cls, nanos: int, fmt: Format, text: str | None = None) -> Quantity:
        quantity = object.__new__(cls)
        quantity._set(nanos, fmt, text)
        return quantity

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> tuple[Any, tuple[int, Format, str]]:
        return _restore, (self._nanos, self._format, str(self))

    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Quantity:
        return self

    # -- construction --------------------------------------------------------------------

    @classmethod
    def parse(cls, value: str | int | float | Quantity) -> Quantity:
        """Parse like Kubernetes' ParseQuantity; numbers are parsed from their JSON text."""
        if isinstance(value, Quantity):
            return value
        return cls(value)

    @classmethod
    def from_milli(cls, milli: int, fmt: Format = "DecimalSI") -> Quantity:
        """Like NewMilliQuantity: ``milli`` thousandths, printed in ``fmt``."""
        return cls._make(_checked_int(milli) * _MILLI_IN_NANO, _check_format(fmt))

    @classmethod
    def from_int(cls, value: int, fmt: Format = "DecimalSI") -> Quantity:
        """Like NewQuantity: a whole number, printed in ``fmt``."""
        return cls._make(_checked_int(value) * _NANO, _check_format(fmt))

    # -- accessors -----------------------------------------------------------------------

    @property
    def format(self) -> Format:
        """The format chosen by the suffix (or by the left operand of arithmetic)."""
        return self._format

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = _canonical(self._nanos, self._format)
            object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def rounded_up_to_milli(self) -> Quantity:
        """This quantity rounded away from zero to thousandths, in its format (kube-apiserver's
        defaulting of a ResourceList); itself when it holds no finer part."""
        if self._nanos % _MILLI_IN_NANO == 0:
            return self
        return Quantity.from_milli(self.milli_value(), self._format)

    def milli_value(self) -> int:
        """The value in thousandths, rounded away from zero (MilliValue)."""
        return _round_away(self._nanos, _MILLI_IN_NANO)

    def value(self) -> int:
        """The value in whole units, rounded away from zero (Value)."""
        return _round_away(self._nanos, _NANO)

    def as_decimal(self) -> decimal.Decimal:
        """The exact value; construction from text needs no decimal context."""
        whole, rest = divmod(abs(self._nanos), _NANO)
        if rest == 0:
            return decimal.Decimal(self._nanos // _NANO)
        sign = "-" if self._nanos < 0 else ""
        return decimal.Decimal(f"{sign}{whole}.{rest:09d}".rstrip("0"))

    def is_zero(self) -> bool:
        return self._nanos == 0

    def nano_value(self) -> int:
        """The exact value in units of 10^-9 (what every quantity is held as)."""
        return self._nanos

    def __bool__(self) -> bool:
        return self._nanos != 0

    # -- arithmetic (k8s Add/Sub: the result keeps the left format unless the left is 0) ----

    def __add__(self, other: object) -> Quantity:
        right = _coerce(other)
        if right is None:
            return NotImplemented
        fmt = right._format if self._nanos == 0 else self._format
        return Quantity._make(self._nanos + right._nanos, fmt)

    def __radd__(self, other: object) -> Quantity:  # makes sum() work: 0 + q keeps q's format
        left = _coerce(other)
        if left is None:
            return NotImplemented
        return left + self

    def __sub__(self, other: object) -> Quantity:
        right = _coerce(other)
        if right is None:
            return NotImplemented
        fmt = right._format if self._nanos == 0 else self._format
        return Quantity._make(self._nanos - right._nanos, fmt)

    def __rsub__(self, other: object) -> Quantity:
        left = _coerce(other)
        if left is None:
            return NotImplemented
        return left - self

    def __neg__(self) -> Quantity:
        return Quantity._make(-self._nanos, self._format)

    # -- comparison by value --------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        try:
            right = _coerce(other)
        except QuantityError:
            return False
        if right is None:
            return NotImplemented
        return self._nanos == right._nanos

    def __lt__(self, other: object) -> bool:
        right = _coerce(other)
        if right is None:
            return NotImplemented
        return self._nanos < right._nanos

    def __hash__(self) -> int:
        # Equal to hash() of the same number as int/Decimal/Fraction, since those compare equal.
        return hash(Fraction(self._nanos, _NANO))

    # -- pydantic v2 ----------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                Quantity.__str__, info_arg=False, return_schema=core_schema.str_schema()
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # Kubernetes publishes Quantity as int-or-string.
        return {
            "anyOf": [{"type": "string", "pattern": QUANTITY_PATTERN}, {"type": "number"}],
            "x-kubernetes-int-or-string": True,
        }


def _checked_int(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {type(value).__name__}")
    if abs(value) >= 10**_MAX_DIGITS:
        raise QuantityError(f"quantities must be smaller than 1e{_MAX_DIGITS} in magnitude")
    return value


def _coerce(other: object) -> Quantity | None:
    """The other operand as a Quantity, or None when its type is not quantity-like."""
    if isinstance(other, Quantity):
        return other
    if isinstance(other, str | int | float) and not isinstance(other, bool):
        return Quantity(other)
    return None


def _validate(value: Any) -> Quantity:
    if isinstance(value, str):
        return _from_text(value)  # a QuantityError becomes a pydantic value_error
    if isinstance(value, bool) or not isinstance(value, int | float | Quantity):
        raise PydanticCustomError("quantity_type", "Input should be a quantity string or number")
    return Quantity.parse(value)


@functools.lru_cache(maxsize=4096)
def _from_text(text: str) -> Quantity:
    """Quantities are immutable and events repeat the same few texts ("100m", "128Mi"):
    decoding a log parses each distinct text once (parsing was ~10% of a rebuild)."""
    return Quantity(text)


def parse_quantity(value: str | int | float | Quantity) -> Quantity:
    """Shorthand for ``Quantity.parse``."""
    return Quantity.parse(value)


ZERO: Final = Quantity.parse("0")
