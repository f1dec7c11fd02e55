"""nvbandwidth output: its text (`Running <testcase>.`, a matrix title, the column numbers, one
line per row with `N/A` where nothing was measured, `SUM <testcase> <value>`), the same reduced
to its SUM lines (`nvbandwidth | grep SUM`), and its JSON (`-j`).

Text is read in one pass over its lines, a launcher's rank prefix set aside. A testcase runs from
its `Running` line to the next one (or the end); its matrix from the title to the first line that
is not one of its rows. A SUM line names its testcase: the open one's, else a run of its own
(SUM lines only). Matrix rows must be numbered 0, 1, 2, ... from the open testcase's rank prefix,
else the testcase is left out (I101: two outputs interleaved); a row with a value past its bound,
or with another number of values than the column numbers above it, leaves the matrix out (I103),
the testcase's SUM still read. The last line of a file with no line break after it may be cut:
a SUM line or matrix row there is left out (I103) unless its last value is `N/A`. A testcase
that reports an error, or has neither a matrix nor a SUM line read, is an I101.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwspec.acceptance import values
from hwspec.acceptance.results import CopyRun
from hwspec.acceptance.values import BadValue, Problems, quote
from hwspec.diagnostics import Diagnostic

_VERSION = re.compile(r"nvbandwidth Version:\s*(\S{1,64})")
_RUNNING = re.compile(r"Running ([A-Za-z0-9_]{1,128})\.")
_SUM = re.compile(r"SUM ([A-Za-z0-9_]{1,128})\s+(\S+)")
_ROW_KIND = re.compile(r"(?<![A-Za-z])(CPU|GPU)\(row\)")
_COLUMN_KIND = re.compile(r"(?<![A-Za-z])(CPU|GPU)\(column\)")


def unit_of(testcase: str, title: str = "") -> str:
    """"ns" for a latency testcase (by its name, or a title ending in `(ns)`), else "GB/s"."""
    return "ns" if "latency" in testcase or title.rstrip().endswith("(ns)") else "GB/s"


def _bound(unit: str) -> float:
    return values.MAX_LATENCY_NS if unit == "ns" else values.MAX_GBPS


@dataclass
class _Testcase:
    """One testcase being read."""

    name: str
    line: int
    prefix: str | None
    version: str | None
    unit: str
    row_kind: str | None = None
    column_kind: str | None = None
    columns: int | None = None
    """The matrix's column count, once its column numbers are read."""
    in_matrix: bool = False
    """Lines are read as the matrix's (after its title, until a line that is not one of its rows)."""
    rows: list[tuple[float | None, ...]] = field(default_factory=list)
    matrix_left_out: bool = False
    total: float | None = None
    error: str | None = None
    broken: bool = False

    def run(self, file: str) -> CopyRun:
        matrix = () if self.matrix_left_out else tuple(self.rows)
        latency = self.unit == "ns"
        return CopyRun(file, self.line, self.name, matrix, self.row_kind, self.column_kind, None if latency else self.total,
                       self.version, self.unit, self.total if latency else None)


def parse(text: str, file: str, kind: str) -> tuple[list[CopyRun], list[Diagnostic]]:
    """The testcases of nvbandwidth output `text` (JSON when it starts with `{`), and the problems
    found. `kind` is "nvbandwidth"."""
    problems = Problems(file)
    if values.is_json(text):
        runs = _read_json(text, file, problems)
    else:
        runs = _TextReader(file, problems).read(text)
    return runs, problems.found


class _TextReader:
    def __init__(self, file: str, problems: Problems) -> None:
        self.file, self.problems = file, problems
        self.version: str | None = None
        self.current: _Testcase | None = None
        self.runs: list[CopyRun] = []

    def read(self, text: str) -> list[CopyRun]:
        lines = text.split("\n")
        cut = not text.endswith("\n")
        for number, line in enumerate(lines, 1):
            if len(self.runs) > values.MAX_RUNS:
                self.problems.error(number, 1, f"more than {values.MAX_RUNS} testcases in one file: the rest is not read")
                return self.runs[:values.MAX_RUNS]
            self.line(number, line[:-1] if line.endswith("\r") else line, cut and number == len(lines))
        self.finish()
        return self.runs

    def line(self, number: int, line: str, cut: bool) -> None:
        prefix, rest, offset = values.split_prefix(line)
        body = rest.strip()
        col = offset + len(rest) - len(rest.lstrip()) + 1
        current = self.current
        if current is not None and current.in_matrix:
            if self.matrix_line(current, body, number, col, prefix, cut):
                return
            current.in_matrix = False
        if not body:
            return
        if (match := _VERSION.match(body)) is not None:
            self.version = match.group(1)
        elif (match := _RUNNING.fullmatch(body)) is not None:
            self.finish()
            name = match.group(1)
            self.current = _Testcase(name, number, prefix, self.version, unit_of(name))
        elif (match := _SUM.fullmatch(body)) is not None:
            if cut:
                self.problems.warn(number, col + match.start(2), f"the file ends in this SUM line with no line break: its value "
                                                                 f"{quote(match.group(2))} may be cut: left out")
            else:
                self.total(match.group(1), match.group(2), number, col + match.start(2))
        elif current is not None and body.startswith("Error: "):
            current.error = body[len("Error: "):]
        elif _ROW_KIND.search(body) or _COLUMN_KIND.search(body):
            self.title(body, number, col)

    def title(self, body: str, number: int, col: int) -> None:
        current = self.current
        if current is None or current.columns is not None or current.matrix_left_out:
            where = "with no 'Running <testcase>.' line before it" if current is None else f"after testcase {current.name}'s own"
            self.problems.warn(number, col, f"a matrix {where}: left out")
            self.finish()
            self.current = current = _Testcase("(none)", number, None, None, "GB/s", broken=True)
        rows, columns = _ROW_KIND.search(body), _COLUMN_KIND.search(body)
        current.row_kind = rows.group(1) if rows else None
        current.column_kind = columns.group(1) if columns else None
        current.unit = unit_of(current.name, body)
        current.in_matrix = True

    def matrix_line(self, current: _Testcase, body: str, number: int, col: int, prefix: str | None, cut: bool) -> bool:
        """Read `body` as a line of the open matrix; False when it is not one (the matrix ends)."""
        words = body.split()
        if current.columns is None:
            if len(words) > values.MAX_MATRIX:
                self.left_out(current, number, col, f"more than {values.MAX_MATRIX} matrix columns")
                return False
            if not words or words != [str(index) for index in range(len(words))]:
                self.left_out(current, number, col, "the matrix title is not followed by its column numbers")
                return False
            current.columns = len(words)
            return True
        if not words or not (words[0].isascii() and words[0].isdigit()):
            return False
        if current.broken or current.matrix_left_out:
            return True
        expected = len(current.rows)
        if words[0] != str(expected) or prefix != current.prefix:
            why = (f"matrix row {quote(words[0])} where row {expected} was expected" if words[0] != str(expected) else
                   f"a matrix row with rank prefix {quote(prefix) if prefix else 'none'} in testcase {current.name}")
            self.problems.error(number, col, f"{why} (two outputs interleaved?): testcase {current.name} is left out")
            current.broken = True
            return True
        cells = words[1:]
        if len(cells) != current.columns:
            if cut and len(cells) < current.columns:
                why = f"matrix row {expected} cut short at the end of the file: {len(cells)} of {current.columns} values"
            else:
                why = f"matrix row {expected} has {len(cells)} values where the matrix has {current.columns} columns"
            self.left_out(current, number, col, why)
            return True
        if cut and cells[-1] != values.NOT_AVAILABLE:
            self.left_out(current, number, col, f"the file ends in matrix row {expected} with no line break: its last value "
                                                f"{quote(cells[-1])} may be cut")
            return True
        if expected >= values.MAX_MATRIX:
            self.left_out(current, number, col, f"more than {values.MAX_MATRIX} matrix rows")
            return True
        try:
            row = tuple(None if cell == values.NOT_AVAILABLE else
                        values.number(cell, f"matrix row {expected} column {index}", _bound(current.unit), current.unit)
                        for index, cell in enumerate(cells))
        except BadValue as exc:
            self.left_out(current, number, col, exc.message)
            return True
        current.rows.append(row)
        return True

    def left_out(self, current: _Testcase, number: int, col: int, why: str) -> None:
        self.problems.warn(number, col, f"{why}: testcase {current.name}'s matrix is left out")
        current.matrix_left_out = True

    def total(self, name: str, text: str, number: int, col: int) -> None:
        """A SUM line: the open testcase's, else a run of its own."""
        current = self.current
        unit = current.unit if current is not None and current.name == name else unit_of(name)
        try:
            value = values.number(text, f"SUM of {name}", _bound(unit), unit)
        except BadValue as exc:
            self.problems.warn(number, col, f"{exc.message}: left out")
            return
        if current is not None and current.name == name:
            if current.total is not None:
                self.problems.warn(number, col, f"a second SUM line for testcase {name}: left out")
            else:
                current.total = value
            return
        self.runs.append(_Testcase(name, number, None, self.version, unit, total=value).run(self.file))

    def finish(self) -> None:
        """Close the open testcase: a run, or an I101 saying why not."""
        current, self.current = self.current, None
        if current is None or current.broken:
            return
        if current.error is not None:
            self.problems.error(current.line, 1, f"testcase {current.name} reported an error: {quote(current.error, 80)}: left out")
        elif (current.matrix_left_out or not current.rows) and current.total is None:
            self.problems.error(current.line, 1, f"testcase {current.name} has no results read (no matrix, no SUM line): left out")
        else:
            self.runs.append(current.run(self.file))


def _read_json(text: str, file: str, problems: Problems) -> list[CopyRun]:
    """nvbandwidth's JSON: `{"nvbandwidth": {"version", "testcases": [{"name", "status",
    "bandwidth_description", "bandwidth_matrix", "sum"}, ...]}}`; a testcase with status other
    than Passed is no run (Error: an I101)."""
    data = values.load_json(text, problems)
    if data is None:
        return []
    top = data.get("nvbandwidth") if isinstance(data, dict) else None
    listed = top.get("testcases") if isinstance(top, dict) else None
    if not isinstance(top, dict) or not isinstance(listed, list):
        problems.error(1, 1, "not a benchmark output hwspec reads: JSON without nvbandwidth's \"testcases\" list")
        return []
    version = top.get("version")
    version = version[:64] if isinstance(version, str) else None
    where = values.positions(text, values.item_offsets(text, ("nvbandwidth", "testcases")))
    runs: list[CopyRun] = []
    for index, item in enumerate(listed[:values.MAX_RUNS]):
        line, col = where[index] if index < len(where) else (1, 1)
        try:
            run = _json_testcase(item, file, line, version, problems, col)
        except BadValue as exc:
            problems.warn(line, col, f"testcases[{index}]: {exc.message}: left out")
            continue
        if run is not None:
            runs.append(run)
    if len(listed) > values.MAX_RUNS:
        problems.error(1, 1, f"more than {values.MAX_RUNS} testcases in one file: the rest is not read")
    return runs


def _json_testcase(item: object, file: str, line: int, version: str | None, problems: Problems, col: int) -> CopyRun | None:
    if not isinstance(item, dict):
        raise BadValue(f"testcase {values.describe(item)} is not an object")
    name = values.text_value(item.get("name"), "name", 128)
    status = item.get("status")
    if status == "Error":
        problems.error(line, col, f"testcase {quote(name)} reported an error: {values.describe(item.get('error', ''))}: left out")
        return None
    if status != "Passed":
        return None
    title = item.get("bandwidth_description")
    title = title if isinstance(title, str) else ""
    unit = unit_of(name, title)
    listed = item.get("bandwidth_matrix", [])
    if not isinstance(listed, list) or len(listed) > values.MAX_MATRIX:
        raise BadValue(f"bandwidth_matrix is not a list of at most {values.MAX_MATRIX} rows")
    matrix: list[tuple[float | None, ...]] = []
    for number, row in enumerate(listed):
        if not isinstance(row, list) or len(row) > values.MAX_MATRIX or (matrix and len(row) != len(matrix[0])):
            raise BadValue(f"bandwidth_matrix row {number} is not a list of as many values as the rows above")
        matrix.append(tuple(None if values.optional(cell) else
                            values.number(cell, f"bandwidth_matrix row {number} column {index}", _bound(unit), unit)
                            for index, cell in enumerate(row)))
    total = item.get("sum")
    value = None if total is None else values.number(total, "sum", _bound(unit), unit)
    rows, columns = _ROW_KIND.search(title), _COLUMN_KIND.search(title)
    return _Testcase(name, line, None, version, unit, rows.group(1) if rows else None, columns.group(1) if columns else None,
                     rows=matrix, total=value).run(file)
