"""nccl-tests and rccl-tests output as people save it, and the JSON both programs write.

Text is read in one pass over its lines; a launcher's rank prefix (`0: `, `[1,0]<stdout>:`) is
set aside first. The lines of a run's preamble (`# Collective test starting`, `# nThread`,
`# Using devices`, `#  Rank ...`, `NCCL version` / `RCCL version`, `rccl-tests: Version`) gather
into a `_Preamble`. A table header (the line whose words hold `size` and `busbw`, with `#` or
without) opens a `_Table` whose columns are found by name: the first `time`, `algbw`, `busbw`
and `#wrong` are out-of-place, the second in-place; `root` may be missing, `error` may stand for
`#wrong`, and words before `size` are a label column an author added. Rows (lines whose size and
count are numbers) fill the table until a footer (`# Out of bounds values`, `# Avg bus
bandwidth`, `# Collective test concluded`) or the next run's preamble closes it; prose, shell
commands and NCCL's log lines in between are passed over. Rows with no header above them are
read only when they have nccl-tests' 13 default columns exactly (what an author's grep keeps).

Rows of one table are checked, never silently merged: a row must have the header's number of
columns (a row cut short is left out, with a warning, and so is a whole row the file ends in with
no line break unless its last value is `0` or `N/A`), must come from the table's rank prefix,
and must rise in size within its series (same type, operation and root; size 0 may repeat). A
table whose rows restart at the series' first size is the next `-N` cycle, and one whose type,
operation or root changes the next `-d all`/`-o all` series: each is a run of its own. Any other
order (a size that falls or repeats, a series coming back) is two outputs interleaved: the
table is left out whole, with an I101 at the row. In a table with a label column, sizes rise
per label and the table is one run.

Every step is linear in the line it reads: the expressions have no nested repetition, and the
per-table state (the series' first sizes, the label's last sizes) is looked up in dicts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwspec.acceptance import values
from hwspec.acceptance.results import CollectiveRun, RankDevice, Row
from hwspec.acceptance.values import BadValue, Problems, quote
from hwspec.diagnostics import Diagnostic

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast", "reduce", "gather", "scatter",
               "hypercube")
"""The tests read, by nccl-tests' program name without `_perf`."""

DEFAULT_HEADER = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
"""nccl-tests' columns: how rows with no header above them are read."""

_PROGRAM = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(COLLECTIVES) + r")_perf(?:_mpi)?(?![A-Za-z0-9_])")
_TEST_LINE = re.compile(r"Collective test (starting|concluded):\s*(\S*)")
_NTHREAD = re.compile(r"nThread:?\s+([0-9]{1,9})\s+nGpus:?\s+([0-9]{1,9})")
_RANK = re.compile(r"Rank\s+([0-9]{1,9})\s+(?:Group\s+[0-9]{1,9}\s+)?Pid\s+[0-9]{1,12}\s+on\s+(\S+)\s+"
                   r"device\s+([0-9]{1,9})(?:\s+\[([^\]]*)\])?\s*(.*)")
_VERSION = re.compile(r"(?<![A-Za-z0-9_])([NR]CCL) version\s*:?\s*([0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4})\S*")
_LIBRARY = re.compile(r"nccl-library=([0-9]{1,9})")
_ENV = re.compile(r"(?<![A-Za-z0-9_$])((?:NCCL|RCCL)_[A-Z0-9_]{1,64})=(\"[^\"]*\"|'[^']*'|[^\s\"']*)")
_SET_BY_ENV = re.compile(r"(?<![A-Za-z0-9_])((?:NCCL|RCCL)_[A-Z0-9_]{1,64}) set by environment to (\S+)")
_WORD = re.compile(r"\S+")
_WHOLE = re.compile(r"[0-9]+")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
_ROOT = re.compile(r"-?[0-9]{1,10}")
_BUS_ID = re.compile(r"[0-9A-Fa-fx:.]{1,32}")
_FOOTERS = ("Out of bounds values", "Avg bus bandwidth", "Errors with asterisks")
_TIME_WORDS = ("time", "cputime")
_WRONG_WORDS = ("#wrong", "wrong", "#errors", "errors")

_UNNAMED_TEXT = "the file does not say which test ran: no '# Collective test starting' line, and no *_perf program named before the table"
_UNNAMED_JSON = "the JSON does not say which test ran: its args name no *_perf program"

Key = tuple[str | None, str | None, str | None]
"""A row's series: its type, operation and root columns."""


@dataclass(frozen=True)
class _Layout:
    """Where a table's values are among a row's whitespace-separated fields."""

    width: int
    labels: int
    label_header: str | None
    size: int
    type: int | None
    redop: int | None
    root: int | None
    time: tuple[int, ...]
    algbw: tuple[int, ...]
    busbw: tuple[int, ...]
    wrong: tuple[int, ...]
    """The `#wrong` columns (counts); an `error` column (a largest difference) is not read."""


def layout_of(words: list[str] | tuple[str, ...]) -> _Layout:
    """The layout a header's `words` give (they hold `size`): each word is one field, but
    `timestamp`, which nccl-tests prints as a date and a time."""
    found: dict[str, list[int]] = {}
    field_at = 0
    for word in words:
        name = "time" if word in _TIME_WORDS else "wrong" if word in _WRONG_WORDS else word
        found.setdefault(name, []).append(field_at)
        field_at += 2 if word == "timestamp" else 1
    size = found["size"][0]
    label_header = " ".join(words[:size])[:values.MAX_TEXT_CHARS] or None

    def first(name: str) -> int | None:
        return found[name][0] if name in found else None

    return _Layout(field_at, size, label_header, size, first("type"), first("redop"), first("root"),
                   tuple(found.get("time", ())), tuple(found.get("algbw", ())), tuple(found.get("busbw", ())),
                   tuple(found.get("wrong", ())))


DEFAULT_LAYOUT = layout_of(DEFAULT_HEADER)


@dataclass
class _Preamble:
    """What a run's lines before its table say."""

    line: int | None = None
    program: str | None = None
    """The program `# Collective test starting` names, as printed."""
    threads: int | None = None
    gpus: int | None = None
    devices: list[RankDevice] = field(default_factory=list)
    version: str | None = None
    version_text: str | None = None
    library: tuple[str, str] | None = None
    """(version, text) from nccl-tests' `nccl-library=` code: the version when no line says it."""
    rccl: bool = False
    """An `rccl-tests: Version` line."""

    def touch(self, line: int) -> None:
        if self.line is None:
            self.line = line


@dataclass
class _Series:
    """Rows of rising size of one type, operation and root: one run."""

    key: Key
    line: int
    rows: list[Row]


@dataclass
class _Table:
    """One table (or JSON document) being read: its rows sorted into series."""

    line: int
    col: int
    layout: _Layout | None
    """None for JSON."""
    preamble: _Preamble
    start: int | None
    """Where its run starts when it is the first table of its preamble, else None."""
    program: str | None
    """The last `*_perf` program named before the table."""
    env: dict[str, str]
    prefix: str | None
    header_text: str
    """How messages name the table's columns: `the table header at line 12`."""
    series: list[_Series] = field(default_factory=list)
    firsts: dict[Key, int] = field(default_factory=dict)
    last_sizes: dict[tuple[str | None, Key], int] = field(default_factory=dict)
    previous: Row | None = None
    broken: bool = False
    concluded: str | None = None
    """The program its `# Collective test concluded` line names."""
    unnamed: str = ""
    """Why its test is unknown when nothing names it (`_UNNAMED_TEXT` for text)."""

    def place(self, row: Row, key: Key, problems: Problems) -> None:
        """Add `row` to its series, or mark the table broken (I101) when its size is out of order."""
        if self.layout is not None and self.layout.labels:
            self._place_labelled(row, key, problems)
            return
        current = self.series[-1] if self.series else None
        if current is None or key != current.key:
            first = self.firsts.setdefault(key, row.bytes)
            if first != row.bytes:
                self._out_of_order(row, problems)
                return
            self.series.append(_Series(key, row.line, [row]))
        else:
            previous = current.rows[-1].bytes
            if row.bytes > previous or row.bytes == previous == 0:
                current.rows.append(row)
            elif row.bytes == current.rows[0].bytes:
                self.series.append(_Series(key, row.line, [row]))  # the next cycle (-N) of the same sizes
            else:
                self._out_of_order(row, problems)
                return
        self.previous = row

    def _place_labelled(self, row: Row, key: Key, problems: Problems) -> None:
        """A table with a label column is one run; its sizes rise per label and series."""
        last = self.last_sizes.get((row.label, key))
        if last is not None and not (row.bytes > last or row.bytes == last == 0):
            self._out_of_order(row, problems)
            return
        self.last_sizes[(row.label, key)] = row.bytes
        if not self.series:
            self.series.append(_Series(key, row.line, []))
        self.series[0].rows.append(row)
        self.previous = row

    def _out_of_order(self, row: Row, problems: Problems) -> None:
        assert self.previous is not None
        self.interleaved(row.line, row.col, f"rows out of order: size {row.bytes} after {self.previous.bytes} at line "
                         f"{self.previous.line} (two outputs interleaved?)", problems)

    def interleaved(self, line: int, col: int, why: str, problems: Problems) -> None:
        """Leave the whole table out: its rows mix outputs."""
        problems.error(line, col, f"{why}; the table from line {self.line} is left out")
        self.broken = True


def parse(text: str, file: str, kind: str) -> tuple[list[CollectiveRun], list[Diagnostic]]:
    """The runs of nccl-tests or rccl-tests output `text` (JSON when it starts with `{` or `[`),
    and the problems found; `kind` is the file's tool as `results.sniff` found it, the runs' tool
    where their own lines do not say."""
    problems = Problems(file)
    if values.is_json(text):
        runs = _JsonReader(text, file, kind, problems).read()
    else:
        runs = _TextReader(file, kind, problems).read(text)
    return runs, problems.found


# ------------------------------------------------------------------ from tables to runs


def runs_of(tables: list[_Table], file: str, default_tool: str, problems: Problems) -> list[CollectiveRun]:
    """The runs of the tables read, in file order; at most MAX_RUNS."""
    runs: list[CollectiveRun] = []
    for table in tables:
        if table.broken:
            continue
        for index, series in enumerate(table.series):
            if len(runs) == values.MAX_RUNS:
                problems.error(series.line, 1, f"more than {values.MAX_RUNS} runs in one file: the runs from here on are not read")
                return runs
            if index:
                start = series.line  # a later series starts at its first row
            else:
                start = table.line if table.start is None else min(table.start, table.line)
            runs.append(_run(table, series, start, file, default_tool))
    return runs


def _run(table: _Table, series: _Series, start: int, file: str, default_tool: str) -> CollectiveRun:
    preamble = table.preamble
    collective, why = _collective(table)
    version, version_text = preamble.version, preamble.version_text
    if version is None and preamble.library is not None:
        version, version_text = preamble.library
    layout = table.layout
    return CollectiveRun(file, start, _tool(preamble, default_tool), collective, tuple(series.rows), tuple(preamble.devices),
                         preamble.threads, preamble.gpus, version, version_text, dict(table.env),
                         layout.label_header if layout is not None else None, why, series.key[0], series.key[1])


def _collective(table: _Table) -> tuple[str | None, str | None]:
    """The table's test, or None and why: its preamble's `Collective test starting` line, else
    its `concluded` line, else the last program named before it."""
    named = table.preamble.program or table.concluded
    if named:
        name = program_name(named)
        if name is None:
            return None, f"the run's test {quote(named)} is not one hwspec reads"
        return name, None
    if table.program is not None:
        return table.program, None
    return None, table.unnamed or _UNNAMED_TEXT


def program_name(named: str) -> str | None:
    """`all_reduce` for `all_reduce_perf`, `./build/all_reduce_perf` or `all_reduce_perf_mpi`;
    None for a program that is not one of COLLECTIVES."""
    base = named.rsplit("/", 1)[-1]
    for suffix in ("_perf_mpi", "_perf"):
        if base.endswith(suffix):
            base = base[:-len(suffix)]
            break
    else:
        return None
    return base if base in COLLECTIVES else None


def _tool(preamble: _Preamble, default: str) -> str:
    """rccl-tests or nccl-tests by the run's own lines (devices, version lines), else `default`."""
    vendors = {device.name.split(" ", 1)[0] for device in preamble.devices}
    if "AMD" in vendors:
        return "rccl-tests"
    if "NVIDIA" in vendors:
        return "nccl-tests"
    text = preamble.version_text or ""
    if preamble.rccl or text.startswith("RCCL"):
        return "rccl-tests"
    if text.startswith("NCCL"):
        return "nccl-tests"
    return default


def library_version(code: int) -> str:
    """NCCL's version code as text: 22807 -> 2.28.7 (since 2.9: major*10000 + minor*100 + patch),
    2804 -> 2.8.4 (before: major*1000 + minor*100 + patch)."""
    major, rest = divmod(code, 10000 if code >= 10000 else 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def _time(value: object, what: str) -> float | None:
    """A time (us), None for N/A."""
    return None if values.optional(value) else values.number(value, what, values.MAX_TIME_US, "us")


def _bandwidth(value: object, what: str) -> float | None:
    """A bandwidth (GB/s), None for N/A."""
    return None if values.optional(value) else values.number(value, what, values.MAX_GBPS, "GB/s")


def _count(value: object, what: str) -> int | None:
    """A count of wrong elements, None for N/A."""
    return None if values.optional(value) else values.whole(value, what, values.MAX_WRONG, "elements")


def _key(data_type: object, redop: object, root: object) -> Key:
    """A row's series key, its names checked (None: no such column)."""
    for value, what, pattern, kind in ((data_type, "type", _NAME, "a data type name"), (redop, "redop", _NAME, "an operation name"),
                                       (root, "root", _ROOT, "a rank")):
        if value is not None and not (isinstance(value, str) and pattern.fullmatch(value.strip())):
            raise BadValue(f"{what} {values.describe(value)} is not {kind}")
    return (data_type.strip() if isinstance(data_type, str) else None, redop.strip() if isinstance(redop, str) else None,
            root.strip() if isinstance(root, str) else None)


_NOT_SETTINGS = re.compile(r"[A-Z0-9_]*_(?:DIR|HOME|ROOT|PATH)")
"""Names of build and install locations a script sets (`RCCL_INSTALL_DIR=...`): not settings the
libraries read."""


def _env(env: dict[str, str], name: str, value: str, where: tuple[int, int], problems: Problems) -> bool:
    """Set `name` in `env` within the bounds (a warning when past one); whether it changed."""
    if _NOT_SETTINGS.fullmatch(name):
        return False
    if len(value) > values.MAX_ENV_VALUE_CHARS:
        problems.warn(*where, f"{name} is set to a value of {len(value)} characters, more than the {values.MAX_ENV_VALUE_CHARS} kept: "
                              f"left out")
        return False
    if name not in env and len(env) >= values.MAX_ENV_NAMES:
        problems.warn(*where, f"more than {values.MAX_ENV_NAMES} NCCL_*/RCCL_* settings: {name} is left out")
        return False
    changed = env.get(name) != value
    env[name] = value
    return changed


# ------------------------------------------------------------------ text


_DIGITS = frozenset("0123456789")


def _numberish(word: str) -> bool:
    """Whether `word` starts like a number (a row's size or count, even a bad one)."""
    return word[0] in _DIGITS or (word[0] in "+-." and word[1:2] in _DIGITS and len(word) > 1) or word.lower() in ("nan", "-nan", "inf", "-inf")


def _default_row(words: list[str]) -> bool:
    """Whether `words` are a row of nccl-tests' default columns (read with no header above)."""
    return (len(words) == DEFAULT_LAYOUT.width and bool(_WHOLE.fullmatch(words[0])) and bool(_WHOLE.fullmatch(words[1]))
            and bool(_NAME.fullmatch(words[2]))
            and bool(_NAME.fullmatch(words[3])) and bool(_ROOT.fullmatch(words[4])))


class _TextReader:
    """One pass over the lines of a text output."""

    def __init__(self, file: str, tool: str, problems: Problems) -> None:
        self.file, self.tool, self.problems = file, tool, problems
        self.preamble = _Preamble()
        self.preamble_used = False
        """A table has taken `preamble`: the next preamble line starts a new one."""
        self.table: _Table | None = None
        """The open table."""
        self.last: _Table | None = None
        """The table a `Collective test concluded` line may name."""
        self.tables: list[_Table] = []
        self.env: dict[str, str] = {}
        self.env_copy: dict[str, str] | None = None
        self.program: str | None = None

    def read(self, text: str) -> list[CollectiveRun]:
        lines = text.split("\n")
        cut = not text.endswith("\n")
        for number, line in enumerate(lines, 1):
            self.line(number, line[:-1] if line.endswith("\r") else line, cut and number == len(lines))
        self.close()
        self.no_table()
        return runs_of(self.tables, self.file, self.tool, self.problems)

    def line(self, number: int, line: str, cut: bool) -> None:
        """Read one line; `cut`: it is the last, with no line break after it."""
        prefix, rest, offset = values.split_prefix(line)
        body = rest.strip()
        if not body:
            return
        col = offset + len(rest) - len(rest.lstrip()) + 1
        if "Collective test" not in body:
            self.settings(rest, number, offset)
        if body.startswith("#"):
            self.comment(body.lstrip("#").strip(), number, col, prefix)
            return
        version = _VERSION.search(body)
        if version is not None:
            self.version(version, number)
        elif body.startswith("rccl-tests: Version"):
            self.new_preamble(number)
            self.preamble.rccl = True
        else:
            words = body.split()
            if "size" in words and "busbw" in words:
                self.header(number, col, words, prefix)
            else:
                self.row(words, rest, offset, number, prefix, cut)

    def comment(self, body: str, number: int, col: int, prefix: str | None) -> None:
        """A line that starts with `#`: a preamble line, a header, a footer, or a remark."""
        test = _TEST_LINE.match(body)
        if test is not None:
            self.test_line(test.group(1), test.group(2)[:values.MAX_TEXT_CHARS], number)
        elif body.startswith(("nccl-tests version", "nThread", "Using devices", "Rank ")):
            self.new_preamble(number, starts_a_run=self.repeats(body))
            self.preamble_line(body, number)
        elif body.startswith(_FOOTERS):
            self.close()
        else:
            words = body.split()
            if "size" in words and "busbw" in words:
                self.header(number, col, words, prefix)

    def test_line(self, which: str, program: str, number: int) -> None:
        if which == "starting":
            self.new_preamble(number, starts_a_run=self.started())
            self.preamble.program = program
            return
        self.close()
        self.no_table()
        if self.last is not None and self.last.concluded is None:
            self.last.concluded = program
        self.preamble, self.preamble_used, self.last = _Preamble(), False, None

    def repeats(self, body: str) -> bool:
        """Whether the preamble line `body` is one the open preamble already has: it begins the
        next run's (the run before stopped with no table)."""
        if body.startswith("nccl-tests version"):
            return self.started() or self.preamble.library is not None
        return body.startswith("nThread") and self.preamble.threads is not None

    def started(self) -> bool:
        """Whether the preamble no table has taken yet shows a run began (a `Collective test
        starting` or `nThread` line)."""
        return not self.preamble_used and (self.preamble.program is not None or self.preamble.threads is not None)

    def no_table(self) -> None:
        """An I101 when a run began and no table took its preamble: the run stopped before its
        results, and is left out."""
        preamble = self.preamble
        if self.started():
            assert preamble.line is not None
            self.problems.error(preamble.line, 1, "a run starts here but no result table follows: left out")
            self.preamble = _Preamble()

    def preamble_line(self, body: str, number: int) -> None:
        preamble = self.preamble
        threads = _NTHREAD.match(body)
        if threads is not None:
            try:
                preamble.threads = values.whole(threads.group(1), "nThread", values.MAX_THREADS, "threads")
                preamble.gpus = values.whole(threads.group(2), "nGpus", values.MAX_THREADS, "GPUs")
            except BadValue as exc:
                self.problems.warn(number, 1, f"{exc.message}: left out")
        elif body.startswith("Rank "):
            self.device(body, number)
        elif body.startswith("nccl-tests version"):
            code = _LIBRARY.search(body)
            if code is not None:
                preamble.library = (library_version(int(code.group(1))), body[:values.MAX_TEXT_CHARS])

    def device(self, body: str, number: int) -> None:
        match = _RANK.match(body)
        if match is None:
            self.problems.warn(number, 1, f"a '#  Rank' line this reader does not understand: {quote(body)} is left out")
            return
        rank, host, device, bus, name = match.groups()
        try:
            found = RankDevice(values.whole(rank, "rank", values.MAX_RANK, "ranks"), values.text_value(host, "host name"),
                               values.whole(device, "device", values.MAX_DEVICE, "devices"), _bus_id(bus),
                               values.text_value(name.strip(), "device name"), number)
        except BadValue as exc:
            self.problems.warn(number, 1, f"{exc.message}: the device line is left out")
            return
        self.preamble.devices.append(found)

    def version(self, match: re.Match[str], number: int) -> None:
        """An NCCL/RCCL version line: the open table's when it has no rows yet (with parallel init
        NCCL prints it after the header), else the next run's."""
        table = self.table
        if table is not None and not table.series and not table.broken:
            preamble = table.preamble
        else:
            self.new_preamble(number)
            preamble = self.preamble
        preamble.version, preamble.version_text = match.group(2), match.group()[:values.MAX_TEXT_CHARS]

    def settings(self, rest: str, number: int, offset: int) -> None:
        """NCCL_*/RCCL_* settings and *_perf programs a line names."""
        if "CCL_" in rest:
            for match in _ENV.finditer(rest):
                value = match.group(2)
                if value[:1] in ("'", '"'):
                    value = value[1:-1]
                self.set(match.group(1), value, (number, offset + match.start() + 1))
            for match in _SET_BY_ENV.finditer(rest):
                self.set(match.group(1), match.group(2).rstrip("."), (number, offset + match.start() + 1))
        if "_perf" in rest:
            for match in _PROGRAM.finditer(rest):
                self.program = match.group(1)

    def set(self, name: str, value: str, where: tuple[int, int]) -> None:
        if _env(self.env, name, value, where, self.problems):
            self.env_copy = None

    def new_preamble(self, number: int, starts_a_run: bool = False) -> None:
        """A line of a run's preamble: it closes the open table, and starts a new preamble after
        one a table has taken (or, `starts_a_run`, after one that shows a run with no table)."""
        self.close()
        if starts_a_run:
            self.no_table()
        if self.preamble_used:
            self.preamble, self.preamble_used, self.last = _Preamble(), False, None
        self.preamble.touch(number)

    def header(self, number: int, col: int, words: list[str], prefix: str | None) -> None:
        """A table header: it opens a table, after closing the open one (an error when that one has
        no rows: two headers in a row are two outputs interleaved, or a run that printed nothing)."""
        table = self.table
        if table is not None and not table.series and not table.broken:
            self.problems.error(table.line, table.col, f"a table header with no rows under it before the next one at line {number} "
                                                       f"(two outputs interleaved?): its run is left out")
            table.broken = True
        self.open(number, col, layout_of(words), prefix)

    def open(self, number: int, col: int, layout: _Layout, prefix: str | None, header: bool = True) -> None:
        """Open a table at its header (or, `header` False, at a row of the default columns)."""
        self.close()
        if self.env_copy is None:
            self.env_copy = dict(self.env)
        start = None if self.preamble_used else self.preamble.line
        header_text = f"the table header at line {number}" if header else "nccl-tests' table"
        self.table = _Table(number, col, layout, self.preamble, start, self.program, self.env_copy, prefix, header_text)
        self.preamble_used = True
        self.last = self.table
        self.tables.append(self.table)

    def close(self) -> None:
        table, self.table = self.table, None
        if table is not None and not table.series and not table.broken:
            self.problems.error(table.line, table.col, "no result rows read under this table header: its run is left out")

    def row(self, words: list[str], rest: str, offset: int, number: int, prefix: str | None, cut: bool) -> None:
        """A line that may be a row of the open table (or of the default columns, with none open)."""
        table = self.table
        labels = table.layout.labels if table is not None and table.layout is not None else 0
        if len(words) <= labels or not _numberish(words[labels]):
            return
        if not (cut or (len(words) > labels + 1 and _numberish(words[labels + 1]))):
            return
        if table is None:
            if not _default_row(words):
                return
            self.open(number, offset + len(rest) - len(rest.lstrip()) + 1, DEFAULT_LAYOUT, prefix, header=False)
            table = self.table
            assert table is not None
        if table.broken:
            return
        assert table.layout is not None
        fields = [(offset + match.start() + 1, match.group()) for match in _WORD.finditer(rest)]
        size_col = fields[labels][0]
        if prefix != table.prefix:
            shown = quote(prefix) if prefix is not None else "none"
            header = quote(table.prefix) if table.prefix is not None else "none"
            table.interleaved(number, 1, f"a row with rank prefix {shown} in a table with rank prefix {header} (two ranks' outputs "
                                         f"interleaved)", self.problems)
            return
        width = table.layout.width
        if len(fields) != width:
            if cut and len(fields) < width:
                self.problems.warn(number, size_col, f"row cut short at the end of the file ({len(fields)} of {width} columns): "
                                                     f"left out")
            else:
                self.problems.warn(number, size_col, f"row has {len(fields)} columns, {table.header_text} has {width}: left out")
            return
        if cut and fields[-1][1] not in ("0", values.NOT_AVAILABLE):  # a count of 0 or N/A is whole; 477.4 may be 477.42 cut
            self.problems.warn(number, fields[-1][0], f"the file ends in this row with no line break: its last value "
                                                      f"{quote(fields[-1][1])} may be cut: row left out")
            return
        try:
            row, key = _text_row(fields, table.layout, number)
        except _BadCell as exc:
            self.problems.warn(number, exc.col, f"{exc.message}: row left out")
            return
        table.place(row, key, self.problems)


class _BadCell(BadValue):
    """A bad value of a row, at its column."""

    def __init__(self, message: str, col: int) -> None:
        super().__init__(message)
        self.col = col


def _text_row(fields: list[tuple[int, str]], layout: _Layout, line: int) -> tuple[Row, Key]:
    """A table row from its (column, text) fields; _BadCell at the first value it cannot keep."""
    at = fields[layout.size][0]

    def cell(index: int | None) -> str | None:
        nonlocal at
        if index is None:
            return None
        at = fields[index][0]
        return fields[index][1]

    try:
        size = values.whole(cell(layout.size), "size", values.MAX_BYTES, "bytes")
        time = _time(cell(layout.time[0]), "out-of-place time") if layout.time else None
        algbw = _bandwidth(cell(layout.algbw[0]), "out-of-place algbw") if layout.algbw else None
        busbw = _bandwidth(cell(layout.busbw[0]), "out-of-place busbw")
        in_place = _bandwidth(cell(layout.busbw[1]), "in-place busbw") if len(layout.busbw) > 1 else None
        counts = [_count(cell(index), what) for index, what in zip(layout.wrong[:2], ("out-of-place #wrong", "in-place #wrong"))]
        key = _key(cell(layout.type), cell(layout.redop), cell(layout.root))
    except BadValue as exc:
        raise _BadCell(exc.message, at) from None
    known = [count for count in counts if count is not None]
    label = " ".join(text for _, text in fields[:layout.labels])[:values.MAX_TEXT_CHARS] or None
    return Row(size, line, fields[layout.size][0], time, algbw, busbw, in_place, sum(known) if known else None, label), key


def _bus_id(text: str | None) -> str | None:
    if text is None:
        return None
    if not _BUS_ID.fullmatch(text):
        raise BadValue(f"bus id {quote(text)} is not a PCI bus id")
    return text


# ------------------------------------------------------------------ JSON

_SQUASHED = {name.replace("_", ""): name for name in COLLECTIVES}
"""rccl-tests' JSON names a test as its `testColl` does (`AllReduce`): squashed to lower case."""


class _JsonReader:
    """nccl-tests' JSON (`-J`/`--output_file x.json`, also rccl-tests'), or rccl-tests' own list
    of records (`-o x -F json`)."""

    def __init__(self, text: str, file: str, tool: str, problems: Problems) -> None:
        self.text, self.file, self.tool, self.problems = text, file, tool, problems

    def read(self) -> list[CollectiveRun]:
        data = values.load_json(self.text, self.problems)
        if isinstance(data, list):
            return self.records(data)
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            if not self.problems.failed:
                self.problems.error(1, 1, "not a benchmark output hwspec reads: JSON without nccl-tests' \"results\" list")
            return []
        preamble, program, env = self.preamble(data)
        start = values.positions(self.text, [len(self.text) - len(self.text.lstrip())])[0]
        table = _Table(start[0], start[1], None, preamble, start[0], program, env, None, "", unnamed=_UNNAMED_JSON)
        results: list[object] = data["results"]
        where = values.positions(self.text, values.item_offsets(self.text, ("results",)))
        for index, item in enumerate(results):
            line, col = where[index] if index < len(where) else start
            try:
                row, key = _json_row(item, line, col)
            except BadValue as exc:
                self.problems.warn(line, col, f"results[{index}]: {exc.message}: row left out")
                continue
            table.place(row, key, self.problems)
            if table.broken:
                break
        if not table.series and not table.broken:
            self.problems.error(table.line, table.col, "no result read from the JSON's \"results\" list: its run is left out")
        return runs_of([table], self.file, self.tool, self.problems)

    def preamble(self, data: dict[str, object]) -> tuple[_Preamble, str | None, dict[str, str]]:
        """The run's preamble, the program its args name, and its NCCL_*/RCCL_* environment."""
        preamble = _Preamble(line=None)
        config = data.get("config")
        config = config if isinstance(config, dict) else {}
        for key, what in (("nthreads", "threads"), ("ngpus", "gpus")):
            if config.get(key) is not None:
                try:
                    setattr(preamble, what, values.whole(config[key], f"config.{key}", values.MAX_THREADS, what))
                except BadValue as exc:
                    self.problems.warn(1, 1, f"{exc.message}: left out")
        self.devices(config.get("devices"), preamble)
        code = data.get("nccl_version")
        if code is not None:
            try:
                number = values.whole(code, "nccl_version", 10**7, "")
                preamble.version, preamble.version_text = library_version(number), f"nccl_version {number}"
            except BadValue as exc:
                self.problems.warn(1, 1, f"{exc.message}: left out")
        args = data.get("args")
        first = args[0] if isinstance(args, list) and args and isinstance(args[0], str) else None
        program = program_name(first[:values.MAX_TEXT_CHARS]) if first is not None else None
        if program is None and first is not None:
            preamble.program = first[:values.MAX_TEXT_CHARS]
        env: dict[str, str] = {}
        listed = data.get("env")
        for entry in listed if isinstance(listed, list) else []:
            if isinstance(entry, str) and entry.startswith(("NCCL_", "RCCL_")) and "=" in entry:
                name, value = entry.split("=", 1)
                if re.fullmatch(r"[A-Z0-9_]{1,70}", name):
                    _env(env, name, value, (1, 1), self.problems)
        return preamble, program, env

    def devices(self, listed: object, preamble: _Preamble) -> None:
        if not isinstance(listed, list):
            return
        where = values.positions(self.text, values.item_offsets(self.text, ("config", "devices")))
        for index, item in enumerate(listed):
            line, col = where[index] if index < len(where) else (1, 1)
            try:
                if not isinstance(item, dict):
                    raise BadValue(f"device {values.describe(item)} is not an object")
                hex_id = item.get("device_hex")
                preamble.devices.append(RankDevice(
                    values.whole(item.get("rank"), "rank", values.MAX_RANK, "ranks"),
                    values.text_value(item.get("hostname"), "hostname"),
                    values.whole(item.get("device"), "device", values.MAX_DEVICE, "devices"),
                    _bus_id(values.text_value(hex_id, "device_hex")) if hex_id is not None else None,
                    values.text_value(item.get("device_info", ""), "device_info").strip(), line))
            except BadValue as exc:
                self.problems.warn(line, col, f"config.devices[{index}]: {exc.message}: left out")

    def records(self, data: list[object]) -> list[CollectiveRun]:
        """rccl-tests' records: one per size and half (`inPlace` 0, then 1), in order; a table per
        cycle and test."""
        where = values.positions(self.text, values.item_offsets(self.text, ()))
        tables: list[_Table] = []
        groups: list[tuple[int | None, str]] = []
        pending: tuple[tuple[object, ...], Row, Key] | None = None
        for index, item in enumerate(data):
            line, col = where[index] if index < len(where) else (1, 1)
            try:
                group, half, row, key = _record(item, line, col)
            except BadValue as exc:
                self.problems.warn(line, col, f"[{index}]: {exc.message}: record left out")
                continue
            ident = (*group, row.bytes, key)
            if half == 1 and pending is not None and pending[0] == ident:
                pending = (ident, _with_in_place(pending[1], row), key)
                continue
            if pending is not None:
                tables[-1].place(pending[1], pending[2], self.problems)
            if not groups or groups[-1] != group:
                groups.append(group)
                tables.append(_record_table(group[1], line, col))
            pending = (ident, row, key)
        if pending is not None:
            tables[-1].place(pending[1], pending[2], self.problems)
        if not tables and not self.problems.failed:
            self.problems.error(1, 1, "no record read from rccl-tests' JSON list")
        return runs_of(tables, self.file, self.tool, self.problems)


def _record(item: object, line: int, col: int) -> tuple[tuple[int | None, str], int, Row, Key]:
    """((cycle, test), half, row, key) of one of rccl-tests' JSON records; BadValue at the first
    value it cannot keep."""
    if not isinstance(item, dict):
        raise BadValue(f"record {values.describe(item)} is not an object")
    half = item.get("inPlace")
    if half not in (0, 1) or isinstance(half, bool):
        raise BadValue(f"inPlace {values.describe(half)} is not 0 or 1")
    cycle = item.get("numCycle")
    group = (None if cycle is None else values.whole(cycle, "numCycle", 10**9, "cycles"), values.text_value(item.get("name"), "name"))
    size = values.whole(item.get("size"), "size", values.MAX_BYTES, "bytes")
    busbw = _bandwidth(item.get("busBw"), "busBw")
    wrong = _count(item.get("wrong"), "wrong")
    key = _key(item.get("type"), item.get("redop"), None)
    if half == 1:
        return group, 1, Row(size, line, col, None, None, None, busbw, wrong), key
    return group, 0, Row(size, line, col, _time(item.get("time"), "time"), _bandwidth(item.get("algBw"), "algBw"), busbw, None, wrong), key


def _with_in_place(out: Row, inside: Row) -> Row:
    """The out-of-place row `out` with the in-place half of the same size."""
    known = [count for count in (out.wrong, inside.wrong) if count is not None]
    return Row(out.bytes, out.line, out.col, out.time_us, out.algbw_gbps, out.busbw_gbps, inside.in_place_busbw_gbps,
               sum(known) if known else None)


def _record_table(name: str, line: int, col: int) -> _Table:
    """The table of one of rccl-tests' tests in its JSON list (named `AllReduce`, ...)."""
    preamble = _Preamble(line=line)
    program = _SQUASHED.get(re.sub(r"[^a-z]", "", name.lower()))
    if program is None:
        preamble.program = name
    return _Table(line, col, None, preamble, line, program, {}, None, "", unnamed=_UNNAMED_JSON)


def _json_row(item: object, line: int, col: int) -> tuple[Row, Key]:
    """A row from one of nccl-tests' JSON results; BadValue at the first value it cannot keep."""
    if not isinstance(item, dict):
        raise BadValue(f"result {values.describe(item)} is not an object")
    size = values.whole(item.get("size"), "size", values.MAX_BYTES, "bytes")
    halves: list[dict[str, object]] = []
    for name in ("out_of_place", "in_place"):
        half = item.get(name)
        if half is not None and not isinstance(half, dict):
            raise BadValue(f"{name} {values.describe(half)} is not an object")
        halves.append(half or {})
    out, inside = halves
    time = _time(out.get("time", out.get("cpu_time")), "out_of_place.time")
    known = [count for count in (_count(out.get("nwrong"), "out_of_place.nwrong"), _count(inside.get("nwrong"), "in_place.nwrong"))
             if count is not None]
    row = Row(size, line, col, time, _bandwidth(out.get("alg_bw"), "out_of_place.alg_bw"),
              _bandwidth(out.get("bus_bw"), "out_of_place.bus_bw"), _bandwidth(inside.get("bus_bw"), "in_place.bus_bw"),
              sum(known) if known else None)
    return row, _key(item.get("type"), item.get("redop"), item.get("root"))
