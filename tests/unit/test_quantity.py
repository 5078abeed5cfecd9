"""Tests for schemas.quantity, checked against Kubernetes' own behaviour.

The expected strings and formats in ``K8S_EXAMPLES`` were produced by running
k8s.io/apimachinery v0.37.2 (``ParseQuantity`` then ``String()``) on the inputs of its
quantity_test.go (TestQuantityParse, TestQuantityString, TestQuantityParseEmit,
TestParseQuantity), quantity_example_test.go and a few more.  ``milli``/``value`` are the
exact values rounded away from zero; for the rows above ~9.2e15 Kubernetes' int64
``MilliValue()`` would wrap around instead.
"""

from __future__ import annotations

import copy
import pickle
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from schemas.quantity import (
    QUANTITY_PATTERN,
    ZERO,
    Format,
    Quantity,
    QuantityError,
    parse_quantity,
)

FORMAT_ERROR = f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
SUFFIX_ERROR = "unable to parse quantity's suffix"

# (input, String(), Format, milli_value(), value())
K8S_EXAMPLES: list[tuple[str, str, Format, int, int]] = [
    ("0", "0", "DecimalSI", 0, 0),
    ("0n", "0", "DecimalSI", 0, 0),
    ("0u", "0", "DecimalSI", 0, 0),
    ("0m", "0", "DecimalSI", 0, 0),
    ("0Ki", "0", "BinarySI", 0, 0),
    ("0k", "0", "DecimalSI", 0, 0),
    ("0Mi", "0", "BinarySI", 0, 0),
    ("0M", "0", "DecimalSI", 0, 0),
    ("0Gi", "0", "BinarySI", 0, 0),
    ("0G", "0", "DecimalSI", 0, 0),
    ("0Ti", "0", "BinarySI", 0, 0),
    ("0T", "0", "DecimalSI", 0, 0),
    ("1", "1", "DecimalSI", 1000, 1),
    ("1Ki", "1Ki", "BinarySI", 1024000, 1024),
    ("8Ki", "8Ki", "BinarySI", 8192000, 8192),
    ("7Mi", "7Mi", "BinarySI", 7340032000, 7340032),
    ("6Gi", "6Gi", "BinarySI", 6442450944000, 6442450944),
    ("5Ti", "5Ti", "BinarySI", 5497558138880000, 5497558138880),
    ("4Pi", "4Pi", "BinarySI", 4503599627370496000, 4503599627370496),
    ("3Ei", "3Ei", "BinarySI", 3458764513820540928000, 3458764513820540928),
    ("10Ti", "10Ti", "BinarySI", 10995116277760000, 10995116277760),
    ("100Ti", "100Ti", "BinarySI", 109951162777600000, 109951162777600),
    ("5n", "5n", "DecimalSI", 1, 1),
    ("4u", "4u", "DecimalSI", 1, 1),
    ("3m", "3m", "DecimalSI", 3, 1),
    ("9", "9", "DecimalSI", 9000, 9),
    ("8k", "8k", "DecimalSI", 8000000, 8000),
    ("50k", "50k", "DecimalSI", 50000000, 50000),
    ("7M", "7M", "DecimalSI", 7000000000, 7000000),
    ("6G", "6G", "DecimalSI", 6000000000000, 6000000000),
    ("5T", "5T", "DecimalSI", 5000000000000000, 5000000000000),
    ("40T", "40T", "DecimalSI", 40000000000000000, 40000000000000),
    ("300T", "300T", "DecimalSI", 300000000000000000, 300000000000000),
    ("2P", "2P", "DecimalSI", 2000000000000000000, 2000000000000000),
    ("1E", "1E", "DecimalSI", 1000000000000000000000, 1000000000000000000),
    ("1E-3", "1E-3", "DecimalExponent", 1, 1),
    ("1e3", "1e3", "DecimalExponent", 1000000, 1000),
    ("1E6", "1E6", "DecimalExponent", 1000000000, 1000000),
    ("1e9", "1e9", "DecimalExponent", 1000000000000, 1000000000),
    ("1E12", "1E12", "DecimalExponent", 1000000000000000, 1000000000000),
    ("1e15", "1e15", "DecimalExponent", 1000000000000000000, 1000000000000000),
    ("1E18", "1E18", "DecimalExponent", 1000000000000000000000, 1000000000000000000),
    ("1e14", "100e12", "DecimalExponent", 100000000000000000, 100000000000000),
    ("1e13", "10e12", "DecimalExponent", 10000000000000000, 10000000000000),
    ("100.035k", "100.035k", "DecimalSI", 100035000, 100035),
    ("0.001", "1m", "DecimalSI", 1, 1),
    ("0.0005k", "500m", "DecimalSI", 500, 1),
    ("0.005", "5m", "DecimalSI", 5, 1),
    ("0.05", "50m", "DecimalSI", 50, 1),
    ("0.5", "500m", "DecimalSI", 500, 1),
    ("0.00050k", "500m", "DecimalSI", 500, 1),
    ("0.00500", "5m", "DecimalSI", 5, 1),
    ("0.05000", "50m", "DecimalSI", 50, 1),
    ("0.50000", "500m", "DecimalSI", 500, 1),
    ("0.5e0", "500e-3", "DecimalExponent", 500, 1),
    ("0.5e-1", "50e-3", "DecimalExponent", 50, 1),
    ("0.5e-2", "5e-3", "DecimalExponent", 5, 1),
    ("10.035M", "10.035M", "DecimalSI", 10035000000, 10035000),
    ("1.2e3", "1200", "DecimalExponent", 1200000, 1200),
    ("1.3E+6", "1300e3", "DecimalExponent", 1300000000, 1300000),
    ("1.40e9", "1400e6", "DecimalExponent", 1400000000000, 1400000000),
    ("1.53E12", "1530e9", "DecimalExponent", 1530000000000000, 1530000000000),
    ("1.6e15", "1600e12", "DecimalExponent", 1600000000000000000, 1600000000000000),
    ("1.7E18", "1700e15", "DecimalExponent", 1700000000000000000000, 1700000000000000000),
    ("9.01", "9010m", "DecimalSI", 9010, 10),
    ("8.1k", "8100", "DecimalSI", 8100000, 8100),
    ("7.123456M", "7.123456M", "DecimalSI", 7123456000, 7123456),
    ("6.987654321G", "6.987654321G", "DecimalSI", 6987654321000, 6987654321),
    ("5.444T", "5.444T", "DecimalSI", 5444000000000000, 5444000000000),
    ("40.1T", "40100G", "DecimalSI", 40100000000000000, 40100000000000),
    ("300.2T", "300200G", "DecimalSI", 300200000000000000, 300200000000000),
    ("2.5P", "2500T", "DecimalSI", 2500000000000000000, 2500000000000000),
    ("1.01E", "1010P", "DecimalSI", 1010000000000000000000, 1010000000000000000),
    ("3.001n", "4n", "DecimalSI", 1, 1),
    ("1.1E-9", "2e-9", "DecimalExponent", 1, 1),
    ("0.0000000001", "1n", "DecimalSI", 1, 1),
    ("0.0000000005", "1n", "DecimalSI", 1, 1),
    ("0.00000000050", "1n", "DecimalSI", 1, 1),
    ("0.5e-9", "1e-9", "DecimalExponent", 1, 1),
    ("0.9n", "1n", "DecimalSI", 1, 1),
    ("0.00000012345", "124n", "DecimalSI", 1, 1),
    ("0.00000012354", "124n", "DecimalSI", 1, 1),
    ("9Ei", "9223372036854775807", "BinarySI", 9223372036854775807000, 9223372036854775807),
    (
        "9223372036854775807Ki",
        "9223372036854775807",
        "BinarySI",
        9223372036854775807000,
        9223372036854775807,
    ),
    ("12E", "12E", "DecimalSI", 12000000000000000000000, 12000000000000000000),
    ("100.035Ki", "102435840m", "BinarySI", 102435840, 102436),
    ("0.5Mi", "512Ki", "BinarySI", 524288000, 524288),
    ("0.05Gi", "53687091200m", "BinarySI", 53687091200, 53687092),
    ("0.025Ti", "27487790694400m", "BinarySI", 27487790694400, 27487790695),
    ("0.000000000001Ki", "2n", "DecimalSI", 1, 1),
    (".001", "1m", "DecimalSI", 1, 1),
    (".0001k", "100m", "DecimalSI", 100, 1),
    ("1.", "1.", "DecimalSI", 1000, 1),
    ("1.G", "1.G", "DecimalSI", 1000000000000, 1000000000),
    ("1Gi", "1Gi", "BinarySI", 1073741824000, 1073741824),
    ("1024Mi", "1Gi", "BinarySI", 1073741824000, 1073741824),
    ("300Mi", "300Mi", "BinarySI", 314572800000, 314572800),
    ("307200Ki", "300Mi", "BinarySI", 314572800000, 314572800),
    ("6Ki", "6Ki", "BinarySI", 6144000, 6144),
    ("1001Gi", "1001Gi", "BinarySI", 1074815565824000, 1074815565824),
    ("1025024Mi", "1001Gi", "BinarySI", 1074815565824000, 1074815565824),
    ("1Ti", "1Ti", "BinarySI", 1099511627776000, 1099511627776),
    ("1024Gi", "1Ti", "BinarySI", 1099511627776000, 1099511627776),
    ("5", "5", "DecimalSI", 5000, 5),
    ("5000m", "5", "DecimalSI", 5000, 5),
    ("500m", "500m", "DecimalSI", 500, 1),
    ("1G", "1G", "DecimalSI", 1000000000000, 1000000000),
    ("1000M", "1G", "DecimalSI", 1000000000000, 1000000000),
    ("0.001T", "1G", "DecimalSI", 1000000000000, 1000000000),
    ("1m", "1m", "DecimalSI", 1, 1),
    ("1000u", "1m", "DecimalSI", 1, 1),
    ("80m", "80m", "DecimalSI", 80, 1),
    ("1080m", "1080m", "DecimalSI", 1080, 2),
    ("1.08", "1080m", "DecimalSI", 1080, 2),
    ("1080000000n", "1080m", "DecimalSI", 1080, 2),
    ("300M", "300M", "DecimalSI", 300000000000, 300000000),
    ("1T", "1T", "DecimalSI", 1000000000000000, 1000000000000),
    ("1234567M", "1234567M", "DecimalSI", 1234567000000000, 1234567000000),
    ("1234567m", "1234567m", "DecimalSI", 1234567, 1235),
    ("3k", "3k", "DecimalSI", 3000000, 3000),
    ("1025", "1025", "DecimalSI", 1025000, 1025),
    (".001e12", "1e9", "DecimalExponent", 1000000000000, 1000000000),
    ("1e-3", "1e-3", "DecimalExponent", 1, 1),
    ("0.001e0", "1e-3", "DecimalExponent", 1, 1),
    ("1e-9", "1e-9", "DecimalExponent", 1, 1),
    ("1000e-12", "1e-9", "DecimalExponent", 1, 1),
    ("80e-3", "80e-3", "DecimalExponent", 80, 1),
    ("300e6", "300e6", "DecimalExponent", 300000000000, 300000000),
    ("1e12", "1e12", "DecimalExponent", 1000000000000000, 1000000000000),
    ("3e3", "3e3", "DecimalExponent", 3000000, 3000),
    ("00", "0", "DecimalSI", 0, 0),
    ("1n", "1n", "DecimalSI", 1, 1),
    ("80n", "80n", "DecimalSI", 1, 1),
    ("1080n", "1080n", "DecimalSI", 1, 1),
    ("1u", "1u", "DecimalSI", 1, 1),
    ("80u", "80u", "DecimalSI", 1, 1),
    ("1080u", "1080u", "DecimalSI", 2, 1),
    ("1Mi", "1Mi", "BinarySI", 1048576000, 1048576),
    (".001Ki", "1024m", "BinarySI", 1024, 2),
    (".000001Ki", "1024u", "DecimalSI", 2, 1),
    (".000000001Ki", "1024n", "DecimalSI", 1, 1),
    (".000000000001Ki", "2n", "DecimalSI", 1, 1),
    (
        "999999999999999999",
        "999999999999999999",
        "DecimalSI",
        999999999999999999000,
        999999999999999999,
    ),
    (
        "999999999999999999.0",
        "999999999999999999",
        "DecimalSI",
        999999999999999999000,
        999999999999999999,
    ),
    (
        "999999999999999999.1",
        "999999999999999999100m",
        "DecimalSI",
        999999999999999999100,
        1000000000000000000,
    ),
    (
        "9999999999999999999",
        "9999999999999999999",
        "DecimalSI",
        9999999999999999999000,
        9999999999999999999,
    ),
    ("1000000000000000000", "1E", "DecimalSI", 1000000000000000000000, 1000000000000000000),
    (
        "9999999999999999999.0",
        "9999999999999999999",
        "DecimalSI",
        9999999999999999999000,
        9999999999999999999,
    ),
    ("1.0E", "1E", "DecimalSI", 1000000000000000000000, 1000000000000000000),
    ("1000000000000000000.0", "1E", "DecimalSI", 1000000000000000000000, 1000000000000000000),
    (
        "9999999999999999999000m",
        "9999999999999999999",
        "DecimalSI",
        9999999999999999999000,
        9999999999999999999,
    ),
    (
        "9999999999999999999.1",
        "9999999999999999999100m",
        "DecimalSI",
        9999999999999999999100,
        10000000000000000000,
    ),
    (
        "1.0000000000000000001E",
        "1000000000000000000100m",
        "DecimalSI",
        1000000000000000000100,
        1000000000000000001,
    ),
    (
        "1000000000000000000.1",
        "1000000000000000000100m",
        "DecimalSI",
        1000000000000000000100,
        1000000000000000001,
    ),
    (
        "1.000000000000000001E",
        "1000000000000000001",
        "DecimalSI",
        1000000000000000001000,
        1000000000000000001,
    ),
    (
        "1000000000000000001",
        "1000000000000000001",
        "DecimalSI",
        1000000000000000001000,
        1000000000000000001,
    ),
    ("10E", "10E", "DecimalSI", 10000000000000000000000, 10000000000000000000),
    ("10000000000000000000", "10E", "DecimalSI", 10000000000000000000000, 10000000000000000000),
    ("10.0E", "10E", "DecimalSI", 10000000000000000000000, 10000000000000000000),
    ("10000000000000000000.0", "10E", "DecimalSI", 10000000000000000000000, 10000000000000000000),
    ("10000000000000000000000m", "10E", "DecimalSI", 10000000000000000000000, 10000000000000000000),
    (
        "10.0000000000000000001E",
        "10000000000000000000100m",
        "DecimalSI",
        10000000000000000000100,
        10000000000000000001,
    ),
    (
        "10000000000000000000.1",
        "10000000000000000000100m",
        "DecimalSI",
        10000000000000000000100,
        10000000000000000001,
    ),
    (
        "10.000000000000000001E",
        "10000000000000000001",
        "DecimalSI",
        10000000000000000001000,
        10000000000000000001,
    ),
    (
        "10000000000000000001",
        "10000000000000000001",
        "DecimalSI",
        10000000000000000001000,
        10000000000000000001,
    ),
    (
        "9223372036854775806",
        "9223372036854775806",
        "DecimalSI",
        9223372036854775806000,
        9223372036854775806,
    ),
    (
        "9223372036854775806.0",
        "9223372036854775806",
        "DecimalSI",
        9223372036854775806000,
        9223372036854775806,
    ),
    (
        "9223372036854775806000m",
        "9223372036854775806",
        "DecimalSI",
        9223372036854775806000,
        9223372036854775806,
    ),
    (
        "9223372036854775806.1",
        "9223372036854775806100m",
        "DecimalSI",
        9223372036854775806100,
        9223372036854775807,
    ),
    (
        "9223372036854775807",
        "9223372036854775807",
        "DecimalSI",
        9223372036854775807000,
        9223372036854775807,
    ),
    (
        "9223372036854775807.0",
        "9223372036854775807",
        "DecimalSI",
        9223372036854775807000,
        9223372036854775807,
    ),
    (
        "9223372036854775807000m",
        "9223372036854775807",
        "DecimalSI",
        9223372036854775807000,
        9223372036854775807,
    ),
    (
        "9223372036854775807.1",
        "9223372036854775807100m",
        "DecimalSI",
        9223372036854775807100,
        9223372036854775808,
    ),
    (
        "9223372036854775808",
        "9223372036854775808",
        "DecimalSI",
        9223372036854775808000,
        9223372036854775808,
    ),
    (
        "9223372036854775808.0",
        "9223372036854775808",
        "DecimalSI",
        9223372036854775808000,
        9223372036854775808,
    ),
    (
        "9223372036854775808000m",
        "9223372036854775808",
        "DecimalSI",
        9223372036854775808000,
        9223372036854775808,
    ),
    (
        "9223372036854775808.1",
        "9223372036854775808100m",
        "DecimalSI",
        9223372036854775808100,
        9223372036854775809,
    ),
    (
        "9223372036854775809",
        "9223372036854775809",
        "DecimalSI",
        9223372036854775809000,
        9223372036854775809,
    ),
    ("1.5Gi", "1536Mi", "BinarySI", 1610612736000, 1610612736),
    ("1000", "1k", "DecimalSI", 1000000, 1000),
    ("129M", "129M", "DecimalSI", 129000000000, 129000000),
    ("100m", "100m", "DecimalSI", 100, 1),
    ("1.1", "1100m", "DecimalSI", 1100, 2),
    ("0.0001", "100u", "DecimalSI", 1, 1),
    ("1024Ki", "1Mi", "BinarySI", 1048576000, 1048576),
    ("12e6", "12e6", "DecimalExponent", 12000000000, 12000000),
    ("1536Mi", "1536Mi", "BinarySI", 1610612736000, 1610612736),
    ("0.5Gi", "512Mi", "BinarySI", 536870912000, 536870912),
    ("1.5Ki", "1536", "BinarySI", 1536000, 1536),
    ("0.1Ki", "102400m", "BinarySI", 102400, 103),
    ("5Gi", "5Gi", "BinarySI", 5368709120000, 5368709120),
    ("5G", "5G", "DecimalSI", 5000000000000, 5000000000),
    ("5300m", "5300m", "DecimalSI", 5300, 6),
    ("5.4", "5400m", "DecimalSI", 5400, 6),
    ("2Ki", "2Ki", "BinarySI", 2048000, 2048),
    ("1.1Ki", "1126400m", "BinarySI", 1126400, 1127),
    ("2Gi", "2Gi", "BinarySI", 2147483648000, 2147483648),
    ("01", "01", "DecimalSI", 1000, 1),
    ("1.k", "1.k", "DecimalSI", 1000000, 1000),
    ("1e0", "1e0", "DecimalExponent", 1000, 1),
    ("10e0", "10e0", "DecimalExponent", 10000, 10),
    ("1e1", "10", "DecimalExponent", 10000, 10),
    ("1e4", "10e3", "DecimalExponent", 10000000, 10000),
    ("1.5e1", "1.5e1", "DecimalExponent", 15000, 15),
    ("1e-0", "1e-0", "DecimalExponent", 1000, 1),
    ("1e+3", "1e+3", "DecimalExponent", 1000000, 1000),
    ("1.0Ki", "1Ki", "BinarySI", 1024000, 1024),
    ("1.001Ki", "1025024m", "BinarySI", 1025024, 1026),
    ("1023.5Ki", "1048064", "BinarySI", 1048064000, 1048064),
    ("0.00001Ki", "10240u", "DecimalSI", 11, 1),
    ("1000m", "1", "DecimalSI", 1000, 1),
    ("250m", "250m", "DecimalSI", 250, 1),
    ("110", "110", "DecimalSI", 110000, 110),
    ("1.5k", "1500", "DecimalSI", 1500000, 1500),
    ("1.5M", "1500k", "DecimalSI", 1500000000, 1500000),
    ("8Ei", "9223372036854775807", "BinarySI", 9223372036854775807000, 9223372036854775807),
    ("1Ei", "1Ei", "BinarySI", 1152921504606846976000, 1152921504606846976),
    ("1Pi", "1Pi", "BinarySI", 1125899906842624000, 1125899906842624),
    ("1.5Ei", "1536Pi", "BinarySI", 1729382256910270464000, 1729382256910270464),
]


@pytest.mark.parametrize(("text", "canonical", "fmt", "milli", "value"), K8S_EXAMPLES)
def test_k8s_examples(text: str, canonical: str, fmt: Format, milli: int, value: int) -> None:
    q = Quantity.parse(text)
    assert str(q) == canonical
    assert repr(q) == f"Quantity({canonical!r})"
    assert q.format == fmt
    assert q.milli_value() == milli
    assert q.value() == value
    # The printed form parses back to the same value.
    assert Quantity.parse(canonical) == q
    assert str(Quantity.parse(canonical)) == canonical


@pytest.mark.parametrize(("text", "canonical", "fmt", "milli", "value"), K8S_EXAMPLES)
def test_k8s_examples_negated(
    text: str, canonical: str, fmt: Format, milli: int, value: int
) -> None:
    q = Quantity.parse("-" + text)
    assert str(q) == ("0" if canonical == "0" else "-" + canonical)  # never "-0"
    assert q.format == fmt
    assert q.milli_value() == -milli
    assert q.value() == -value
    assert q.as_decimal() == -Quantity.parse(text).as_decimal()


@pytest.mark.parametrize(("text", "canonical", "fmt", "milli", "value"), K8S_EXAMPLES)
def test_k8s_examples_explicit_plus(
    text: str, canonical: str, fmt: Format, milli: int, value: int
) -> None:
    q = Quantity.parse("+" + text)
    assert q == Quantity.parse(text)
    assert q.format == fmt
    # Kubernetes echoes the input verbatim when its int64 fast path thinks it is canonical.
    assert str(q) in (canonical, "+" + text)


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        # Kubernetes keeps these inputs as their String() form (a cheap "looks canonical" check
        # on its int64 fast path ignores signs, leading zeros, trailing dots, e0 ...).
        ("+1", "+1"),
        ("01", "01"),
        ("-01", "-01"),
        ("1.", "1."),
        ("1.G", "1.G"),
        ("1e0", "1e0"),
        ("10e0", "10e0"),
        ("1.5e1", "1.5e1"),
        ("1e+3", "1e+3"),
        ("1e03", "1e03"),
        ("+100m", "+100m"),
        ("0100m", "0100m"),
        ("01Ki", "01Ki"),
        ("+1Ki", "+1Ki"),
        ("1025Ki", "1025Ki"),
        ("1.001", "1.001"),  # 3, 6 or 9 fraction digits and no trailing "000"
        ("1.250", "1.250"),
        ("2.000001", "2.000001"),
        ("1.000000001", "1.000000001"),
        # ... and recompute the canonical form for these.
        ("1.0k", "1k"),
        ("+1.0", "1"),
        ("+1000m", "1"),
        ("+8Ki", "8Ki"),
        ("+1.5Gi", "1536Mi"),
        ("1.5", "1500m"),
        ("0.005", "5m"),
        ("1.0000000001", "1000000001n"),
    ],
)
def test_k8s_verbatim_echo(text: str, printed: str) -> None:
    assert str(Quantity.parse(text)) == printed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", FORMAT_ERROR),
        ("1.2.3", FORMAT_ERROR),
        ("1Gb", FORMAT_ERROR),
        ("1 Gi", FORMAT_ERROR),
        ("--1", SUFFIX_ERROR),
        ("++1", SUFFIX_ERROR),
        ("1e", SUFFIX_ERROR),
        ("1e+", SUFFIX_ERROR),
        ("e", SUFFIX_ERROR),
        ("1.5.Gi", FORMAT_ERROR),
        # quantity_test.go's invalid list
        ("1.1.M", FORMAT_ERROR),
        ("1+1.0M", FORMAT_ERROR),
        ("0.1mi", SUFFIX_ERROR),
        ("0.1am", FORMAT_ERROR),
        ("aoeu", FORMAT_ERROR),
        (".5i", SUFFIX_ERROR),
        ("1i", SUFFIX_ERROR),
        ("-3.01i", SUFFIX_ERROR),
        ("-3.01e-", SUFFIX_ERROR),
        (" 1", FORMAT_ERROR),
        ("1 ", FORMAT_ERROR),
        ("1.5Gi\n", FORMAT_ERROR),
        # suffixes are case sensitive and may not repeat
        ("1KI", FORMAT_ERROR),
        ("1ki", SUFFIX_ERROR),
        ("1mi", SUFFIX_ERROR),
        ("1kk", SUFFIX_ERROR),
        ("1ee3", SUFFIX_ERROR),
        ("1e3e3", FORMAT_ERROR),
        ("1Mi3", SUFFIX_ERROR),
        ("1k3", SUFFIX_ERROR),
        ("1Ki+", SUFFIX_ERROR),
        ("1e9223372036854775808", SUFFIX_ERROR),  # exponent wider than int64
        # things Python's own number parsers would accept
        ("nan", FORMAT_ERROR),
        ("inf", FORMAT_ERROR),
        ("1_000", FORMAT_ERROR),
        ("\u0661", FORMAT_ERROR),  # ARABIC-INDIC DIGIT ONE
        ("0x10", FORMAT_ERROR),
        ("1,5", FORMAT_ERROR),
    ],
)
def test_invalid(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as excinfo:
        Quantity.parse(text)
    assert str(excinfo.value) == message
    assert isinstance(excinfo.value, ValueError)


@pytest.mark.parametrize("text", ["Gi", "Ki", ".", "-.", "+", "-", "k", "m", "E", "e3", "+e-9"])
def test_number_without_digits_is_rejected(text: str) -> None:
    # Kubernetes' scanner reads these as 0; the documented grammar needs a digit, so we refuse.
    with pytest.raises(QuantityError, match="must match the regular expression"):
        Quantity.parse(text)


def test_limits() -> None:
    assert Quantity.parse("1e1023") == 10**1023
    assert str(Quantity.parse("1e1022")) == "100e1020"
    assert Quantity.parse("9" * 1000) == int("9" * 1000)
    with pytest.raises(QuantityError, match="smaller than 1e1024"):
        Quantity.parse("1e1024")
    with pytest.raises(QuantityError, match="smaller than 1e1024"):
        Quantity.parse("1e4294967296")  # Kubernetes truncates this exponent to int32 (-> "1")
    with pytest.raises(QuantityError, match="longer than 1024"):
        Quantity.parse("1" * 1025)
    with pytest.raises(QuantityError, match="smaller than 1e1024"):
        Quantity.from_int(10**1024)
    # Tiny values are rounded up to 1n without building huge numbers.
    assert str(Quantity.parse("1e-9223372036854775808")) == "1e-9"
    assert str(Quantity.parse("-0.000000000000000000001")) == "-1n"
    assert str(Quantity.parse("0e-9223372036854775808")) == "0"
    assert str(Quantity.parse("0e9223372036854775807")) == "0"
    assert str(Quantity.parse("-0.000e9223372036854775807")) == "0"


def test_rounds_up_below_nano() -> None:
    assert str(Quantity.parse("0.1n")) == "1n"
    assert str(Quantity.parse("1.0000000001")) == "1000000001n"
    assert str(Quantity.parse("-1.0000000001")) == "-1000000001n"  # away from zero
    assert str(Quantity.parse("1.0000000000")) == "1"


def test_binary_values_are_capped_at_int64() -> None:
    top = 2**63 - 1
    for text in ["8Ei", "9Ei", "9223372036854775807Ki", "100000Ei"]:
        assert Quantity.parse(text).value() == top
        assert Quantity.parse("-" + text).value() == -top
    assert Quantity.parse("7Ei").value() == 7 * 2**60
    # Decimal suffixes are not capped.
    assert Quantity.parse("10E").value() == 10**19


def test_zero() -> None:
    assert str(Quantity.parse("0")) == "0"
    assert str(ZERO) == "0"
    assert ZERO.format == "DecimalSI"
    assert ZERO.is_zero()
    assert not ZERO
    assert Quantity.parse("1m")
    for text in ["0Gi", "-0", "+0", "00", "0.0", "-0.000", "0e9", "0Ei"]:
        q = Quantity.parse(text)
        assert str(q) == "0"
        assert q.is_zero()
        assert q == ZERO
    assert Quantity.parse("0Gi").format == "BinarySI"
    assert Quantity.parse("0e9").format == "DecimalExponent"


@pytest.mark.parametrize(
    ("value", "fmt", "printed"),
    [
        # TestMilliNewSet and ExampleFormat
        (1, "DecimalSI", "1m"),
        (1000, "DecimalSI", "1"),
        (1234000, "DecimalSI", "1234"),
        (1024, "BinarySI", "1024m"),
        (1000000, "DecimalExponent", "1e3"),
        (1024 * 1024, "BinarySI", "1048576m"),
        (5300, "DecimalSI", "5300m"),
        (0, "BinarySI", "0"),
        (-250, "DecimalSI", "-250m"),
        (1024000, "BinarySI", "1Ki"),
    ],
)
def test_from_milli(value: int, fmt: Format, printed: str) -> None:
    q = Quantity.from_milli(value, fmt)
    assert str(q) == printed
    assert q.format == fmt
    assert q.milli_value() == value
    assert Quantity.parse(printed).milli_value() == value


@pytest.mark.parametrize(
    ("value", "fmt", "printed"),
    [
        # TestNewSet and ExampleFormat
        (1, "DecimalSI", "1"),
        (1000, "DecimalSI", "1k"),
        (1234000, "DecimalSI", "1234k"),
        (1024, "BinarySI", "1Ki"),
        (1000000, "DecimalExponent", "1e6"),
        (1024 * 1024, "BinarySI", "1Mi"),
        (5 * 1024**3, "BinarySI", "5Gi"),
        (5 * 1000**3, "DecimalSI", "5G"),
        (1000, "BinarySI", "1k"),  # below 1024 binary values print as decimal
        (1536, "BinarySI", "1536"),
        (-2048, "BinarySI", "-2Ki"),
        (2**70, "BinarySI", "1024Ei"),  # Kubernetes would print "1" (suffix table ends at Ei)
        (10**21, "DecimalSI", "1000E"),  # Kubernetes would print "1"
    ],
)
def test_from_int(value: int, fmt: Format, printed: str) -> None:
    q = Quantity.from_int(value, fmt)
    assert str(q) == printed
    assert q.format == fmt
    assert q.value() == value
    if abs(value) < 2**63:  # parsing caps binary values at int64
        assert Quantity.parse(printed).value() == value


def test_binary_text_without_suffix_reparses_as_decimal() -> None:
    # Kubernetes: NewQuantity(25000, BinarySI).String() == "25000", which parses as DecimalSI.
    q = Quantity.from_int(25000, "BinarySI")
    assert str(q) == "25000"
    again = Quantity.parse(str(q))
    assert again == q
    assert again.format == "DecimalSI"
    assert str(again) == "25k"
    assert str(Quantity.parse("24.4140625Ki")) == "25000"


def test_from_int_and_milli_reject_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown quantity format"):
        Quantity.from_int(1, "Binary")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown quantity format"):
        Quantity.from_milli(1, "decimalSI")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Quantity.from_int(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Quantity.from_milli(True)


@pytest.mark.parametrize(
    ("left", "right", "total", "difference"),
    [
        ("1Gi", "512Mi", "1536Mi", "512Mi"),
        ("1", "500m", "1500m", "500m"),
        ("100m", "1Gi", "1073741824100m", "-1073741823900m"),  # keeps the left (decimal) format
        ("1Gi", "100m", "1073741824100m", "1073741823900m"),  # binary, but not whole: decimal
        ("1Gi", "1.5Gi", "2560Mi", "-512Mi"),
        ("10", "1e1", "20", "0"),  # TestAdd / TestSub
        ("1e3", "1k", "2e3", "0"),
        ("1k", "1e3", "2k", "0"),
        ("1Ki", "1k", "2024", "24"),
        ("2Ki", "2048", "4Ki", "0"),
        ("4Ei", "4Ei", "8Ei", "0"),  # arithmetic is not capped
        ("0", "1Gi", "1Gi", "-1Gi"),  # a zero left side takes the right side's format
        ("0", "100m", "100m", "-100m"),
        ("0Gi", "1e3", "1e3", "-1e3"),
        ("1Gi", "0", "1Gi", "1Gi"),
        ("100m", "0", "100m", "100m"),
        ("-1n", "1n", "0", "-2n"),
    ],
)
def test_add_sub(left: str, right: str, total: str, difference: str) -> None:
    a, b = Quantity.parse(left), Quantity.parse(right)
    assert str(a + b) == total
    assert str(a - b) == difference
    assert (a + b).as_decimal() == a.as_decimal() + b.as_decimal()
    assert (a - b).as_decimal() == a.as_decimal() - b.as_decimal()


def test_arithmetic_formats() -> None:
    # TestAdd/TestSub: the result keeps the left operand's format.
    ten_binary = Quantity.from_int(10, "BinarySI")
    one_decimal = Quantity.from_int(1, "DecimalSI")
    assert (ten_binary + one_decimal).format == "BinarySI"
    assert (one_decimal + ten_binary).format == "DecimalSI"
    assert (ten_binary - one_decimal).format == "BinarySI"
    assert (ZERO + ten_binary).format == "BinarySI"
    assert (ZERO - ten_binary).format == "BinarySI"
    assert (-ten_binary).format == "BinarySI"


def test_arithmetic_with_strings_numbers_and_sum() -> None:
    assert str(Quantity.parse("1Gi") + "512Mi") == "1536Mi"
    assert str("512Mi" + Quantity.parse("1Gi")) == "1536Mi"
    assert str(Quantity.parse("1") + 1) == "2"
    assert str(2 - Quantity.parse("500m")) == "1500m"
    assert str(Quantity.parse("1") - 0.25) == "750m"
    total = sum([Quantity.parse("1Gi"), Quantity.parse("512Mi"), Quantity.parse("512Mi")])
    assert str(total) == "2Gi"
    assert isinstance(total, Quantity)
    assert sum([Quantity.parse("100m")] * 10, ZERO) == 1
    with pytest.raises(TypeError):
        Quantity.parse("1") + None  # type: ignore[operator]
    with pytest.raises(QuantityError):
        Quantity.parse("1") + "one"


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("9.01", "-9010m"),
        ("1Gi", "-1Gi"),
        ("-1Gi", "1Gi"),
        ("0", "0"),
        ("+1", "-1"),
        ("1e3", "-1e3"),
    ],
)
def test_neg(text: str, negated: str) -> None:
    q = Quantity.parse(text)
    negative = -q
    assert str(negative) == negated
    assert -negative == q


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        # TestQuantityCmp
        ("0", "0", 0),
        ("100m", "50m", 1),
        ("50m", "100m", -1),
        ("10000T", "100Gi", 1),
        # across formats
        ("1Gi", "1073741824", 0),
        ("1Gi", "1024Mi", 0),
        ("1Gi", "1G", 1),
        ("1e3", "1k", 0),
        ("999m", "1", -1),
        ("-1", "1n", -1),
        ("1n", "0", 1),
        ("9Ei", "9223372036854775807", 0),
        ("10E", "9Ei", 1),
    ],
)
def test_compare(left: str, right: str, expected: int) -> None:
    a, b = Quantity.parse(left), Quantity.parse(right)
    assert (a > b) - (a < b) == expected
    assert (a == b) == (expected == 0)
    assert (a != b) == (expected != 0)
    assert (a <= b) == (expected <= 0)
    assert (a >= b) == (expected >= 0)
    if expected == 0:
        assert hash(a) == hash(b)


def test_equality_with_other_types() -> None:
    q = Quantity.parse("1Gi")
    assert q == "1Gi"
    assert q == "1073741824"
    assert q == 1073741824
    assert q != "1G"
    assert q != "not a quantity"  # unparsable strings are simply unequal
    assert q != None  # noqa: E711
    assert q != [1]
    assert Quantity.parse("500m") == 0.5
    assert Quantity.parse("500m") < 1
    assert Quantity.parse("2") > "1500m"
    # hashes agree with the numbers they equal, so dict/set lookups work
    assert hash(Quantity.parse("1k")) == hash(1000)
    assert hash(Quantity.parse("500m")) == hash(Decimal("0.5")) == hash(Fraction(1, 2))
    assert len({Quantity.parse("1Gi"), Quantity.parse("1024Mi"), Quantity.parse("1073741824")}) == 1
    with pytest.raises(QuantityError):
        _ = q < "lots"
    with pytest.raises(TypeError):
        _ = q < None  # type: ignore[operator]


def test_sorting() -> None:
    texts = ["1Gi", "1G", "100m", "-1", "0", "1e3", "1Ki", "1n", "1.5Gi"]
    ordered = sorted(Quantity.parse(t) for t in texts)
    assert [str(q) for q in ordered] == [
        "-1",
        "0",
        "1n",
        "100m",
        "1e3",
        "1Ki",
        "1G",
        "1Gi",
        "1536Mi",
    ]


@pytest.mark.parametrize(
    ("text", "milli", "value"),
    [
        ("1.1", 1100, 2),
        ("-1.1", -1100, -2),
        ("0.0001", 1, 1),  # ceil to 1m
        ("-0.0001", -1, -1),  # away from zero, like Kubernetes' int64 path
        ("1n", 1, 1),
        ("-1n", -1, -1),  # Kubernetes' inf.Dec path would give +1 here
        ("-0.1Ki", -102400, -103),  # ... and -101 here
        ("5.4", 5400, 6),
        ("5Gi", 5368709120000, 5368709120),
    ],
)
def test_value_rounding(text: str, milli: int, value: int) -> None:
    q = Quantity.parse(text)
    assert q.milli_value() == milli
    assert q.value() == value


def test_as_decimal_is_exact() -> None:
    assert Quantity.parse("0.1Ki").as_decimal() == Decimal("102.4")
    assert Quantity.parse("-1n").as_decimal() == Decimal("-0.000000001")
    assert Quantity.parse("1e21").as_decimal() == Decimal(10**21)
    assert str(Quantity.parse("1.5").as_decimal()) == "1.5"
    assert str(Quantity.parse("1Gi").as_decimal()) == "1073741824"
    assert str(Quantity.parse("123456789012345678901234567890.123456789").as_decimal()) == (
        "123456789012345678901234567890.123456789"
    )


@pytest.mark.parametrize(
    ("value", "printed", "fmt"),
    [
        (0, "0", "DecimalSI"),
        (110, "110", "DecimalSI"),
        (-3, "-3", "DecimalSI"),
        (2**70, "1180591620717411303424", "DecimalSI"),
        (0.5, "500m", "DecimalSI"),
        (1.0, "1", "DecimalSI"),
        (0.1, "100m", "DecimalSI"),
        (1e-07, "100e-9", "DecimalExponent"),  # a float's text is what JSON would carry
        (1e16, "10e15", "DecimalExponent"),
    ],
)
def test_parse_numbers(value: int | float, printed: str, fmt: Format) -> None:
    q = Quantity.parse(value)
    assert str(q) == printed
    assert q.format == fmt
    assert parse_quantity(value) == q
    assert Quantity(value) == q


def test_parse_rejects_other_types() -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(float("nan"))
    with pytest.raises(QuantityError):
        Quantity.parse(float("inf"))
    with pytest.raises(TypeError):
        Quantity.parse(True)
    with pytest.raises(TypeError):
        Quantity.parse(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Quantity.parse(b"1Gi")  # type: ignore[arg-type]


def test_immutable_and_copyable() -> None:
    q = Quantity.parse("1.5Gi")
    assert Quantity.parse(q) is q
    assert Quantity(q) == q and str(Quantity(q)) == "1536Mi"
    with pytest.raises(AttributeError):
        q._nanos = 0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        q.format = "DecimalSI"  # type: ignore[misc]
    assert copy.copy(q) is q
    assert copy.deepcopy(q) is q
    # pickling keeps the format even where re-parsing the text would not
    small_binary = Quantity.from_milli(500, "BinarySI")
    restored = pickle.loads(pickle.dumps(small_binary))
    assert restored == small_binary
    assert restored.format == "BinarySI"
    assert str(restored) == "500m"
    assert str(pickle.loads(pickle.dumps(Quantity.parse("+1")))) == "+1"


# -- pydantic ------------------------------------------------------------------------------


class Resources(BaseModel):
    requests: dict[str, Quantity]
    limit: Quantity | None = None


def test_pydantic_round_trip() -> None:
    model = Resources(
        requests={"cpu": "1.5", "memory": "1.5Gi", "pods": 110, "gpu": 0.5, "disk": "1e3"},
        limit=Quantity.parse("2"),
    )
    assert model.requests["memory"] == Quantity.parse("1536Mi")
    assert isinstance(model.requests["pods"], Quantity)
    expected = {
        "requests": {
            "cpu": "1500m",
            "memory": "1536Mi",
            "pods": "110",
            "gpu": "500m",
            "disk": "1e3",
        },
        "limit": "2",
    }
    assert model.model_dump(mode="json") == expected
    assert model.model_dump() == expected
    dumped = model.model_dump_json()
    assert '"memory":"1536Mi"' in dumped
    again = Resources.model_validate_json(dumped)
    assert again == model
    assert again.model_dump(mode="json") == expected
    # JSON numbers are accepted too, as in Kubernetes' int-or-string
    from_numbers = Resources.model_validate_json('{"requests": {"cpu": 2, "mem": 0.25}}')
    assert from_numbers.model_dump(mode="json")["requests"] == {"cpu": "2", "mem": "250m"}
    assert model.model_copy(deep=True) == model


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("1Gb", FORMAT_ERROR),
        ("1 Gi", FORMAT_ERROR),
        ("1e", SUFFIX_ERROR),
        ("", FORMAT_ERROR),
        ("Gi", FORMAT_ERROR),
    ],
)
def test_pydantic_rejects_invalid_quantities(bad: str, message: str) -> None:
    with pytest.raises(ValidationError) as excinfo:
        Resources(requests={"memory": bad})
    (error,) = excinfo.value.errors()
    assert error["loc"] == ("requests", "memory")
    assert error["type"] == "value_error"
    assert message in error["msg"]


@pytest.mark.parametrize("bad", [None, True, [1], {"a": 1}, b"1"])
def test_pydantic_rejects_other_types(bad: object) -> None:
    with pytest.raises(ValidationError) as excinfo:
        Resources(requests={"memory": bad})  # type: ignore[dict-item]
    (error,) = excinfo.value.errors()
    assert error["type"] == "quantity_type"


def test_pydantic_json_schema() -> None:
    expected = {
        "anyOf": [{"type": "string", "pattern": QUANTITY_PATTERN}, {"type": "number"}],
        "x-kubernetes-int-or-string": True,
    }
    schema = Resources.model_json_schema()
    assert schema["properties"]["requests"]["additionalProperties"] == expected
    assert QUANTITY_PATTERN == r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


# -- properties ----------------------------------------------------------------------------

SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E"]
SUFFIXES += ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e0", "e3", "E6", "e-3", "e-9", "e21", "e+2"]


@st.composite
def quantity_texts(draw: st.DrawFn) -> str:
    number = str(draw(st.integers(min_value=-(10**22), max_value=10**22)))
    if draw(st.booleans()):
        number += "." + draw(st.text(alphabet="0123456789", max_size=12))
    return number + draw(st.sampled_from(SUFFIXES))


quantities = quantity_texts().map(Quantity.parse)


@given(quantity_texts())
def test_round_trip(text: str) -> None:
    q = Quantity.parse(text)
    printed = str(q)
    again = Quantity.parse(printed)
    assert again == q
    assert again.as_decimal() == q.as_decimal()
    if q.format != "BinarySI":
        assert str(again) == printed
    # A binary value printed without suffix re-parses as DecimalSI ("25000" -> "25k"), so the
    # text is only guaranteed to be stable from the second round on, as in Kubernetes.
    assert str(Quantity.parse(str(again))) == str(again)


@given(st.integers(min_value=-(10**24), max_value=10**24), st.sampled_from(SUFFIXES))
def test_round_trip_of_whole_numbers(number: int, suffix: str) -> None:
    q = Quantity.parse(f"{number}{suffix}")
    assert Quantity.parse(str(q)) == q
    assert str(Quantity.parse(str(q))) == str(q)


@given(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.sampled_from(["DecimalSI", "BinarySI", "DecimalExponent"]),
)
def test_computed_forms_are_canonical(milli: int, fmt: Format) -> None:
    q = Quantity.from_milli(milli, fmt)
    printed = str(q)
    assert "." not in printed
    assert not printed.startswith(("+", "0")) or printed == "0"
    assert Quantity.parse(printed).milli_value() == milli
    if fmt != "BinarySI":
        assert str(Quantity.parse(printed)) == printed


@given(quantities, quantities)
def test_ordering_matches_decimal(a: Quantity, b: Quantity) -> None:
    x, y = a.as_decimal(), b.as_decimal()
    assert (a < b) == (x < y)
    assert (a <= b) == (x <= y)
    assert (a == b) == (x == y)
    assert (a > b) == (x > y)
    if a == b:
        assert hash(a) == hash(b)


@given(quantities, quantities)
def test_arithmetic_is_exact(a: Quantity, b: Quantity) -> None:
    assert Fraction(a.as_decimal()) + Fraction(b.as_decimal()) == Fraction((a + b).as_decimal())
    assert (a + b) - b == a
    assert a - b == -(b - a)
    assert (a + b).format == (b.format if a.is_zero() else a.format)


@given(quantities)
def test_rounded_up_to_milli_is_the_milli_value_in_the_same_format(q: Quantity) -> None:
    try:
        expected = Quantity.from_milli(q.milli_value(), q.format)
    except QuantityError:  # the milli value is beyond what a Quantity holds
        return
    rounded = q.rounded_up_to_milli()
    assert rounded == expected and rounded.format == q.format
    assert abs(rounded.as_decimal()) >= abs(q.as_decimal())
    if rounded == q:
        assert rounded is q  # nothing finer than a thousandth: the same object, text kept
