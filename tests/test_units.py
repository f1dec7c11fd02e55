"""Tests for hwspec.spec.units: every unit, every error message, pydantic integration, exact round-trips."""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from hwspec.spec.unit_types import ByteRate, Bytes, Duration, FlopRate, TransferRate
from hwspec.spec.units import (
    BYTE_RATE_UNITS,
    BYTES_UNITS,
    DURATION_UNITS,
    FLOP_RATE_UNITS,
    TRANSFER_RATE_UNITS,
    UnitError,
    format_byte_rate,
    format_bytes,
    format_duration,
    format_flop_rate,
    format_transfer_rate,
    parse_byte_rate,
    parse_bytes,
    parse_duration,
    parse_flop_rate,
    parse_transfer_rate,
)
from tests.examples import pinned

PROPERTY = settings(derandomize=True, database=None, max_examples=pinned(200))

SIZE_LIST = "B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB"
RATE_LIST = ("b/s, kb/s, Mb/s, Gb/s, Tb/s, bit/s, kbit/s, Mbit/s, Gbit/s, Tbit/s, bps, kbps, Mbps, Gbps, Tbps, "
             "B/s, kB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, Bps, kBps, MBps, GBps, TBps; "
             "optionally followed by 'per direction' or 'bidirectional'")
FLOP_LIST = "FLOPS, FLOP/s, OPS, OP/s, each with an optional prefix k, M, G, T, P or E (e.g. TFLOPS, TOP/s)"
TRANSFER_LIST = "GT/s, MT/s"
DURATION_LIST = "s, ms, us, µs, ns"

SI = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}

SIZES = {**{p + "B": SI[p] for p in ["", "k", "M", "G", "T", "P"]}, **{p + "B": BINARY[p] for p in BINARY}}
BIT_RATES = {p + base: SI[p] / 8 for base in ["b/s", "bit/s", "bps"] for p in ["", "k", "M", "G", "T"]}
BYTE_RATES = {**{p + "B/s": float(SI[p]) for p in ["", "k", "M", "G", "T"]},
              **{p + "B/s": float(BINARY[p]) for p in ["Ki", "Mi", "Gi", "Ti"]},
              **{p + "Bps": float(SI[p]) for p in ["", "k", "M", "G", "T"]}}
FLOP_RATES = {p + word: float(SI[p]) for word in ["FLOPS", "FLOP/s", "OPS", "OP/s"] for p in SI}
TRANSFER_RATES = {"GT/s": 1e9, "MT/s": 1e6}
DURATIONS = {"s": Fraction(1), "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6),
             "ns": Fraction(1, 10**9)}

PARSERS = {
    "size": (parse_bytes, format_bytes, SIZES, BYTES_UNITS),
    "bandwidth": (parse_byte_rate, format_byte_rate, {**BIT_RATES, **BYTE_RATES}, BYTE_RATE_UNITS),
    "compute rate": (parse_flop_rate, format_flop_rate, FLOP_RATES, FLOP_RATE_UNITS),
    "transfer rate": (parse_transfer_rate, format_transfer_rate, TRANSFER_RATES, TRANSFER_RATE_UNITS),
    "duration": (parse_duration, format_duration, DURATIONS, DURATION_UNITS),
}


def message(parse, value) -> str:
    with pytest.raises(UnitError) as error:
        parse(value)
    return str(error.value)


# --- every unit in every table ---------------------------------------------------------------


@pytest.mark.parametrize("kind", PARSERS)
def test_tables_cover_exactly_the_documented_units(kind):
    _, _, expected, table = PARSERS[kind]
    assert list(table) == list(expected)  # the order is the order of the "accepted units" lists
    assert all(table[unit] == expected[unit] for unit in expected)


@pytest.mark.parametrize("unit,factor", SIZES.items())
def test_every_size_unit(unit, factor):
    assert parse_bytes(f"3 {unit}") == 3 * factor
    assert type(parse_bytes(f"3 {unit}")) is int


@pytest.mark.parametrize("unit,factor", {**BIT_RATES, **BYTE_RATES}.items())
def test_every_bandwidth_unit(unit, factor):
    assert parse_byte_rate(f"3 {unit}") == 3 * factor


@pytest.mark.parametrize("unit,factor", FLOP_RATES.items())
def test_every_compute_rate_unit(unit, factor):
    assert parse_flop_rate(f"3 {unit}") == 3 * factor
    assert parse_flop_rate(f"3 {unit[:1]}{unit[1:].lower()}") == 3 * factor
    prefix = unit[:1] if unit[:1] in SI else ""
    assert parse_flop_rate(f"3 {prefix}{unit[len(prefix):].swapcase()}") == 3 * factor


@pytest.mark.parametrize("unit,factor", TRANSFER_RATES.items())
def test_every_transfer_rate_unit(unit, factor):
    assert parse_transfer_rate(f"3 {unit}") == 3 * factor


@pytest.mark.parametrize("unit,factor", DURATIONS.items())
def test_every_duration_unit(unit, factor):
    assert parse_duration(f"3 {unit}") == float(3 * factor)  # exact, then rounded once


@pytest.mark.parametrize("parse,text,expected", [
    (parse_bytes, "40 GiB", 40 * 2**30),
    (parse_bytes, "1.5 TB", 1_500_000_000_000),
    (parse_bytes, "1.5 KiB", 1536),
    (parse_byte_rate, "200 Gb/s", 25e9),
    (parse_byte_rate, "400 Gbps", 50e9),
    (parse_byte_rate, "25 GBps", 25e9),
    (parse_byte_rate, "900 GB/s", 900e9),
    (parse_flop_rate, "312 TFLOPS", 312e12),
    (parse_flop_rate, "19.5 TFLOP/s", 19.5e12),
    (parse_flop_rate, "19.5 TFlop/s", 19.5e12),
    (parse_flop_rate, "312 Tflops", 312e12),
    (parse_flop_rate, "624 TOPS", 624e12),
    (parse_flop_rate, "1.979 PFLOPS", 1.979e15),
    (parse_transfer_rate, "16.0 GT/s", 16e9),
    (parse_transfer_rate, "2500 MT/s", 2.5e9),
    (parse_duration, "2 us", 2e-6),
    (parse_duration, "2 µs", 2e-6),
    (parse_duration, "2 μs", 2e-6),  # Greek small mu, U+03BC
    (parse_duration, "1.5 ms", 1.5e-3),
])
def test_common_spellings(parse, text, expected):
    assert parse(text) == expected


# --- number forms, whitespace, qualifiers ------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("40GiB", 40 * 2**30),
    ("  40 GiB  ", 40 * 2**30),
    ("40\tGiB\n", 40 * 2**30),
    ("40\u00a0GiB", 40 * 2**30),
    ("40\u202fGiB", 40 * 2**30),
    ("1_000 B", 1000),
    ("1_000.000_5 kB", 1_000_000.5),
    ("1e3 B", 1000),
    ("1E3 B", 1000),
    ("1.5e+3 KiB", 1536000),
    ("2048e-1 KiB", 209715.2),
    ("0 B", 0),
    ("007 B", 7),
])
def test_number_forms(text, expected):
    if expected != int(expected):
        assert message(parse_bytes, text) == f"a size must be a whole number of bytes, got '{text.strip()}'"
    else:
        assert parse_bytes(text) == expected


def test_exact_arithmetic():
    assert parse_bytes("1_000.001 kB") == 1_000_001
    assert parse_bytes("204.8e1 KiB") == 2048 * 1024
    assert parse_byte_rate("0.1 GB/s") == 1e8
    assert parse_duration("0.3 s") == 0.3
    assert parse_duration("300 ms") == 0.3
    assert parse_byte_rate("1 b/s") == 0.125
    assert parse_byte_rate("1e-400 GB/s") == 0.0  # correctly rounded, like any tiny float
    assert parse_byte_rate("1.7976931348623157e308 B/s") == 1.7976931348623157e308


@pytest.mark.parametrize("text,expected", [
    ("25 GB/s per direction", 25e9),
    ("25 GB/s  per  direction", 25e9),
    ("50 GB/s bidirectional", 25e9),
    ("400 Gb/s bidirectional", 25e9),
    ("1 B/s bidirectional", 0.5),
    (" 50 GB/s bidirectional ", 25e9),
])
def test_bandwidth_qualifiers(text, expected):
    assert parse_byte_rate(text) == expected


@pytest.mark.parametrize("parse,text", [
    (parse_bytes, "40 GiB bidirectional"),
    (parse_byte_rate, "25 GB/s Bidirectional"),
    (parse_byte_rate, "25 GB/s both ways"),
    (parse_transfer_rate, "16 GT/s bidirectional"),
])
def test_qualifiers_only_where_they_belong(parse, text):
    assert message(parse, text).startswith("unknown ")


# --- error messages ----------------------------------------------------------------------------


@pytest.mark.parametrize("parse,value,expected", [
    (parse_bytes, 40, "expected a size with a unit, e.g. '40 GiB' or '1.5 TB', got the bare number 40; "
                      f"accepted units: {SIZE_LIST}"),
    (parse_bytes, "40", "expected a size with a unit, e.g. '40 GiB' or '1.5 TB', got the bare number 40; "
                        f"accepted units: {SIZE_LIST}"),
    (parse_bytes, " 1_000 ", "expected a size with a unit, e.g. '40 GiB' or '1.5 TB', got the bare number 1_000; "
                             f"accepted units: {SIZE_LIST}"),
    (parse_byte_rate, 25.5, "expected a bandwidth with a unit, e.g. '200 Gb/s' or '25 GB/s', "
                            f"got the bare number 25.5; accepted units: {RATE_LIST}"),
    (parse_flop_rate, 312, "expected a compute rate with a unit, e.g. '312 TFLOPS' or '624 TOPS', "
                           f"got the bare number 312; accepted units: {FLOP_LIST}"),
    (parse_transfer_rate, "16.0", "expected a transfer rate with a unit, e.g. '16 GT/s' or '8 GT/s', "
                                  f"got the bare number 16.0; accepted units: {TRANSFER_LIST}"),
    (parse_duration, 2, "expected a duration with a unit, e.g. '2 us' or '1.5 ms', "
                        f"got the bare number 2; accepted units: {DURATION_LIST}"),
    (parse_duration, -2, "expected a duration with a unit, e.g. '2 us' or '1.5 ms', "
                         f"got the bare number -2; accepted units: {DURATION_LIST}"),
])
def test_bare_numbers(parse, value, expected):
    assert message(parse, value) == expected


@pytest.mark.parametrize("parse,value,expected", [
    (parse_byte_rate, [200], "expected a bandwidth as a string such as '200 Gb/s', got a list"),
    (parse_byte_rate, True, "expected a bandwidth as a string such as '200 Gb/s', got a boolean"),
    (parse_bytes, None, "expected a size as a string such as '40 GiB', got null"),
    (parse_bytes, {"GiB": 40}, "expected a size as a string such as '40 GiB', got a mapping"),
    (parse_flop_rate, False, "expected a compute rate as a string such as '312 TFLOPS', got a boolean"),
    (parse_transfer_rate, (16,), "expected a transfer rate as a string such as '16 GT/s', got a list"),
    (parse_duration, b"2 us", "expected a duration as a string such as '2 us', got a value of type bytes"),
])
def test_wrong_types(parse, value, expected):
    assert message(parse, value) == expected


@pytest.mark.parametrize("parse,text,expected", [
    (parse_byte_rate, "25 Gbit", f"unknown bandwidth unit 'Gbit'; accepted units: {RATE_LIST}"),
    (parse_byte_rate, "25 GB/s both ways", f"unknown bandwidth unit 'GB/s both ways'; accepted units: {RATE_LIST}"),
    (parse_bytes, "40 GiBytes", f"unknown size unit 'GiBytes'; accepted units: {SIZE_LIST}"),
    (parse_bytes, "40 GB/s", f"unknown size unit 'GB/s'; accepted units: {SIZE_LIST}"),
    (parse_flop_rate, "312 TF", f"unknown compute rate unit 'TF'; accepted units: {FLOP_LIST}"),
    (parse_transfer_rate, "16.0 GT/s PCIe", f"unknown transfer rate unit 'GT/s PCIe'; accepted units: {TRANSFER_LIST}"),
    (parse_transfer_rate, "16 GHz", f"unknown transfer rate unit 'GHz'; accepted units: {TRANSFER_LIST}"),
    (parse_duration, "2 sec", f"unknown duration unit 'sec'; accepted units: {DURATION_LIST}"),
])
def test_unknown_units(parse, text, expected):
    assert message(parse, text) == expected


@pytest.mark.parametrize("parse,text,expected", [
    (parse_byte_rate, "25 gb/s", "'gb/s' is ambiguous: write 'Gb/s' (gigabits per second) or 'GB/s' (gigabytes per second)"),
    (parse_byte_rate, "25 gbps", "'gbps' is ambiguous: write 'Gbps' (gigabits per second) or 'GBps' (gigabytes per second)"),
    (parse_byte_rate, "1 Kbps", "'Kbps' is ambiguous: write 'kbps' (kilobits per second) or 'kBps' (kilobytes per second)"),
    (parse_byte_rate, "1 Kb/s", "'Kb/s' is ambiguous: write 'kb/s' (kilobits per second) or 'kB/s' (kilobytes per second)"),
    (parse_bytes, "3 KB", "'KB' is ambiguous: write 'kB' (1000 bytes) or 'KiB' (1024 bytes)"),
    (parse_byte_rate, "3 KB/s", "'KB/s' is ambiguous: write 'kB/s' (1000 bytes per second) or 'KiB/s' (1024 bytes per second)"),
    (parse_bytes, "40 gib", "'gib' is not an accepted unit (units are case-sensitive); did you mean 'GiB' (gibibytes)?"),
    (parse_bytes, "40 GIB", "'GIB' is not an accepted unit (units are case-sensitive); did you mean 'GiB' (gibibytes)?"),
    (parse_bytes, "40 gb", "'gb' is not an accepted unit (units are case-sensitive); did you mean 'GB' (gigabytes)?"),
    (parse_byte_rate, "25 Gib/s", "'Gib/s' is not an accepted unit (units are case-sensitive); did you mean 'GiB/s' (gibibytes per second)?"),
    (parse_flop_rate, "312 tflops", "'tflops' is not an accepted unit (units are case-sensitive); did you mean 'TFLOPS' (teraflops)?"),
    (parse_flop_rate, "1 mflop/s", "'mflop/s' is not an accepted unit (units are case-sensitive); did you mean 'MFLOP/s' (megaflops)?"),
    (parse_flop_rate, "1 KOPS", "'KOPS' is not an accepted unit (units are case-sensitive); did you mean 'kOPS' (kiloops)?"),
    (parse_transfer_rate, "16 gt/s", "'gt/s' is not an accepted unit (units are case-sensitive); did you mean 'GT/s' (gigatransfers per second)?"),
    (parse_duration, "2 MS", "'MS' is not an accepted unit (units are case-sensitive); did you mean 'ms' (milliseconds)?"),
    (parse_duration, "2 Us", "'Us' is not an accepted unit (units are case-sensitive); did you mean 'us' (microseconds)?"),
])
def test_wrong_case_is_never_guessed(parse, text, expected):
    assert message(parse, text) == expected


@pytest.mark.parametrize("text,expected", [
    ("40 Gb", "a size is in bytes: 'Gb' means gigabits; write '40 GB' (gigabytes) or '40 GiB' (gibibytes)"),
    ("40 Gbit", "a size is in bytes: 'Gbit' means gigabits; write '40 GB' (gigabytes) or '40 GiB' (gibibytes)"),
    ("40 Gib", "a size is in bytes: 'Gib' means gibibits; write '40 GB' (gigabytes) or '40 GiB' (gibibytes)"),
    ("1.5 Kb", "a size is in bytes: 'Kb' means kilobits; write '1.5 kB' (kilobytes) or '1.5 KiB' (kibibytes)"),
    ("8 kbits", "a size is in bytes: 'kbits' means kilobits; write '8 kB' (kilobytes) or '8 KiB' (kibibytes)"),
    ("8 b", "a size is in bytes: 'b' means bits; write '8 B' (bytes)"),
])
def test_size_in_bits(text, expected):
    assert message(parse_bytes, text) == expected


@pytest.mark.parametrize("parse,text,expected", [
    (parse_byte_rate, "25 GB", "a bandwidth needs a rate unit: did you mean '25 GB/s'?"),
    (parse_byte_rate, "25 GiB", "a bandwidth needs a rate unit: did you mean '25 GiB/s'?"),
    (parse_byte_rate, "200 Gb", "a bandwidth needs a rate unit: did you mean '200 Gb/s'?"),
    (parse_byte_rate, "50 GB bidirectional", "a bandwidth needs a rate unit: did you mean '50 GB/s bidirectional'?"),
    (parse_flop_rate, "312 TFLOP", "a compute rate needs a rate unit: did you mean '312 TFLOP/s'?"),
    (parse_flop_rate, "624 Top", "a compute rate needs a rate unit: did you mean '624 TOP/s'?"),
    (parse_transfer_rate, "16 GT", "a transfer rate needs a rate unit: did you mean '16 GT/s'?"),
])
def test_rate_without_per_second(parse, text, expected):
    assert message(parse, text) == expected


@pytest.mark.parametrize("parse,text,expected", [
    (parse_byte_rate, "fast", "cannot read 'fast' as a bandwidth: expected a number followed by a unit, e.g. '200 Gb/s'"),
    (parse_byte_rate, "gb/s", "cannot read 'gb/s' as a bandwidth: expected a number followed by a unit, e.g. '200 Gb/s'"),
    (parse_bytes, "", "cannot read '' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
    (parse_bytes, "   ", "cannot read '' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
    (parse_bytes, ".5 GB", "cannot read '.5 GB' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
    (parse_bytes, "+5 GB", "cannot read '+5 GB' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
    (parse_bytes, "1__000 B", "cannot read '1__000 B' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
    (parse_bytes, "1,000 B", "cannot read '1,000 B' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
    (parse_bytes, "1.2.3 GB", "cannot read '1.2.3 GB' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
    (parse_bytes, "infinite", "cannot read 'infinite' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
    (parse_flop_rate, "lots", "cannot read 'lots' as a compute rate: expected a number followed by a unit, e.g. '312 TFLOPS'"),
    (parse_transfer_rate, "Gen5", "cannot read 'Gen5' as a transfer rate: expected a number followed by a unit, e.g. '16 GT/s'"),
    (parse_duration, "soon", "cannot read 'soon' as a duration: expected a number followed by a unit, e.g. '2 us'"),
])
def test_not_a_number(parse, text, expected):
    assert message(parse, text) == expected


@pytest.mark.parametrize("parse,text,expected", [
    (parse_byte_rate, "-25 GB/s", "a bandwidth must not be negative, got '-25 GB/s'"),
    (parse_bytes, "-1 B", "a size must not be negative, got '-1 B'"),
    (parse_duration, " -0 s ", "a duration must not be negative, got '-0 s'"),
    (parse_byte_rate, "inf GB/s", "a bandwidth must be a finite number, got 'inf GB/s'"),
    (parse_byte_rate, "-inf GB/s", "a bandwidth must be a finite number, got '-inf GB/s'"),
    (parse_flop_rate, "NaN TFLOPS", "a compute rate must be a finite number, got 'NaN TFLOPS'"),
    (parse_duration, "Infinity s", "a duration must be a finite number, got 'Infinity s'"),
    (parse_byte_rate, "1e400 GB/s", "'1e400 GB/s' is too large for a bandwidth"),
    (parse_duration, "2e308 s", "'2e308 s' is too large for a duration"),
    (parse_bytes, "1e2000 B", "'1e2000 B' is too large for a size"),
    (parse_bytes, "1.5 B", "a size must be a whole number of bytes, got '1.5 B'"),
    (parse_bytes, "0.1 KiB", "a size must be a whole number of bytes, got '0.1 KiB'"),
])
def test_out_of_range(parse, text, expected):
    assert message(parse, text) == expected


def test_float_yaml_specials_are_bare_numbers():
    assert "got the bare number nan;" in message(parse_byte_rate, math.nan)
    assert "got the bare number inf;" in message(parse_byte_rate, math.inf)


def test_unit_error_is_a_value_error():
    assert issubclass(UnitError, ValueError)


# --- formatting --------------------------------------------------------------------------------


@pytest.mark.parametrize("format_,value,expected", [
    (format_bytes, 0, "0 B"),
    (format_bytes, 1023, "1023 B"),
    (format_bytes, 1536, "1.5 KiB"),
    (format_bytes, 40 * 2**30, "40 GiB"),
    (format_bytes, 40 * 10**9, "40 GB"),
    (format_bytes, 3 * 2**39, "1.5 TiB"),
    (format_bytes, 80 * 2**30 + 1, "85899345921 B"),
    (format_byte_rate, 0.0, "0 B/s"),
    (format_byte_rate, 25e9, "25 GB/s"),
    (format_byte_rate, 12.5e9, "12.5 GB/s"),
    (format_byte_rate, 0.125, "0.125 B/s"),
    (format_byte_rate, 1234567890.1234567, "1234567890.1234567 B/s"),
    (format_byte_rate, 1.7976931348623157e308, "1.7976931348623157e308 B/s"),
    (format_flop_rate, 312e12, "312 TFLOPS"),
    (format_flop_rate, 19.5e12, "19.5 TFLOPS"),
    (format_flop_rate, 1e21, "1000 EFLOPS"),
    (format_transfer_rate, 16e9, "16 GT/s"),
    (format_transfer_rate, 8e9, "8 GT/s"),
    (format_transfer_rate, 2.5e9, "2.5 GT/s"),
    (format_duration, 2e-6, "2 us"),
    (format_duration, 1.5e-3, "1.5 ms"),
    (format_duration, 0.5, "500 ms"),
    (format_duration, 3600.0, "3600 s"),
    (format_duration, 0.1 + 0.2, "300.00000000000004 ms"),
])
def test_readable_formats(format_, value, expected):
    assert format_(value) == expected


@pytest.mark.parametrize("format_,value", [
    (format_bytes, -1), (format_bytes, 1.5), (format_bytes, True), (format_bytes, "1 B"),
    (format_byte_rate, -1.0), (format_byte_rate, math.nan), (format_byte_rate, math.inf), (format_byte_rate, True),
    (format_flop_rate, -0.5), (format_transfer_rate, math.inf), (format_duration, "2 us"),
])
def test_format_rejects_impossible_values(format_, value):
    with pytest.raises(ValueError):
        format_(value)


# --- exact round-trips -------------------------------------------------------------------------

FLOATS = st.one_of(
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    st.floats(min_value=0.0, max_value=1e-300, allow_nan=False),  # subnormals and friends
    st.integers(0, 10**7).map(lambda k: k * 1e-9),                 # 0.1 + 0.2 style accumulations
    st.integers(0, 2**60).map(float),
    st.builds(lambda k, e: k * 10.0**e, st.integers(0, 10**4), st.integers(-30, 30)),
)
FLOAT_KINDS = [(parse_byte_rate, format_byte_rate), (parse_flop_rate, format_flop_rate),
               (parse_transfer_rate, format_transfer_rate), (parse_duration, format_duration)]


@pytest.mark.parametrize("parse,format_", FLOAT_KINDS)
@PROPERTY
@given(value=FLOATS)
@example(value=5e-324)
@example(value=2.2250738585072014e-308)
@example(value=1.7976931348623157e308)
@example(value=0.30000000000000004)
@example(value=1 / 3)
@example(value=-0.0)
def test_float_round_trip(parse, format_, value):
    text = format_(value)
    assert parse(text) == value
    assert type(parse(text)) is float


@PROPERTY
@given(n=st.one_of(
    st.integers(0, 2**100),
    st.builds(lambda k, e: k * 2**e, st.integers(0, 2**12), st.integers(0, 60)),
    st.builds(lambda k, e: k * 10**e, st.integers(0, 10**4), st.integers(0, 30)),
))
@example(n=10**1015)
def test_bytes_round_trip(n):
    assert parse_bytes(format_bytes(n)) == n


# Any string the grammar accepts: parse it, then the canonical value must round-trip too.
NUMBERS = st.from_regex(r"[0-9](?:_?[0-9]){0,5}(?:\.[0-9](?:_?[0-9]){0,5})?(?:[eE][+-]?[0-9]{1,2})?", fullmatch=True)
SPACE = st.sampled_from(["", " ", "  ", "\t", "\n", "\u00a0", "\u202f"])


def any_case(word: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda flips: "".join(c.swapcase() if flip else c for c, flip in zip(word, flips)))


UNIT_STRATEGIES = {
    "size": st.sampled_from(list(SIZES)),
    "bandwidth": st.tuples(st.sampled_from(list(BIT_RATES) + list(BYTE_RATES)),
                           st.sampled_from(["", " per direction", " bidirectional", "\tper  direction"])).map("".join),
    "compute rate": st.tuples(st.sampled_from(["", "k", "M", "G", "T", "P", "E"]),
                              st.sampled_from(["FLOPS", "FLOP/s", "OPS", "OP/s"]).flatmap(any_case)).map("".join),
    "transfer rate": st.sampled_from(list(TRANSFER_RATES)),
    "duration": st.sampled_from(list(DURATIONS) + ["μs"]),
}


def written(kind: str) -> st.SearchStrategy[str]:
    return st.tuples(SPACE, NUMBERS, SPACE, UNIT_STRATEGIES[kind], SPACE).map("".join)


@functools.cache
def schema_pattern(kind: str) -> str:
    return KINDS_MODEL.model_json_schema()["properties"][FIELD[kind]]["pattern"]


@pytest.mark.parametrize("kind", PARSERS)
@PROPERTY
@given(data=st.data())
def test_written_values_parse_match_the_pattern_and_round_trip(kind, data):
    parse, format_, _, _ = PARSERS[kind]
    text = data.draw(written(kind))
    assert re.search(schema_pattern(kind), text), text
    try:
        value = parse(text)
    except UnitError as error:  # the only ways a grammatical string can fail
        assert "whole number of bytes" in str(error) or "too large" in str(error)
        return
    assert parse(format_(value)) == value


@pytest.mark.parametrize("kind", PARSERS)
@PROPERTY
@given(data=st.data())
def test_pattern_is_no_looser_than_needed(kind, data):
    """Strings generated from the schema pattern parse, except for range and whole-byte limits."""
    parse = PARSERS[kind][0]
    text = data.draw(st.from_regex(schema_pattern(kind), fullmatch=True))
    try:
        parse(text)
    except UnitError as error:
        assert "whole number of bytes" in str(error) or "too large" in str(error)


# --- pydantic ----------------------------------------------------------------------------------


class Kinds(BaseModel):
    size: Bytes
    bandwidth: ByteRate
    compute: FlopRate
    transfer: TransferRate
    latency: Duration


KINDS_MODEL = Kinds
FIELD = {"size": "size", "bandwidth": "bandwidth", "compute rate": "compute",
         "transfer rate": "transfer", "duration": "latency"}
WRITTEN = {"size": "40 GiB", "bandwidth": "400 Gb/s", "compute": "989 TFLOPS",
           "transfer": "32 GT/s", "latency": "1.5 us"}


def test_model_reads_strings_and_stores_canonical_numbers():
    model = Kinds.model_validate(WRITTEN)
    assert model.model_dump() == {"size": 40 * 2**30, "bandwidth": 50e9, "compute": 989e12,
                                  "transfer": 32e9, "latency": 1.5e-6}
    assert type(model.size) is int


def test_model_json_dump_is_the_formatted_string():
    model = Kinds.model_validate(WRITTEN)
    assert model.model_dump(mode="json") == {"size": "40 GiB", "bandwidth": "50 GB/s", "compute": "989 TFLOPS",
                                             "transfer": "32 GT/s", "latency": "1.5 us"}
    assert Kinds.model_validate_json(model.model_dump_json()) == model


@pytest.mark.parametrize("field,value,expected", [
    ("size", 40, f"expected a size with a unit, e.g. '40 GiB' or '1.5 TB', got the bare number 40; accepted units: {SIZE_LIST}"),
    ("bandwidth", 25e9, "expected a bandwidth with a unit, e.g. '200 Gb/s' or '25 GB/s', got the bare number "
                        f"25000000000.0; accepted units: {RATE_LIST}"),
    ("compute", "312", f"expected a compute rate with a unit, e.g. '312 TFLOPS' or '624 TOPS', got the bare number 312; "
                       f"accepted units: {FLOP_LIST}"),
    ("transfer", "16 gt/s", "'gt/s' is not an accepted unit (units are case-sensitive); did you mean 'GT/s' "
                            "(gigatransfers per second)?"),
    ("latency", None, "expected a duration as a string such as '2 us', got null"),
    ("bandwidth", "25 gb/s", "'gb/s' is ambiguous: write 'Gb/s' (gigabits per second) or 'GB/s' (gigabytes per second)"),
    ("size", "{x} GB", "cannot read '{x} GB' as a size: expected a number followed by a unit, e.g. '40 GiB'"),
])
def test_model_errors_carry_the_exact_message(field, value, expected):
    with pytest.raises(ValidationError) as error:
        Kinds.model_validate({**WRITTEN, field: value})
    [problem] = error.value.errors()
    assert problem["msg"] == expected
    assert problem["type"] == "unit"
    assert problem["loc"] == (field,)


@pytest.mark.parametrize("kind", PARSERS)
def test_json_schema(kind):
    schema = Kinds.model_json_schema()["properties"][FIELD[kind]]
    assert schema["type"] == "string"
    assert schema["description"]
    pattern = re.compile(schema["pattern"])
    parse, format_, units, _ = PARSERS[kind]
    examples = schema["examples"] + [f"3 {unit}" for unit in units] + [WRITTEN[FIELD[kind]]]
    for text in examples:
        parse(text)
        assert pattern.search(text), text
        assert pattern.search(format_(parse(text))), text
    for text in ["fast", "40", "", "-1 GB", "1 KB", "1 gb", "40 GiB extra", "1e3", "nan GB"]:
        assert not pattern.search(text), text


def test_json_schema_validates_json_dumps():
    import jsonschema
    schema = Kinds.model_json_schema()
    jsonschema.validate(Kinds.model_validate(WRITTEN).model_dump(mode="json"), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**WRITTEN, "bandwidth": "25 gb/s"}, schema)
