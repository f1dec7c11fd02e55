"""Loader-level expansion of compact platform files, before the spec model sees them.

Two forms are expanded:

* **repeat blocks**: a list item with a `repeat:` key stands for one item per value of its
  variables, e.g. ``- {repeat: {i: 0..7}, id: gpu${i}, slot: ${i}}`` becomes eight items.
  Ranges are inclusive (`0..7`); several variables give their cartesian product, the first
  varying slowest. Inside the item every string may use `${expr}` or `${expr:fmt}` where
  `expr` is integer arithmetic over the variables (`+ - * // %`, parentheses, int literals
  including `0x1f`) and `fmt` a Python format spec (`${i*0x20+0x17:02x}` -> `17`).
  Substitution always yields strings; the spec model converts them to numbers where a
  number is expected. A variable given a list of texts is not repeated over: it is a table,
  and `${name[expr]}` is its item at index `expr` (from 0), e.g. a per-GPU bus id list
  ``repeat: {g: 0..7, bus: ["0000:18:00.0", ...]}`` with ``bus: "${bus[g]}"``.
* **annotated values**: a mapping whose keys are `value` plus `source` and/or `assumed`
  stands for its `value`; the note is kept as provenance (`Provenance`) under the value's
  path, so that any single number can say where it comes from.

Values of `PATTERN_KEYS` (cluster hostname/address patterns) are kept verbatim.

`expand()` returns the plain data plus a map from every expanded path back to the path in
the file as written, so that later errors still point at the right line.
"""

from __future__ import annotations

import ast
import functools
import itertools
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity
from hwspec.source.loader import SourceDoc, load_yaml_file

DataPath = tuple[str | int, ...]

MAX_REPEAT_ITEMS = 4096
MAX_EXPANDED_VALUES = 100_000
"""Values (scalars, lists, mappings) an expanded document may hold, like source.MAX_NODES for
aliases: repeat blocks inside repeat blocks multiply, and so does a large repeated body."""
MAX_EXPRESSION = 256
"""Longest `${...}` expression, in characters: deeper nesting overflows Python's parser."""
MAX_FORMAT_WIDTH = 64
"""Largest width or precision in a `${expr:fmt}` format spec: no id or name is longer, and an
unbounded width lets a 300-byte file ask for gigabytes."""
PATTERN_KEYS = frozenset({"hostname", "address"})
PATTERN_PATHS = frozenset({("nvlink_domain", "name")})
"""Patterns kept verbatim by their last two keys (the cluster's domain-name pattern, variable d)."""
"""Keys whose values are per-node patterns (`zx${i:04}`), expanded later per node, not here."""
_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")
_PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
_INDEXED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[(.*)\]\s*(?::([^\[\]]*))?$", re.DOTALL)
"""`${name[expr]}`: item `expr` of the table `name`; `${name[expr]:fmt}` formats an item of a
table of whole numbers."""
_ALLOWED_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a value comes from: a free-text `source`, and `assumed` (the reason) when the
    value is an assumption rather than a stated fact."""

    source: str | None = None
    assumed: str | None = None


@dataclass
class Expanded:
    """Result of `expand`: plain data, the expanded->written path map, and provenance notes
    keyed by expanded path (for annotated values and for blocks with `source`/`assumed`)."""

    data: Any
    origin: dict[DataPath, DataPath] = field(default_factory=dict)
    provenance: dict[DataPath, Provenance] = field(default_factory=dict)

    def written_path(self, path: DataPath) -> DataPath:
        """The path in the file as written for an expanded `path` (longest known prefix)."""
        for cut in range(len(path), -1, -1):
            if path[:cut] in self.origin:
                return self.origin[path[:cut]]
        return ()


class _TooLarge(Exception):
    """The expansion outgrew MAX_EXPANDED_VALUES at `path` (as written): stops everything."""

    def __init__(self, path: DataPath):
        super().__init__(path)
        self.path = path


class _ExpandError(Exception):
    def __init__(self, path: DataPath, message: str, hint: str | None = None, code: Code = Code.BAD_REPEAT_BLOCK):
        super().__init__(message)
        self.path, self.message, self.hint, self.code = path, message, hint, code


_BINARY = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
           ast.FloorDiv: int.__floordiv__, ast.Mod: int.__mod__}
_LARGEST = 2**48
"""Operands beyond this are refused: patterns name hosts and buses, not big numbers."""

Columns = Mapping[str, Sequence[int]]
"""Values of each variable at `count` points (one per node of a group): column k is point k."""
Vectorised = Callable[[Columns, int], Sequence[int]]


@functools.lru_cache(maxsize=1024)
def _compile_columns(expr: str) -> Vectorised:
    """Parse integer arithmetic `expr` once into a function evaluating it at many points at
    once (`f(columns, count) -> [value at point 0, ...]`): each operator is applied to whole
    columns by `map`, so 16,384 host names cost one pass per operator, not one call per node.

    Only variables, int literals (`0x1f` too), unary +/- and `+ - * // %` are accepted;
    anything else raises ValueError with a message for people. Evaluation raises ValueError
    for an unknown variable, division by zero, or operands beyond 2**48. Cached: a repeat block
    evaluates the same few expressions once per repetition."""
    if len(expr) > MAX_EXPRESSION:
        raise ValueError(f"'{expr[:40]}...' is longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, RecursionError, MemoryError):
        raise ValueError(f"cannot read '{expr}' as integer arithmetic") from None

    def build(node: ast.AST) -> Vectorised:
        if isinstance(node, ast.Expression):
            return build(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            value = node.value
            return lambda columns, count: [value] * count
        if isinstance(node, ast.Name):
            name = node.id

            def lookup(columns: Columns, count: int) -> Sequence[int]:
                if name not in columns:
                    known = ", ".join(sorted(columns)) or "none"
                    raise ValueError(f"unknown variable '{name}' (variables here: {known})")
                return columns[name]  # a range for a node group's i and n: not copied

            return lookup
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = build(node.operand)
            if isinstance(node.op, ast.UAdd):
                return operand
            return lambda columns, count: list(map(operator.neg, operand(columns, count)))
        if isinstance(node, ast.BinOp) and isinstance(node.op, _ALLOWED_OPS):
            left, right, op = build(node.left), build(node.right), _BINARY[type(node.op)]
            divides = isinstance(node.op, (ast.FloorDiv, ast.Mod))
            if isinstance(node.right, ast.Constant) and type(node.right.value) is int:  # `n // 256`: the usual form
                value = node.right.value

                def by_constant(columns: Columns, count: int) -> list[int]:
                    a = left(columns, count)
                    if not a:
                        return []
                    if divides and value == 0:
                        raise ValueError(f"division by zero in '{expr}'")
                    low, high = _bounds(a)
                    if abs(value) > _LARGEST or high > _LARGEST or low < -_LARGEST:
                        raise ValueError(f"number too large in '{expr}'")
                    return list(map(op, a, itertools.repeat(value, count)))

                return by_constant

            def binary(columns: Columns, count: int) -> list[int]:
                a, b = left(columns, count), right(columns, count)
                if divides and 0 in b:
                    raise ValueError(f"division by zero in '{expr}'")
                if a and b and not all(-_LARGEST <= bound <= _LARGEST for bound in (*_bounds(a), *_bounds(b))):
                    raise ValueError(f"number too large in '{expr}'")
                return list(map(op, a, b))

            return binary
        raise ValueError(f"'{expr}' is not integer arithmetic: use variables, integers and + - * // %")

    return build(tree)


def _bounds(values: Sequence[int]) -> tuple[int, int]:
    """(smallest, largest) of a non-empty column; a range's from its ends, without a pass."""
    if type(values) is range:
        return min(values[0], values[-1]), max(values[0], values[-1])
    return min(values), max(values)


def compile_expression(expr: str) -> Callable[[dict[str, int]], int]:
    """Parse integer arithmetic `expr` once into a function of the variables (one point);
    the rules and errors of `_compile_columns`."""
    columns = _compile_columns(expr)
    return lambda variables: columns({name: (value,) for name, value in variables.items()}, 1)[0]


def evaluate(expr: str, variables: dict[str, int]) -> int:
    """Evaluate integer arithmetic `expr` over `variables`; raises ValueError with a message."""
    return compile_expression(expr)(variables)


def _format(value: int, spec: str, original: str) -> str:
    """`format(value, spec)` for `${expr:spec}`; ValueError with a message for a spec Python
    refuses (also `c` beyond U+10FFFF, an OverflowError) or wider than MAX_FORMAT_WIDTH."""
    if any(int(number) > MAX_FORMAT_WIDTH for number in re.findall(r"\d+", spec)):
        raise ValueError(f"format '{spec}' in '{original}' is wider than {MAX_FORMAT_WIDTH} characters")
    try:
        return format(value, spec)
    except (ValueError, OverflowError):
        raise ValueError(f"bad format '{spec}' in '{original}'") from None


class Pattern:
    """A `${...}` pattern parsed once, for expanding it many times (host names of 16k nodes).

    `pattern(variables)` renders one point; `pattern.many(columns, count)` renders `count`
    points at once, column-wise (see `_compile_columns`). Both raise ValueError with a message."""

    def __init__(self, text: str, names: tuple[str, ...]):
        """Raises ValueError (with a message) when an expression is not integer arithmetic over
        `names`, or a format is bad or too wide: reported once, not per node."""
        self.pieces: list[str | tuple[Vectorised, str, str]] = []
        position = 0
        for match in _PLACEHOLDER.finditer(text):
            self.pieces.append(text[position:match.start()])
            expr, _, spec = match.group(1).partition(":")
            compiled = _compile_columns(expr)
            compiled({name: (1,) for name in names}, 1)  # unknown variables are reported now
            _format(0, spec, match.group(0))  # a bad or too wide format is reported now
            self.pieces.append((compiled, spec, match.group(0)))
            position = match.end()
        self.pieces.append(text[position:])

    def __call__(self, variables: dict[str, int]) -> str:
        return self.many({name: (value,) for name, value in variables.items()}, 1)[0]

    def many(self, columns: Columns, count: int) -> list[str]:
        """The pattern rendered at `count` points: entry k uses column k of every variable."""
        if not count:
            return []
        template, values = [], []
        for piece in self.pieces:
            if isinstance(piece, str):
                template.append(piece.replace("{", "{{").replace("}", "}}"))
                continue
            compiled, spec, _ = piece
            template.append("{:" + spec + "}" if "{" not in spec and "}" not in spec else "{}")
            values.append(compiled(columns, count))
        try:  # one str.format per point: the literals and each value's format at once
            if "{}" not in template:
                return list(map("".join(template).format, *values)) if values else ["".join(p for p in self.pieces if isinstance(p, str))] * count
        except (ValueError, OverflowError):
            pass  # said below, at the value that cannot be formatted
        parts: list[Sequence[str]] = []
        for piece in self.pieces:
            if isinstance(piece, str):
                parts.append(itertools.repeat(piece, count))  # type: ignore[arg-type]
                continue
            compiled, spec, original = piece
            parts.append([_format(value, spec, original) for value in compiled(columns, count)])
        return list(map("".join, zip(*parts)))


class Substituted(str):
    """Text produced by substituting `${...}` placeholders. The spec accepts it where a whole
    number is expected (`slot: ${g}`), unlike a string written in the file (`slot: "2"`)."""


Tables = dict[str, tuple[str, ...] | tuple[int, ...]]
"""A repeat block's tables (variables given a list of texts, or of whole numbers the item
indexes), by name."""


def substitute(text: str, variables: dict[str, int], tables: Tables | None = None) -> str:
    """Replace every `${expr}` / `${expr:fmt}` / `${table[expr]}` in `text`; the result is a
    `Substituted`. Raises ValueError with a message: an index outside the table, a table used
    without an index, a format on a table's item."""
    tables = tables or {}

    def one(match: re.Match[str]) -> str:
        indexed = _INDEXED.match(match.group(1))
        if indexed is not None:
            name, expr, spec = indexed.groups()
            if name not in tables:
                known = ", ".join(sorted(tables)) or "none"
                raise ValueError(f"'{match.group(0)}' indexes '{name}', which is no table of this repeat block (tables: {known})")
            index, table = evaluate(expr, variables), tables[name]
            if not 0 <= index < len(table):
                raise ValueError(f"'{match.group(0)}' is item {index} of '{name}', which has {len(table)} "
                                 f"(indexes 0..{len(table) - 1})")
            item = table[index]
            if spec is None:
                return str(item)
            if isinstance(item, str):
                raise ValueError(f"'{match.group(0)}' formats an item of the table '{name}', which holds texts: "
                                 "write the text as it should appear, or make the table whole numbers")
            return _format(item, spec, match.group(0))
        expr, _, spec = match.group(1).partition(":")
        if expr.strip() in tables:
            raise ValueError(f"'{match.group(0)}' names the table '{expr.strip()}': take one item, e.g. ${{{expr.strip()}[i]}}")
        return _format(evaluate(expr, variables), spec, match.group(0))

    return Substituted(_PLACEHOLDER.sub(one, text))


def _indexed_names(node: Any) -> frozenset[str]:
    """The names a repeat block's item indexes (`${name[expr]}`), in any of its strings."""
    if isinstance(node, str):
        return frozenset(m.group(1) for p in _PLACEHOLDER.finditer(node) if (m := _INDEXED.match(p.group(1))))
    if isinstance(node, dict):
        return frozenset().union(*(_indexed_names(v) for v in node.values()))
    if isinstance(node, list):
        return frozenset().union(*(_indexed_names(v) for v in node))
    return frozenset()


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_repeat(spec: Any, path: DataPath, indexed: frozenset[str] = frozenset()) -> tuple[list[dict[str, int]], Tables]:
    """The points a repeat block repeats its item for (one value per variable each), and its
    tables: variables given a list of texts, or a list of whole numbers that the item indexes
    (`indexed`), not repeated over but indexed as ${name[expr]}. A list of whole numbers the
    item does not index is repeated over."""
    if not isinstance(spec, dict) or not spec:
        raise _ExpandError(path, "repeat needs a mapping of variables to ranges, e.g. repeat: {i: 0..7}")
    axes: list[list[tuple[str, int]]] = []
    tables: Tables = {}
    for name, value in spec.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise _ExpandError(path + (name,), f"'{name}' is not a variable name")
        texts = isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
        numbers = isinstance(value, list) and bool(value) and all(_whole(v) for v in value)
        if texts or (numbers and name in indexed):
            if len(value) > MAX_REPEAT_ITEMS:
                raise _ExpandError(path + (name,), f"table '{name}' has {len(value)} items, more than {MAX_REPEAT_ITEMS}")
            tables[name] = tuple(value)
            continue
        if isinstance(value, list) and not (texts or numbers) and value and all(isinstance(v, str) or _whole(v) for v in value):
            raise _ExpandError(path + (name,), f"table '{name}' mixes texts and whole numbers: {value!r}"[:200],
                               hint="a table holds texts (quote every item: \"0x14\") or whole numbers, not both")
        if _whole(value):
            values = [value]
        elif isinstance(value, list) and all(_whole(v) for v in value):
            values = list(value)
        elif isinstance(value, str) and (m := _RANGE.match(value)):
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise _ExpandError(path + (name,), f"empty range '{value}': the end is below the start")
            if hi - lo + 1 > MAX_REPEAT_ITEMS:
                raise _ExpandError(path + (name,), f"range '{value}' is longer than {MAX_REPEAT_ITEMS}")
            values = list(range(lo, hi + 1))
        else:
            raise _ExpandError(path + (name,), f"cannot read {value!r} as a range",
                               hint="write an inclusive range such as 0..7, a list of whole numbers, or a table: a list "
                                    "of texts or whole numbers, indexed as ${name[i]}")
        axes.append([(name, v) for v in values])
    if not axes:
        raise _ExpandError(path, "repeat has tables but nothing to repeat over",
                           hint=f"add a variable with a range to index them, e.g. repeat: {{i: 0..{len(next(iter(tables.values()))) - 1}, ...}}")
    total = math.prod(len(axis) for axis in axes)  # before building them: 4096^3 would never finish
    if total > MAX_REPEAT_ITEMS:
        raise _ExpandError(path, f"repeat expands to {total} items, more than {MAX_REPEAT_ITEMS}")
    return [dict(c) for c in itertools.product(*axes)], tables


def _is_annotated_value(node: Any) -> bool:
    return isinstance(node, dict) and "value" in node and set(node) <= {"value", "source", "assumed"} and len(node) > 1


def read_document(path: Path) -> tuple[SourceDoc, Expanded]:
    """The platform, parts or workload file at `path`, loaded (`load_yaml_file`) and expanded.
    Raises HwspecError (located) when it cannot be read, parsed or expanded."""
    doc = load_yaml_file(path)
    return doc, expand(doc)


def expand(doc: SourceDoc) -> Expanded:
    """Expand repeat blocks, `${...}` placeholders and annotated values in `doc`.

    Raises HwspecError (code E120) listing every bad repeat block or expression.
    """
    result = Expanded(data=None)
    errors: list[Diagnostic] = []
    produced = 0

    def walk(node: Any, written: DataPath, out: DataPath, variables: dict[str, int], tables: Tables) -> Any:
        nonlocal produced
        produced += 1
        if produced > MAX_EXPANDED_VALUES:
            raise _TooLarge(written)
        result.origin[out] = written
        if isinstance(node, str) and out and (out[-1] in PATTERN_KEYS or tuple(out[-2:]) in PATTERN_PATHS):
            return node
        if isinstance(node, str):
            if variables and "${" in node:
                try:
                    return substitute(node, variables, tables)
                except ValueError as exc:
                    raise _ExpandError(written, str(exc)) from None
            if "${" in node and _PLACEHOLDER.search(node):
                raise _ExpandError(written, f"'{node}' uses ${{...}} outside a repeat block")
            return node
        if isinstance(node, list):
            items: list[Any] = []
            for index, item in enumerate(node):
                if isinstance(item, dict) and "repeat" in item:
                    try:
                        body = {k: v for k, v in item.items() if k != "repeat"}
                        combos, inner = _parse_repeat(item["repeat"], written + (index, "repeat"), _indexed_names(body))
                        for combo in combos:
                            items.append(walk(body, written + (index,), out + (len(items),), {**variables, **combo},
                                              {**{k: v for k, v in tables.items() if k not in combo}, **inner}))
                    except _ExpandError as exc:
                        errors.append(_diagnostic(doc, exc))
                    continue
                try:
                    items.append(walk(item, written + (index,), out + (len(items),), variables, tables))
                except _ExpandError as exc:
                    errors.append(_diagnostic(doc, exc))
            return items
        if isinstance(node, dict):
            if _is_annotated_value(node):
                _check_notes(node, written)
                result.provenance[out] = Provenance(_as_note(node.get("source")), _as_note(node.get("assumed")))
                return walk(node["value"], written + ("value",), out, variables, tables)
            if "source" in node or "assumed" in node:
                result.provenance[out] = Provenance(_as_note(node.get("source")), _as_note(node.get("assumed")))
            mapping: dict[str, Any] = {}
            for key, value in node.items():
                try:
                    mapping[key] = walk(value, written + (key,), out + (key,), variables, tables)
                except _ExpandError as exc:
                    errors.append(_diagnostic(doc, exc))
            return mapping
        return node

    try:
        result.data = walk(doc.data, (), (), {}, {})
    except _TooLarge as exc:
        pos = doc.locate(exc.path)
        raise HwspecError([Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, Code.BAD_REPEAT_BLOCK,
                                      f"repeat blocks expand to more than {MAX_EXPANDED_VALUES} values",
                                      "look for a repeat block inside another, or a large block repeated many times")]) from None
    if errors:
        # a fault inside a repeat block is met once per iteration: report it once
        raise HwspecError(list(dict.fromkeys(errors)))
    return result


def _check_notes(node: dict[str, Any], written: DataPath) -> None:
    """An annotated value's `source` and `assumed` are text (or null), as an entry's are."""
    for key in ("source", "assumed"):
        note = node.get(key)
        if note is not None and not isinstance(note, str):
            got = "a mapping" if isinstance(note, dict) else "a list" if isinstance(note, list) else repr(note)
            raise _ExpandError(written + (key,), f"an annotated value's '{key}' is text, got {got}", code=Code.WRONG_VALUE)


def _as_note(value: Any) -> str | None:
    return None if value is None else str(value)


def _diagnostic(doc: SourceDoc, exc: _ExpandError) -> Diagnostic:
    pos = doc.locate(exc.path)
    return Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, exc.code, exc.message, exc.hint)
