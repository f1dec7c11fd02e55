"""Diagnostics: every problem hwspec reports, from a YAML syntax error to a rule finding.

A `Diagnostic` always carries the file and a 1-based line and column, so that a person (or an
editor, or GitHub's annotations) can jump to the place. Loading problems use codes `E1xx`
(syntax/shape) and `E2xx` (references); rule findings use the rule id (`HW201`) and name.
"""

from __future__ import annotations

import enum
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

from hwspec.text import one_line, visible


class Severity(enum.IntEnum):
    """Ordered severities; `error` findings stop generation and make `validate` exit 1."""

    INFO = 10
    WARNING = 20
    ERROR = 30

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}; expected one of: error, warning, info") from None


@dataclass(frozen=True, order=True)
class Location:
    """A place in a file: the file as the user sees it (`display_path`), a 1-based line and
    column. Line and column 0 mean the whole file (one that cannot be read); a line-based input
    has no columns, so `col` defaults to 1. Every place hwspec carries is one: a YAML key or value
    (`SourceDoc.locate`), a model entry (`Platform.locate`), where a rule's finding points, a
    diagnostic's related places, the line of a live machine's input. `str()` is `file:line`,
    as a note cites the place."""

    file: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One reported problem.

    `code` is a loader code (`E101`, a `Code`) or a rule id (`HW201`); `name` is the rule's short
    name (`backend-nic-per-gpu`) and is empty for loader problems. `line`/`col` are 1-based; 0
    means "the whole file" (e.g. a file that cannot be read at all). `related` are other places
    the problem involves, each with what it is there (`(Location("nccl-topo.xml", 12, 5),
    "observed here")`); no report format prints them yet.

    Invariant: `message` and `hint` are one line each. A value quoted from a hostile file may
    hold line breaks and control characters; they are shown as escapes (`\\x0a`) when the
    diagnostic is made, so no report format (text, JSON, GitHub, SARIF) can carry a forged line.
    """

    file: str
    line: int
    col: int
    severity: Severity
    code: str
    message: str
    hint: str | None = None
    name: str = ""
    related: tuple[tuple[Location, str], ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", single_line(self.message))
        if self.hint is not None:
            object.__setattr__(self, "hint", single_line(self.hint))

    @property
    def tag(self) -> str:
        """`E101` or `HW201 backend-nic-per-gpu`, as shown between the brackets."""
        return f"{self.code} {self.name}" if self.name else self.code

    def format(self) -> str:
        """`file:line:col: severity[CODE name]: message` plus an indented `hint:` line. The file
        name is shown `visible` (a path may hold line breaks or terminal escapes); the message and
        hint are one line each already, so a value quoted from a hostile file can neither forge a
        diagnostic line nor drive the terminal."""
        text = f"{visible(self.file)}:{self.line}:{self.col}: {self.severity.label}[{self.tag}]: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.col, self.code, self.message)


def single_line(text: str) -> str:
    """`text` as one line: control characters, line breaks (`\\n` too) and lone surrogates shown
    as their `visible` escapes, other characters (tabs, backslashes) as they are."""
    if text.isprintable():
        return text
    return one_line(text).replace("\n", "\\x0a")


class HwspecError(Exception):
    """Input that cannot be turned into a platform. Carries every diagnostic found so far."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
        super().__init__("\n".join(d.format() for d in self.diagnostics))


def display_path(path: Path | str) -> str:
    """The path as the user should see it: relative to the working directory when below it."""
    path = Path(path)
    try:
        return str(real_path(path).relative_to(_resolved_directory(os.getcwd())))
    except (ValueError, OSError):
        return str(path)


def real_path(path: Path | str) -> Path:
    """`path` made absolute with its symlinks resolved as far as they resolve. Never raises:
    a symlink loop, a name over 255 bytes, a dangling link or a NUL character stop the
    resolution there, and reading the path says what is wrong (`Path.resolve()` raises
    RuntimeError for a loop on Python 3.11, OSError on 3.13)."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def os_reason(exc: OSError) -> str:
    """Why an operating-system call failed, in words: "file name too long", "too many levels
    of symbolic links", "permission denied"."""
    words = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    return words[:1].lower() + words[1:]


@functools.lru_cache(maxsize=8)
def _resolved_directory(directory: str) -> Path:
    """`directory` with symlinks resolved: the working directory, looked up once per directory."""
    return Path(directory).resolve()
