"""Quantities with units: read them as people write them, store them canonically, print them back.

Canonical values (what the parsers return and the models store):

- size: bytes, `int`                                        ('40 GiB', '1.5 TB')
- bandwidth: bytes per second PER DIRECTION, `float`        ('200 Gb/s', '25 GB/s')
- compute rate: operations (FLOP or integer ops) per second, `float`   ('312 TFLOPS', '624 TOPS')
- transfer rate: transfers per second, `float`              ('16 GT/s' -> 16e9)
- duration: seconds, `float`                                ('2 us', '1.5 ms')

Decisions:

- A quantity is a string: number, optional whitespace, unit. The number is a plain decimal
  (`1`, `1.5`, `1_000`, `1.5e3`; no sign, no leading `.`). Bare numbers are always an error,
  also for YAML ints/floats and for Python code setting a model field (so re-validating a
  *python-mode* dump fails; dump in json mode to round-trip through a model).
- Units are case-sensitive and never guessed: `k` is 1000, `Ki` 1024, `K` is not a prefix,
  `b` is bits and `B` bytes. Only the FLOPS/OPS word of a compute rate is case-insensitive.
- Bandwidths may end in ` per direction` (the default meaning) or ` bidirectional` (the sum of
  both directions, halved). Durations accept both micro signs (U+00B5 and U+03BC).
- Arithmetic is exact (`Fraction`); float results are correctly rounded, so a float written
  as its repr in the base unit reads back unchanged. A size must come out a whole number of bytes.
- `format_*` prints the shortest decimal in one of a few units that reads back EXACTLY
  (`parse_x(format_x(v)) == v`), preferring no exponent and a number >= 1; values with no short
  form come out in the base unit ('1234567890.1234567 B/s'). Bandwidths are
  printed in bytes, compute rates as FLOPS (the canonical value does not record FLOP vs OPS).
- The parsers read any finite amount; the pydantic validators (`validate_*`, what platform
  files go through) also refuse amounts above `MAX_BYTES`, `MAX_BYTE_RATE`, `MAX_FLOP_RATE`,
  `MAX_TRANSFER_RATE` and `MAX_DURATION`: far above any machine, low enough that sums over a
  65,536-node cluster stay finite floats and every output (JSON, XML, Slurm) can hold them.
- In pydantic models a `UnitError` becomes a `PydanticCustomError` of type `unit` whose `msg`
  is exactly the `UnitError` text (no "Value error, " prefix): `validate_*` here. The pydantic
  field types (`Bytes`, `ByteRate`, ...) are in `hwspec.spec.unit_types`; this module imports no
  pydantic (only pydantic_core's error), so code that only parses or prints quantities need not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from typing import Any, TypeVar

from pydantic_core import PydanticCustomError


class UnitError(ValueError):
    """A value that cannot be read as a quantity; `str(error)` is the complete user-facing message."""


_PREFIXES = {"": (1, ""), "k": (10**3, "kilo"), "M": (10**6, "mega"), "G": (10**9, "giga"),
             "T": (10**12, "tera"), "P": (10**15, "peta"), "E": (10**18, "exa"),
             "Ki": (2**10, "kibi"), "Mi": (2**20, "mebi"), "Gi": (2**30, "gibi"),
             "Ti": (2**40, "tebi"), "Pi": (2**50, "pebi")}


def _family(prefixes: str, base: str, scale: Fraction | int, noun: str) -> dict[str, tuple[Fraction, str]]:
    """`{prefix+base: (factor, description)}` for space-separated prefixes ('-' means none)."""
    table = {}
    for prefix in prefixes.split():
        prefix = prefix.strip("-")
        factor, name = _PREFIXES[prefix]
        table[prefix + base] = (Fraction(factor) * scale, name + noun)
    return table


_BITS = Fraction(1, 8)
_SIZE = _family("- k M G T P Ki Mi Gi Ti Pi", "B", 1, "bytes")
_BYTE_RATE = {**_family("- k M G T", "b/s", _BITS, "bits per second"),
              **_family("- k M G T", "bit/s", _BITS, "bits per second"),
              **_family("- k M G T", "bps", _BITS, "bits per second"),
              **_family("- k M G T Ki Mi Gi Ti", "B/s", 1, "bytes per second"),
              **_family("- k M G T", "Bps", 1, "bytes per second")}
_FLOP_RATE = {**_family("- k M G T P E", "FLOPS", 1, "flops"), **_family("- k M G T P E", "FLOP/s", 1, "flops"),
              **_family("- k M G T P E", "OPS", 1, "ops"), **_family("- k M G T P E", "OP/s", 1, "ops")}
_TRANSFER_RATE = {**_family("G M", "T/s", 1, "transfers per second")}
_DURATION = {"s": (Fraction(1), "seconds"), "ms": (Fraction(1, 10**3), "milliseconds"),
             "us": (Fraction(1, 10**6), "microseconds"), "µs": (Fraction(1, 10**6), "microseconds"),
             "ns": (Fraction(1, 10**9), "nanoseconds")}

BYTES_UNITS: dict[str, Fraction] = {unit: factor for unit, (factor, _) in _SIZE.items()}
"""Size unit -> exact number of bytes."""
BYTE_RATE_UNITS: dict[str, Fraction] = {unit: factor for unit, (factor, _) in _BYTE_RATE.items()}
"""Bandwidth unit -> exact bytes per second (bit units are 1/8 of the bit count)."""
FLOP_RATE_UNITS: dict[str, Fraction] = {unit: factor for unit, (factor, _) in _FLOP_RATE.items()}
"""Compute-rate unit (canonical spelling; the FLOPS/OPS word is read in any case) -> ops per second."""
TRANSFER_RATE_UNITS: dict[str, Fraction] = {unit: factor for unit, (factor, _) in _TRANSFER_RATE.items()}
"""Transfer-rate unit -> transfers per second."""
DURATION_UNITS: dict[str, Fraction] = {unit: factor for unit, (factor, _) in _DURATION.items()}
"""Duration unit -> exact seconds (`µs` is U+00B5; U+03BC is read as the same unit)."""

_WS = r"[ \t\r\n\u00a0\u202f]"  # the same class in the parser and in the JSON-schema pattern
_NUMBER = r"[0-9](?:_?[0-9])*(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9]+)?"
_QUALIFIERS = rf"per{_WS}+direction|bidirectional"
_WS_CHARS = " \t\r\n\u00a0\u202f"  # _WS as a str.strip() argument
_LEADING_NUMBER = re.compile(rf"(?P<sign>-?)(?P<number>{_NUMBER})")
_NOT_FINITE = re.compile(rf"{_WS}*[+-]?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)
_SIZE_IN_BITS = re.compile(r"(?P<prefix>(?P<letter>[kKMGTP])(?P<binary>i?))?(?:b|bit|bits)")
_FLOP_WORD = re.compile(r"(flops|flop/s|ops|op/s)$", re.IGNORECASE)
_FLOP_SPELLING = {"flops": "FLOPS", "flop/s": "FLOP/s", "ops": "OPS", "op/s": "OP/s"}
_MAX_EXPONENT = 1000  # |decimal exponent| beyond this is out of range (or rounds to 0 for floats)


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


@dataclass(frozen=True, slots=True)
class _Kind:
    """One kind of quantity: its units with their factors to the canonical unit, and how it
    is written and read."""

    noun: str                                  # "bandwidth"
    examples: tuple[str, str]
    units: dict[str, tuple[Fraction, str]]     # unit -> (factor to canonical, description)
    formats: tuple[str, ...]                   # units format_* may print, tie-break order
    accepted: str = ""
    unit_pattern: str = ""
    rate: bool = False                         # '25 GB' gets "did you mean '25 GB/s'?"
    qualifiers: bool = False                   # 'per direction' / 'bidirectional'
    normalize: Callable[[str], str] = field(default=lambda unit: unit)

    def __post_init__(self) -> None:
        if not self.accepted:
            object.__setattr__(self, "accepted", ", ".join(self.units))
        if not self.unit_pattern:
            alternatives = sorted(self.units, key=len, reverse=True)
            object.__setattr__(self, "unit_pattern", "|".join(map(re.escape, alternatives)))

    @property
    def article(self) -> str:
        return f"a {self.noun}"

    def lookup(self, unit: str) -> str | None:
        unit = self.normalize(unit)
        return unit if unit in self.units else None

    def pattern(self) -> str:
        qualifier = f"(?:{_WS}+(?:{_QUALIFIERS}))?" if self.qualifiers else ""
        return f"^{_WS}*{_NUMBER}{_WS}*(?:{self.unit_pattern}){qualifier}{_WS}*$"

    def json_schema(self, stored: str) -> dict[str, Any]:
        return {"type": "string", "pattern": self.pattern(), "examples": list(self.examples),
                "description": f"{self.article.capitalize()} written as a number and a unit, e.g. "
                               f"'{self.examples[0]}'; stored as {stored}. Accepted units: {self.accepted}."}


_SIZE_KIND = _Kind("size", ("40 GiB", "1.5 TB"), _SIZE,
                   formats=("B", "kB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "TiB", "PB", "PiB"))
_BYTE_RATE_KIND = _Kind("bandwidth", ("200 Gb/s", "25 GB/s"), _BYTE_RATE, rate=True, qualifiers=True,
                        formats=("B/s", "kB/s", "KiB/s", "MB/s", "MiB/s", "GB/s", "GiB/s", "TB/s", "TiB/s"),
                        accepted=", ".join(_BYTE_RATE) + "; optionally followed by 'per direction' or 'bidirectional'")
_FLOP_RATE_KIND = _Kind(
    "compute rate", ("312 TFLOPS", "624 TOPS"), _FLOP_RATE, rate=True,
    formats=tuple(unit for unit in _FLOP_RATE if unit.endswith("FLOPS")),
    accepted="FLOPS, FLOP/s, OPS, OP/s, each with an optional prefix k, M, G, T, P or E (e.g. TFLOPS, TOP/s)",
    unit_pattern=f"[kMGTPE]?(?:{'|'.join(_any_case(word) for word in _FLOP_SPELLING.values())})",
    normalize=lambda unit: _FLOP_WORD.sub(lambda m: _FLOP_SPELLING[m[1].lower()], unit))
_TRANSFER_RATE_KIND = _Kind("transfer rate", ("16 GT/s", "8 GT/s"), _TRANSFER_RATE, rate=True,
                            formats=("MT/s", "GT/s"))
_DURATION_KIND = _Kind("duration", ("2 us", "1.5 ms"), _DURATION, formats=("s", "ms", "us", "ns"),
                       unit_pattern="s|ms|us|µs|μs|ns", normalize=lambda unit: unit.replace("μ", "µ"))


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a value of type {type(value).__name__}"


def _unit_problem(kind: _Kind, number: str, unit: str, suffix: str) -> str:
    """The message for a unit that is not in the table: a specific hint when there is one."""
    if kind is _SIZE_KIND and (bits := _SIZE_IN_BITS.fullmatch(unit)):
        if not bits["prefix"]:
            return f"a size is in bytes: '{unit}' means bits; write '{number} B' (bytes)"
        letter = "k" if bits["letter"] in "kK" else bits["letter"]
        binary = letter.upper() + "i"
        meaning = _PREFIXES[binary if bits["binary"] else letter][1] + "bits"
        return (f"a size is in bytes: '{unit}' means {meaning}; write '{number} {letter}B' "
                f"({_SIZE[letter + 'B'][1]}) or '{number} {binary}B' ({_SIZE[binary + 'B'][1]})")
    if unit.startswith("K") and not unit.startswith("Ki") and {"k" + unit[1:], "Ki" + unit[1:]} <= kind.units.keys():
        base = kind.units[unit[1:]][1]
        return f"'{unit}' is ambiguous: write 'k{unit[1:]}' (1000 {base}) or 'Ki{unit[1:]}' (1024 {base})"
    if kind.rate and not unit.endswith("bit") and (rate_unit := kind.lookup(unit + "/s")):
        return f"{kind.article} needs a rate unit: did you mean '{number} {rate_unit}{suffix}'?"
    same = [u for u in kind.units if u.lower() == kind.normalize(unit).lower()]
    if len(same) == 1:
        return (f"'{unit}' is not an accepted unit (units are case-sensitive); "
                f"did you mean '{same[0]}' ({kind.units[same[0]][1]})?")
    if same:
        choices = [f"'{u}' ({kind.units[u][1]})" for u in same]
        return f"'{unit}' is ambiguous: write {', '.join(choices[:-1])} or {choices[-1]}"
    return f"unknown {kind.noun} unit '{unit}'; accepted units: {kind.accepted}"


def _exact(number: str) -> Fraction:
    """The exact value of a number matched by `_NUMBER`.

    Raises OverflowError beyond 1e1000; values below 1e-1000 clamp to 1e-1001 (for floats that
    is the same correctly rounded 0.0, for sizes the same "not a whole number of bytes").
    """
    mantissa, _, exponent = number.replace("_", "").lower().partition("e")
    digits = Decimal(mantissa)
    if not digits:
        return Fraction(0)
    sign = -1 if exponent.startswith("-") else 1
    magnitude = exponent.lstrip("+-").lstrip("0")  # may be long: compare lengths before int()
    shift = sign * (int(magnitude or 0) if len(magnitude) < 9 else 10**9)
    if digits.adjusted() + shift > _MAX_EXPONENT:
        raise OverflowError(number)
    if digits.adjusted() + shift < -_MAX_EXPONENT:
        return Fraction(1, 10 ** (_MAX_EXPONENT + 1))
    return Fraction(digits) * Fraction(10) ** shift


def _short(text: str, limit: int = 40) -> str:
    """`text` for a message: cut to `limit` characters (a 100 KB value is not echoed)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _split_quantity(value: str) -> dict[str, str] | None:
    """`value` as sign, number and unit text (blanks around each dropped), or None when it
    does not start with a number. Linear in len(value): strip and one anchored match, no
    backtracking over blanks (a regex with `.*?` between blank runs is quadratic)."""
    text = value.strip(_WS_CHARS)
    match = _LEADING_NUMBER.match(text)
    if match is None:
        return None
    return {"sign": match["sign"], "number": match["number"], "unit": text[match.end():].lstrip(_WS_CHARS)}


def _split_qualifier(unit: str) -> tuple[str, str] | None:
    """`"Gb/s per direction"` -> ("Gb/s", "per direction"), `"GB/s bidirectional"` ->
    ("GB/s", "bidirectional"); None without a qualifier. Linear in len(unit)."""
    for word, qualifier in (("bidirectional", "bidirectional"), ("direction", "per direction")):
        if not unit.endswith(word):
            continue
        head = unit[:-len(word)]
        if qualifier == "per direction":
            blanks = head.rstrip(_WS_CHARS)
            if blanks == head or not blanks.endswith("per"):
                return None
            head = blanks[:-3]
        stripped = head.rstrip(_WS_CHARS)
        if stripped == head or not stripped:
            return None
        return stripped, qualifier
    return None


def _parse(kind: _Kind, value: object) -> Fraction:
    """The exact canonical amount written in `value`, or UnitError."""
    example = kind.examples[0]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UnitError(f"expected {kind.article} as a string such as '{example}', got {_type_name(value)}")
    bare = (f"expected {kind.article} with a unit, e.g. '{example}' or '{kind.examples[1]}', "
            "got the bare number {}; accepted units: " + kind.accepted)
    if not isinstance(value, str):
        raise UnitError(bare.format(value))
    shown = _short(value.strip())
    match = _split_quantity(value)
    if match is None or (match["unit"] and not match["unit"][0].isalpha()):
        if _NOT_FINITE.match(value):
            raise UnitError(f"{kind.article} must be a finite number, got '{shown}'")
        raise UnitError(f"cannot read '{shown}' as {kind.article}: "
                        f"expected a number followed by a unit, e.g. '{example}'")
    number, unit, qualifier = match["sign"] + match["number"], match["unit"], ""
    if not unit:
        raise UnitError(bare.format(number))
    if match["sign"]:
        raise UnitError(f"{kind.article} must not be negative, got '{shown}'")
    if kind.qualifiers and (qualified := _split_qualifier(unit)):
        unit, qualifier = qualified
    canonical = kind.lookup(unit)
    if canonical is None:
        raise UnitError(_unit_problem(kind, number, _short(unit), " " + qualifier if qualifier else ""))
    try:
        amount = _exact(number) * kind.units[canonical][0]
    except OverflowError:
        raise UnitError(f"'{shown}' is too large for {kind.article}") from None
    return amount / 2 if qualifier == "bidirectional" else amount


def _to_float(kind: _Kind, value: object) -> float:
    amount = _parse(kind, value)
    try:
        return float(amount)
    except OverflowError:
        raise UnitError(f"'{_short(str(value).strip())}' is too large for {kind.article}") from None


def _plain(decimal: Decimal) -> str:
    """`decimal` without trailing zeros; scientific ('1.5e30') only for very large or small values."""
    _, digits, exponent = decimal.as_tuple()
    assert isinstance(exponent, int), decimal  # made from a Fraction: always finite
    text = "".join(map(str, digits)).rstrip("0")
    if not text:
        return "0"
    exponent += len(digits) - len(text)
    adjusted = exponent + len(text) - 1
    if not -6 <= adjusted < 21:
        return text[0] + (f".{text[1:]}" if text[1:] else "") + f"e{adjusted}"
    if exponent >= 0:
        return text + "0" * exponent
    text = text.rjust(-exponent + 1, "0")
    return f"{text[:exponent]}.{text[exponent:]}"


def _decimal(value: Fraction, digits: int | None = None) -> Decimal:
    """`value` rounded to `digits` significant digits (exact when None and the decimal is finite)."""
    with localcontext() as context:
        context.rounding = ROUND_HALF_EVEN
        context.prec = digits or value.numerator.bit_length() + value.denominator.bit_length() + 10
        return Decimal(value.numerator) / Decimal(value.denominator)


def _format(kind: _Kind, amount: Fraction, reads_back: Callable[[Fraction], bool]) -> str:
    """The best `number unit` among `kind.formats` whose exact value satisfies `reads_back`.

    Per unit, the fewest significant digits that read back; across units, prefer no exponent,
    a number >= 1, and the shortest number, unless it needs more than 8 significant digits, in
    which case the first unit in `kind.formats` (the base unit) wins.
    """
    best: tuple[tuple[Any, ...], str] | None = None
    for order, unit in enumerate(kind.formats):
        scaled = amount / kind.units[unit][0]
        for digits in (*range(1, 18), None):
            number = _plain(_decimal(scaled, digits))
            try:
                if reads_back(_exact(number) * kind.units[unit][0]):
                    break
            except OverflowError:  # the number is out of the readable range in this unit
                continue
        else:  # the exact decimal reads back unless out of range; another unit will do
            continue
        long = len(number.replace(".", "").strip("0")) > 8  # not readable: take the first (base) unit
        key = ("e" in number, 0 < scaled < 1, long, 0 if long else len(number), order)
        if best is None or key < best[0]:
            best = (key, f"{number} {unit}")
    assert best is not None
    return best[1]


def _format_float(kind: _Kind, value: float) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError(f"cannot format {value!r} as {kind.article}: expected a finite number >= 0")
    value = float(value)

    def reads_back(amount: Fraction) -> bool:
        try:
            return float(amount) == value
        except OverflowError:
            return False
    return _format(kind, Fraction(value), reads_back)


MAX_BYTES = 2**50
"""The largest size a platform file may state: 1 PiB (a node has a few TiB of memory)."""
MAX_BYTE_RATE = 1e15
"""The largest bandwidth a platform file may state: 1000 TB/s (an NVL72 domain has 130 TB/s)."""
MAX_FLOP_RATE = 1e18
"""The largest compute rate a platform file may state: 1 EFLOPS (a GPU has a few dozen PFLOPS)."""
MAX_TRANSFER_RATE = 1e12
"""The largest transfer rate a platform file may state: 1000 GT/s (PCIe 6 runs at 64 GT/s)."""
MAX_DURATION = 86400.0
"""The longest duration a platform file may state: one day, in seconds."""


def parse_bytes(text: object) -> int:
    """A size written with a unit ('40 GiB', '1.5 TB') -> bytes, an int >= 0. Raises UnitError."""
    return _whole_bytes(_parse(_SIZE_KIND, text), text)


def _whole_bytes(amount: Fraction, text: object) -> int:
    if amount.denominator != 1:
        raise UnitError(f"a size must be a whole number of bytes, got '{str(text).strip()}'")
    return int(amount)


def _at_most(kind: _Kind, maximum: float, shown: str, value: object) -> Fraction:
    """The exact amount written in `value`, which must be at most `maximum` (`shown` in words)."""
    amount = _parse(kind, value)
    if amount > maximum:
        raise UnitError(f"{kind.article} must be at most {shown}, got '{_short(str(value).strip())}'")
    return amount


def parse_byte_rate(text: object) -> float:
    """A bandwidth ('200 Gb/s', '25 GB/s bidirectional') -> bytes per second per direction, finite >= 0."""
    return _to_float(_BYTE_RATE_KIND, text)


def parse_flop_rate(text: object) -> float:
    """A compute rate ('312 TFLOPS', '624 TOPS') -> operations per second, finite >= 0."""
    return _to_float(_FLOP_RATE_KIND, text)


def parse_transfer_rate(text: object) -> float:
    """A link transfer rate ('16 GT/s') -> transfers per second (16e9), finite >= 0."""
    return _to_float(_TRANSFER_RATE_KIND, text)


def parse_duration(text: object) -> float:
    """A duration ('2 us', '1.5 ms') -> seconds, finite >= 0."""
    return _to_float(_DURATION_KIND, text)


def format_bytes(n: int) -> str:
    """Bytes (int >= 0) -> e.g. '40 GiB', '40 GB', '1.5 TiB', '1023 B'; `parse_bytes` gives back `n`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"cannot format {n!r} as a size: expected an int >= 0 (bytes)")
    return _format(_SIZE_KIND, Fraction(n), lambda amount: amount == n)


def format_byte_rate(x: float) -> str:
    """Bytes per second per direction -> e.g. '25 GB/s'; `parse_byte_rate` gives back exactly `x`."""
    return _format_float(_BYTE_RATE_KIND, x)


def format_flop_rate(x: float) -> str:
    """Operations per second -> e.g. '312 TFLOPS'; `parse_flop_rate` gives back exactly `x`."""
    return _format_float(_FLOP_RATE_KIND, x)


def format_transfer_rate(x: float) -> str:
    """Transfers per second -> e.g. '16 GT/s'; `parse_transfer_rate` gives back exactly `x`."""
    return _format_float(_TRANSFER_RATE_KIND, x)


def format_duration(x: float) -> str:
    """Seconds -> e.g. '2 us', '1.5 ms'; `parse_duration` gives back exactly `x`."""
    return _format_float(_DURATION_KIND, x)


_Parsed = TypeVar("_Parsed")


def _unit_error(parse: Callable[[object], _Parsed], value: object) -> _Parsed:
    """`parse(value)`, with a UnitError raised as pydantic_core's error of type `unit` whose
    `msg` is exactly the UnitError text."""
    try:
        return parse(value)
    except UnitError as error:
        raise PydanticCustomError("unit", "{message}", {"message": str(error)}) from None


def validate_bytes(value: object) -> int:
    """`parse_bytes` as a validator, at most MAX_BYTES (module level: the run-time spec names it
    by import path)."""
    return _unit_error(lambda v: _whole_bytes(_at_most(_SIZE_KIND, MAX_BYTES, "1 PiB", v), v), value)


def validate_byte_rate(value: object) -> float:
    """`parse_byte_rate` as a validator, at most MAX_BYTE_RATE (1000 TB/s)."""
    return _unit_error(lambda v: float(_at_most(_BYTE_RATE_KIND, MAX_BYTE_RATE, "1000 TB/s", v)), value)


def validate_flop_rate(value: object) -> float:
    """`parse_flop_rate` as a validator, at most MAX_FLOP_RATE."""
    return _unit_error(lambda v: float(_at_most(_FLOP_RATE_KIND, MAX_FLOP_RATE, "1 EFLOPS", v)), value)


def validate_transfer_rate(value: object) -> float:
    """`parse_transfer_rate` as a validator, at most MAX_TRANSFER_RATE."""
    return _unit_error(lambda v: float(_at_most(_TRANSFER_RATE_KIND, MAX_TRANSFER_RATE, "1000 GT/s", v)), value)


def validate_duration(value: object) -> float:
    """`parse_duration` as a validator, at most MAX_DURATION."""
    return _unit_error(lambda v: float(_at_most(_DURATION_KIND, MAX_DURATION, "1 day (86400 s)", v)), value)

