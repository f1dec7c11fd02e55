"""Reading values out of a parsed node report (`hwspec.live.fleet`, `hwspec.live.runs`): each
key checked for presence and type, and a `ReportError` naming the key's path when it is wrong.

A report is hostile JSON: every string taken from it is shown `visible` before it reaches an
output, and a node or host name must be a host name (`HOST_NAME`), so that a hostlist made of
them cannot be forged.
"""

from __future__ import annotations

import re
from typing import Any

from hwspec.text import visible

Path = tuple[str | int, ...]
"""Keys of objects and indices of arrays, from the report object down."""

HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,252}")
"""A node or host name: letters, digits, `.`, `-`, `_`, not starting with `.` or `-`, at most 253 characters."""
HOST_NAME_RULE = "letters, digits, '.', '-', '_'; at most 253 characters"


class ReportError(Exception):
    """A report that is not a version-1 node report: `message` about the value at `path`
    (keys and list indices from the report object down)."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def required(document: dict[str, Any], key: str, kind: type, path: Path = ()) -> Any:
    """`document[key]`, which must be there and of `kind` (an int is not a bool)."""
    if key not in document:
        raise ReportError(path, f"{name(path, key)} is missing")
    value = document[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ReportError((*path, key), f"{name(path, key)} is {kind_of(value)}, not {KINDS[kind]}")
    return value


def optional(document: dict[str, Any], path: Path, key: str, kind: type = str) -> Any:
    """`document[key]` when there and not null (then of `kind`), else None; a string is shown `visible`."""
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ReportError((*path, key), f"{name(path, key)} is {kind_of(value)}, not {KINDS[kind]} or null")
    return visible(value) if isinstance(value, str) else value


def host_name(value: Any, path: Path) -> str:
    """`value`, which must be a host name (`HOST_NAME`); `path` names it in the error."""
    if not isinstance(value, str):
        raise ReportError(path, f"{name(path[:-1], path[-1])} is {kind_of(value)}, not a string")
    if not HOST_NAME.fullmatch(value):
        raise ReportError(path, f"{name(path[:-1], path[-1])} {visible(value)!r} is not a host name ({HOST_NAME_RULE})")
    return value


KINDS = {int: "an integer", str: "a string", list: "an array", dict: "an object", bool: "a boolean"}


def kind_of(value: Any) -> str:
    """What JSON calls `value`'s type, with an article: `a string`, `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number"
    return KINDS.get(type(value), type(value).__name__)


def name(path: Path, key: str | int) -> str:
    """`findings[3].code` for key "code" at ("findings", 3); `hosts[2]` for key 2 at ("hosts",)."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in (*path, key))
    return text.lstrip(".")
