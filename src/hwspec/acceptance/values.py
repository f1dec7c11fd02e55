"""What the result readers share: the bounds every value is held to, the problems a reader
records, the per-line rank prefixes of launchers, and JSON read within bounds.

Every number a reader keeps is converted here, after its text is checked: at most
`MAX_NUMBER_CHARS` characters of plain decimal notation (no `_`, no `nan`, no `infinity`),
finite, not negative, and not above the bound of its kind. A value past these is a `BadValue`,
whose message the reader turns into a located problem.
"""

from __future__ import annotations

import json
import math
import re

from hwspec import jsonbound
from hwspec.diagnostics import Code, Diagnostic, Severity
from hwspec.text import visible

MAX_BYTES = 2**50
"""A message size, bytes (1 PiB, the spec language's bound on sizes)."""
MAX_GBPS = 1e6
"""A bandwidth, GB/s (10^9 bytes/s): 1000 TB/s, the spec language's bound on bandwidths."""
MAX_TIME_US = 1e12
"""A time, microseconds (about 11.6 days)."""
MAX_LATENCY_NS = 1e12
"""A latency or a sum of latencies, nanoseconds (nvbandwidth's latency testcases)."""
MAX_WRONG = 2**50
"""A count of wrong elements (never more than the bytes of a message)."""
MAX_RANK = 2**20 - 1
"""A rank number (below 2^20, about a million: more GPUs than any one job runs on)."""
MAX_DEVICE = 1023
"""A device ordinal on one node."""
MAX_THREADS = 4096
"""nccl-tests' `nThread` and `nGpus` (per thread)."""
MAX_MATRIX = 4096
"""Rows or columns of an nvbandwidth matrix (one per GPU or CPU)."""
MAX_NUMBER_CHARS = jsonbound.MAX_NUMBER_CHARS
"""The longest number text converted (32 characters: 2**64 has 20 digits)."""
MAX_TEXT_CHARS = 256
"""The longest host name, device name, label, version or testcase name kept."""
MAX_ENV_VALUE_CHARS = 1024
"""The longest NCCL_*/RCCL_* setting value kept."""
MAX_ENV_NAMES = 128
"""Distinct NCCL_*/RCCL_* names kept from one file (NCCL reads about 200; a launch sets tens)."""
MAX_RUNS = 10_000
"""Runs read from one file; the rest of a file past them is refused."""
MAX_PROBLEMS = 1000
"""Errors, and warnings, listed for one file; past them one more says how many were not listed."""

NOT_AVAILABLE = "N/A"
"""How the programs print a value they did not measure or check."""

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = frozenset({"nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"})


class BadValue(ValueError):
    """A value a reader cannot keep; `message` says which and why, quoting it `visible`."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def quote(text: str, limit: int = 40) -> str:
    """`text` in single quotes, shown `visible` (one printable line), cut to `limit` characters
    with `...`: how a message quotes what a file says."""
    shown = text if len(text) <= limit else text[:limit] + "..."
    return f"'{visible(shown)}'"


def describe(value: object) -> str:
    """A value from a file as a message shows it: text quoted, a JSON number as Python writes it,
    anything else by its JSON kind."""
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return quote(repr(value))
    return "an array" if isinstance(value, list) else "an object"


def number(value: object, what: str, bound: float, unit: str) -> float:
    """`value` (a file's text, or a JSON number) as a float in [0, bound], else BadValue naming
    `what`. Never converts text that is not plain decimal notation of at most MAX_NUMBER_CHARS."""
    if isinstance(value, str):
        if len(value) > MAX_NUMBER_CHARS:
            raise BadValue(f"{what} has {len(value)} characters, more than the {MAX_NUMBER_CHARS} a number may have")
        if value.lower() in _NON_FINITE:
            raise BadValue(f"{what} {quote(value)} is not a finite non-negative number")
        if not _DECIMAL.fullmatch(value):
            raise BadValue(f"{what} {quote(value)} is not a number")
        result = float(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        result = float(value)
    else:
        raise BadValue(f"{what} {describe(value)} is not a number")
    if not math.isfinite(result) or result < 0:
        raise BadValue(f"{what} {describe(value)} is not a finite non-negative number")
    if result > bound:
        raise BadValue(f"{what} {describe(value)} is more than {bound:g} {unit}")
    return result + 0.0  # -0.0 is 0.0


def whole(value: object, what: str, bound: int, unit: str) -> int:
    """`value` as a whole number in [0, bound] (`number`'s checks, then no fraction), else BadValue.
    `%g` notation (`1e+06`) is whole when it has no fraction; a text of plain digits is converted
    exactly."""
    if isinstance(value, str) and value.isdigit() and value.isascii() and len(value) <= MAX_NUMBER_CHARS:
        result = int(value)
        if result > bound:
            raise BadValue(f"{what} {quote(value)} is more than {bound} {unit}")
        return result
    exact = value if isinstance(value, int) and not isinstance(value, bool) else None
    converted = number(value, what, float(bound), unit)
    if exact is not None:
        if exact > bound:
            raise BadValue(f"{what} {describe(value)} is more than {bound} {unit}")
        return exact
    if not converted.is_integer():
        raise BadValue(f"{what} {describe(value)} is not a whole number")
    return int(converted)


def optional(value: object) -> bool:
    """Whether `value` is what the programs print for a value they did not measure: `N/A`
    (text) or null (JSON)."""
    return value is None or value == NOT_AVAILABLE


def text_value(value: object, what: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`value` as text of at most `limit` characters, else BadValue. The text is kept as the file
    has it: whoever shows it shows it `visible`."""
    if not isinstance(value, str):
        raise BadValue(f"{what} {describe(value)} is not text")
    if len(value) > limit:
        raise BadValue(f"{what} has {len(value)} characters, more than the {limit} kept")
    return value


class Problems:
    """The problems one reader finds in one file, in the order found. I101 (an error) is a run or
    a file that cannot be read; I103 (a warning) a row or value left out, the rest still read.
    At most MAX_PROBLEMS of each are listed: past them a problem is only counted, so that a file of
    a million bad rows costs no more than its rows, and an error is never hidden by warnings."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.listed: list[Diagnostic] = []
        self.counts = {Severity.ERROR: 0, Severity.WARNING: 0}
        self.failed = False
        """Whether an error was found."""

    def add(self, line: int, col: int, severity: Severity, code: Code, message: str) -> None:
        """Record one problem; `message` quotes the file only through `quote` (or `visible`)."""
        self.failed = self.failed or severity >= Severity.ERROR
        self.counts[severity] += 1
        if self.counts[severity] <= MAX_PROBLEMS:
            self.listed.append(Diagnostic(self.file, line, col, severity, code, message, None, code.printed_name))

    def error(self, line: int, col: int, message: str) -> None:
        self.add(line, col, Severity.ERROR, Code.INPUT_SYNTAX, message)

    def warn(self, line: int, col: int, message: str) -> None:
        self.add(line, col, Severity.WARNING, Code.INPUT_VALUE, message)

    @property
    def found(self) -> list[Diagnostic]:
        """The problems listed, and for each severity past MAX_PROBLEMS one more counting the rest
        (at the last one listed)."""
        out = list(self.listed)
        for severity, code in ((Severity.ERROR, Code.INPUT_SYNTAX), (Severity.WARNING, Code.INPUT_VALUE)):
            unlisted = self.counts[severity] - MAX_PROBLEMS
            if unlisted > 0:
                last = next(d for d in reversed(self.listed) if d.severity == severity)
                out.append(Diagnostic(self.file, last.line, last.col, severity, code,
                                      f"more than {MAX_PROBLEMS} {severity.label}s: {unlisted} more are not listed", None,
                                      code.printed_name))
        return out


# ------------------------------------------------------------------ lines

_PREFIX = re.compile(r"[ \t]*(?:\[([0-9]{1,9},[0-9]{1,9})\]<std[a-z]{2,5}>:|([0-9]{1,7}):(?=[ \t]))")
"""A launcher's per-line rank prefix: Open MPI's `--tag-output` (`[1,0]<stdout>:`) and Slurm's
`srun --label` (`0: `)."""


def is_json(text: str) -> bool:
    """Whether `text` is JSON by its first character (`{` or `[`, not a tag-output prefix)."""
    first = _NOT_SPACE.search(text)
    if first is None:
        return False
    return first.group() == "{" or (first.group() == "[" and _PREFIX.match(text, first.start()) is None)


def split_prefix(line: str) -> tuple[str | None, str, int]:
    """(the rank its prefix names, or None; the rest of the line; the rest's offset in `line`)."""
    match = _PREFIX.match(line)
    if match is None:
        return None, line, 0
    return match.group(1) or match.group(2), line[match.end():], match.end()


def positions(text: str, offsets: list[int]) -> list[tuple[int, int]]:
    """The 1-based (line, column) of each of the ascending character `offsets` of `text`, in one
    pass over the text (linear, whatever the number of offsets)."""
    out: list[tuple[int, int]] = []
    line, start, last = 1, 0, 0
    for offset in offsets:
        line += text.count("\n", last, offset)
        newline = text.rfind("\n", last, offset)
        if newline >= 0:
            start = newline + 1
        out.append((line, offset - start + 1))
        last = offset
    return out


# ------------------------------------------------------------------ JSON

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+"?|[\[\]{}:,]', re.DOTALL)
_NOT_SPACE = re.compile(r"\S")


def load_json(text: str, problems: Problems) -> object:
    """The JSON document `text`, or None after an I101 at the first place past a bound
    (`jsonbound`) or where it stops being JSON. NaN and Infinity are read as the non-finite
    floats they are, for the value checks to refuse where they are used."""
    try:
        jsonbound.check(text)
    except jsonbound.BoundError as exc:
        problems.error(*jsonbound.line_col(text, exc.offset), f"JSON not read: {exc.message}")
        return None
    try:
        return json.loads(text, parse_constant=lambda name: float(name.replace("Infinity", "inf")))
    except json.JSONDecodeError as exc:
        problems.error(exc.lineno, exc.colno, f"not valid JSON: {exc.msg}")
        return None


def item_offsets(text: str, path: tuple[str, ...]) -> list[int]:
    """The offsets of the items of the array under the object keys `path` from the top (`()`:
    the top-level array), in order: where each item `json.loads` gives is in the text. One linear
    scan of strings, brackets and separators; `text` has passed `load_json` (it is JSON, nested
    at most `jsonbound.MAX_DEPTH` deep, so each step compares at most that many keys)."""
    target: list[str | None] = [None, *path]
    opened: list[str] = []
    under: list[str | None] = []
    key: str | None = None
    after_colon = False
    starts: list[int] = []
    for match in _TOKEN.finditer(text):
        first = match.group()[0]
        if first == '"':
            if opened and opened[-1] == "{" and not after_colon:
                key = match.group()[1:-1]
            after_colon = False
        elif first == ":":
            after_colon = True
        elif first == ",":
            after_colon = False
            if opened[-1] == "[" and under == target:
                starts.append(match.end())
        elif first in "[{":
            under.append(key if opened and opened[-1] == "{" else None)
            opened.append(first)
            key, after_colon = None, False
            if first == "[" and under == target:
                starts.append(match.end())
        else:
            opened.pop()
            under.pop()
            after_colon = False
    found = []
    for start in starts:
        item = _NOT_SPACE.search(text, start)
        if item is not None and item.group() != "]":
            found.append(item.start())
    return found
