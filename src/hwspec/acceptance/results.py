"""Benchmark results as typed records: what nccl-tests, rccl-tests and nvbandwidth printed, read
from the files people save (terminal logs with launcher prefixes, READMEs with prose and shell
commands around the output, cut or retyped tables) or from their JSON.

`read_result(path)` reads one file: a regular file of at most `MAX_INPUT_BYTES` (32 MiB, its size
checked before it is read), decoded as UTF-8 (or UTF-16 with its byte-order mark), its kind found
from its content (`sniff`), never from its name. It never raises on bad input: every problem is
a `Diagnostic` in `Results.problems`, located at file:line:col:

* I100 (error): the file cannot be read, or is larger than 32 MiB;
* I101 (error): no run could be read (not a benchmark output hwspec reads), or a run is broken
  (rows of two outputs interleaved, a table header with no rows, a run that stops before its
  table, JSON past a bound, an nvbandwidth testcase that reports an error or has no results); a
  broken run is left out of `Results.runs`, whole;
* I103 (warning): a row or value left out (a number past its bound, a row cut short, a device
  line not understood), or undecodable bytes read as U+FFFD; the rest of the run still reads.

Every number kept is finite, not negative and bounded (`hwspec.acceptance.values`: sizes up to
2^50 bytes, bandwidths up to 10^6 GB/s, times up to 10^12 us, ranks below 2^20, at most 32
characters of text converted). Text kept from a file (host and device names, labels, versions,
settings) is as the file has it: show it through `hwspec.text.visible`. Every reader is linear in
time and memory in its input.
"""

from __future__ import annotations

import importlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from hwspec.acceptance import values
from hwspec.diagnostics import Code, Diagnostic, Severity, display_path, os_reason

MAX_INPUT_BYTES = 32 * 1024 * 1024
"""The largest result file read (as for the live inputs, `hwspec.live.observed.MAX_INPUT_BYTES`):
a log of nccl-tests over every size and every rank's device line is far below it."""

SNIFF_BYTES = 64 * 1024
"""How much of a file `sniff` looks at."""


@dataclass(frozen=True, slots=True)
class Row:
    """One size of a collective run: the values of one line of the table (or one JSON result),
    as printed. Times are microseconds; bandwidths GB/s (10^9 bytes/s); None where the program
    printed `N/A` or the table has no such column."""

    bytes: int
    """The table's size column, as printed: `count * typesize` for all_reduce, times the rank
    count for all_gather, reduce_scatter and alltoall (nccl-tests' `GetBw`); never recomputed."""
    line: int
    col: int
    """Where the row is (1-based) in the file: the size value's column."""
    time_us: float | None
    algbw_gbps: float | None
    busbw_gbps: float | None
    """Out-of-place time, algbw and busbw."""
    in_place_busbw_gbps: float | None
    wrong: int | None
    """Wrong elements, out-of-place plus in-place, of the halves that counted them (a `#wrong`
    column); None when neither did (`N/A`) or the table has no such column (older versions'
    `error` column holds a largest difference, not a count: it is not read)."""
    label: str | None = None
    """An extra leading column's value (a node count an author added), else None."""


@dataclass(frozen=True, slots=True)
class RankDevice:
    """One `#  Rank ...` line (or JSON device): which GPU a rank ran on. `bus_id` is as printed
    (`0000:cc:00`, `0x0f`), None when the line has none; `name` is empty when the line ends
    after the bus id."""

    rank: int
    host: str
    device: int
    bus_id: str | None
    name: str
    line: int


@dataclass(frozen=True, slots=True)
class CollectiveRun:
    """One run of an nccl-tests or rccl-tests program: one table (or one JSON document), or one
    part of it. A table whose rows restart at its first size (`-N` cycles) or change data type,
    operation or root (`-d all`, `-o all`) is several runs, one per series of rising sizes."""

    file: str
    line: int
    """Where the run starts: its first header line (`# Collective test starting`, `# nThread`,
    ...), else its table header, else its first row."""
    tool: str
    """"nccl-tests" or "rccl-tests": from the run's own lines (an `RCCL version` line, AMD
    devices), else from the whole file (`sniff`)."""
    collective: str | None
    """nccl-tests' name without `_perf` (all_reduce, all_gather, reduce_scatter, alltoall,
    sendrecv, broadcast, reduce, gather, scatter, hypercube): from `# Collective test starting:
    X_perf`, else the run's `# Collective test concluded: X_perf`, else the nearest `X_perf`
    program named before the run (a command line); None when the file does not say."""
    rows: tuple[Row, ...]
    devices: tuple[RankDevice, ...]
    threads: int | None
    gpus_per_thread: int | None
    """From `# nThread N nGpus M`."""
    version: str | None
    """The NCCL or RCCL library version (`2.28.7`), from its version line (else nccl-tests'
    `nccl-library=` code); the whole line in `version_text`."""
    version_text: str | None
    env: dict[str, str]
    """NCCL_* and RCCL_* settings the saved text states before the run (`-x NCCL_ALGO=Ring`,
    `export NCCL_PROTO=Simple`, `NCCL_ALGO=NVLSTree ...`, NCCL's own `NCCL_X set by environment
    to V`), quotes removed; the last one before the run wins."""
    label_header: str | None
    """The extra leading column's header word (`p4dn`), else None."""
    why_unknown: str | None = None
    """Why `collective` is None."""
    data_type: str | None = None
    redop: str | None = None
    """The rows' `type` and `redop` columns (`float`, `sum`), None without such a column."""


@dataclass(frozen=True, slots=True)
class CopyRun:
    """One nvbandwidth testcase: its matrix as printed (rows by the title's row kind, columns by
    its column kind) and its SUM line. A file of SUM lines only (`nvbandwidth | grep SUM`) gives
    runs with an empty matrix."""

    file: str
    line: int
    testcase: str
    matrix: tuple[tuple[float | None, ...], ...]
    """In `unit`; None for `N/A`; () when only a SUM line was saved, or the matrix was cut."""
    row_kind: str | None
    column_kind: str | None
    """"CPU" or "GPU", from the matrix title (`CPU(row) -> GPU(column)`); None without one."""
    sum_gbps: float | None
    """The SUM line's value for a bandwidth testcase (GB/s)."""
    version: str | None
    """nvbandwidth's version (`v0.10.0`)."""
    unit: str = "GB/s"
    """The matrix's unit: "GB/s", or "ns" for the latency testcases (`*_latency_*`)."""
    sum_ns: float | None = None
    """The SUM line's value for a latency testcase (ns); then `sum_gbps` is None."""


Run = CollectiveRun | CopyRun


@dataclass
class Results:
    """What one file holds: its runs in file order, and every problem found reading it (sorted
    by line and column)."""

    runs: list[Run] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether an error-level problem was found (I100, I101)."""
        return any(d.severity >= Severity.ERROR for d in self.problems)


# ------------------------------------------------------------------ which program

_NVBANDWIDTH = re.compile(r"nvbandwidth Version|^[ \t]*(?:\S+:[ \t])?(?:Running [a-z0-9_]+\.|SUM [a-z0-9_]+[ \t])|(?:CPU|GPU)\(row\)",
                          re.MULTILINE)
_COLLECTIVE = re.compile(r"(?<![A-Za-z0-9_])(?:busbw|nThread|Collective test|Avg bus bandwidth|Out of bounds values|"
                         r"[NR]CCL version|[a-z_]+_perf|nccl-tests|rccl-tests)(?![A-Za-z0-9_])")
_RCCL_VERSION = re.compile(r"RCCL version|rccl-tests: Version")
_NCCL_VERSION = re.compile(r"NCCL version [0-9]+\.[0-9]+\.[0-9]+\+cuda|nccl-tests version")
_RCCL_HINT = re.compile(r"rccl|AMD Instinct|AMD Radeon", re.IGNORECASE)


def _head(data: bytes) -> str:
    """The first SNIFF_BYTES of `data` as text (a bad byte as U+FFFD)."""
    return decode(data[:SNIFF_BYTES])[0]


def kinds(head: str) -> list[str]:
    """The kinds of output `head` (the start of a file's text) holds, the main one first."""
    if values.is_json(head):
        if '"nvbandwidth"' in head:
            return ["nvbandwidth"]
        if '"busBw"' in head:
            return ["rccl-tests"]
        if '"bus_bw"' in head or '"results"' in head:
            return [_collective_tool(head, json=True)]
        return []
    found = []
    if _COLLECTIVE.search(head):
        found.append(_collective_tool(head, json=False))
    if _NVBANDWIDTH.search(head):
        found.append("nvbandwidth")
    return found


def _collective_tool(head: str, json: bool) -> str:
    """nccl-tests or rccl-tests, by the strongest evidence in `head`: the devices' vendor, then
    the version lines, then any mention of RCCL or AMD GPUs (or rccl-tests' `Errors with
    asterisks` line under a `#wrong` table, which nccl-tests stopped printing with `#wrong`)."""
    if json:
        return "rccl-tests" if _RCCL_HINT.search(head) else "nccl-tests"
    vendors = {vendor for line in head.split("\n") if "Rank" in line for vendor in ("] AMD ", "] NVIDIA ") if vendor in line}
    if "] AMD " in vendors:
        return "rccl-tests"
    if vendors:
        return "nccl-tests"
    if _RCCL_VERSION.search(head):
        return "rccl-tests"
    if _NCCL_VERSION.search(head):
        return "nccl-tests"
    if _RCCL_HINT.search(head) or ("Errors with asterisks" in head and "#wrong" in head):
        return "rccl-tests"
    return "nccl-tests"


def sniff(data: bytes) -> str | None:
    """"nccl-tests", "rccl-tests" or "nvbandwidth" by the content of the first 64 KiB of `data`
    (its text, or its JSON's keys), never by the file's name; None when it is none of them. A
    file holding output of both kinds (an acceptance sheet) is read by both readers; this is
    the one whose output comes first in the checks."""
    found = kinds(_head(data))
    return found[0] if found else None


# ------------------------------------------------------------------ reading

NOT_READ = ("not a benchmark output hwspec reads: expected nccl-tests or rccl-tests output (its '#  size  count  type  redop  root  "
            "time  algbw  busbw  #wrong' table, or its JSON), or nvbandwidth output (its 'Running <testcase>.' matrices, its "
            "'SUM <testcase> <GB/s>' lines, or its JSON)")
"""The I101 message for a file none of the readers recognizes."""


def read_result(path: Path) -> Results:
    """Read one result file (see the module's docstring); all problems collected, never raises
    on bad input."""
    file = display_path(path)
    data = _read_regular(Path(path), file)
    if isinstance(data, Diagnostic):
        return Results([], [data])
    return read_bytes(data, file)


def read_bytes(data: bytes, file: str) -> Results:
    """Read the bytes of one result file, named `file` in problems (read_result after the file
    is read). Refuses more than MAX_INPUT_BYTES."""
    if len(data) > MAX_INPUT_BYTES:
        return Results([], [_too_large(file, len(data))])
    head = _head(data)
    found = kinds(head)
    if not found:
        return Results([], [_not_read(file, data)])
    text, bad = decode(data)
    results = _parse(text, file, found)
    if bad is not None:
        line, col, byte = bad
        encoding = "UTF-16" if data.startswith(_BOMS[1][0]) or data.startswith(_BOMS[2][0]) else "UTF-8"
        message = f"byte 0x{byte:02x} is not {encoding}: it and the undecodable bytes after it are read as U+FFFD"
        results.problems.append(Diagnostic(file, line, col, Severity.WARNING, Code.INPUT_VALUE, message, None,
                                           Code.INPUT_VALUE.printed_name))
        results.problems.sort(key=lambda d: (d.line, d.col))
    return results


def parse_text(text: str, file: str) -> Results:
    """Read `text` as a result file named `file` (what read_result does once the file is
    decoded). Refuses more than MAX_INPUT_BYTES characters."""
    if len(text) > MAX_INPUT_BYTES:
        return Results([], [_too_large(file, len(text))])
    found = kinds(text[:SNIFF_BYTES])
    if not found:
        return Results([], [_not_read(file, text.encode("utf-8", "surrogatepass"))])
    return _parse(text, file, found)


def _parse(text: str, file: str, found: list[str]) -> Results:
    """Run the reader of each kind in `found` over `text`; I101 when none reads a run and none
    said why."""
    results = Results()
    for kind in found:
        module = importlib.import_module("hwspec.acceptance.nvbandwidth" if kind == "nvbandwidth" else "hwspec.acceptance.nccl_tests")
        runs, problems = module.parse(text, file, kind)
        results.runs.extend(runs)
        results.problems.extend(problems)
    results.runs.sort(key=lambda run: run.line)
    if not results.runs and not results.failed:
        results.problems.append(Diagnostic(file, 1, 1, Severity.ERROR, Code.INPUT_SYNTAX,
                                           f"not a benchmark output hwspec reads: no {' or '.join(found)} result found in it",
                                           None, Code.INPUT_SYNTAX.printed_name))
    results.problems.sort(key=lambda d: (d.line, d.col))
    return results


_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def decode(data: bytes) -> tuple[str, tuple[int, int, int] | None]:
    """`data` as text: UTF-8, or UTF-16 after its byte-order mark (PowerShell's `>`), a byte-order
    mark dropped; undecodable bytes as U+FFFD. With it, None or the (line, column, value) of the
    first undecodable byte."""
    encoding, skip = "utf-8", 0
    for mark, name in _BOMS:
        if data.startswith(mark):
            encoding, skip = name, len(mark)
            break
    body = data[skip:]
    try:
        return body.decode(encoding), None
    except UnicodeDecodeError as exc:
        before = body[:exc.start].decode(encoding)
        line = before.count("\n") + 1
        col = len(before) - (before.rfind("\n") + 1) + 1
        return body.decode(encoding, "replace"), (line, col, body[exc.start])


def _not_read(file: str, data: bytes) -> Diagnostic:
    """I101 for a file none of the readers recognizes (`the file is empty` for one of blanks)."""
    message = "not a benchmark output hwspec reads: the file is empty" if not data.strip() else NOT_READ
    return Diagnostic(file, 1, 1, Severity.ERROR, Code.INPUT_SYNTAX, message, None, Code.INPUT_SYNTAX.printed_name)


def _too_large(file: str, size: int) -> Diagnostic:
    message = f"larger than {MAX_INPUT_BYTES // 2**20} MiB ({size} bytes or more): not a benchmark output hwspec reads"
    return Diagnostic(file, 0, 0, Severity.ERROR, Code.INPUT_UNREADABLE, message, None, Code.INPUT_UNREADABLE.printed_name)


def _read_regular(path: Path, file: str) -> bytes | Diagnostic:
    """The bytes of `path`, or the I100 saying why not: not a regular file (a FIFO or device is
    refused before it is read: reading one blocks or never ends), unreadable, or larger than
    MAX_INPUT_BYTES (by its size before it is read, and by what a read returns)."""
    def refuse(message: str) -> Diagnostic:
        return Diagnostic(file, 0, 0, Severity.ERROR, Code.INPUT_UNREADABLE, message, None, Code.INPUT_UNREADABLE.printed_name)

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return refuse("cannot read: not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as stream:
            info = os.fstat(stream.fileno())
            if not stat.S_ISREG(info.st_mode):
                return refuse("cannot read: not a regular file")
            if info.st_size > MAX_INPUT_BYTES:
                return _too_large(file, info.st_size)
            data = stream.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        return refuse(f"cannot read: {os_reason(exc) if isinstance(exc, OSError) else 'the path holds a NUL character'}")
    if len(data) > MAX_INPUT_BYTES:
        return _too_large(file, len(data))
    return data


__all__ = ["CollectiveRun", "CopyRun", "RankDevice", "Results", "Row", "Run", "parse_text", "read_bytes", "read_result", "sniff"]
