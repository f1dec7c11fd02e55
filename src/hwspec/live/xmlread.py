"""A small, safe XML reader for live-machine inputs (NCCL dumps, hwloc XML).

expat, not ElementTree's defaults: entity declarations are refused (no billion laughs),
external entities and DTDs are never fetched, the input size and element count are bounded,
and every element keeps its line and column. Reading is linear in the input. Errors come back
as `XmlError` with the position expat reports, never as a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NoReturn
from xml.parsers import expat

MAX_ELEMENTS = 200_000
"""More elements than any real node's topology has (hwloc XML of a 4-socket box: ~5,000)."""
MAX_DEPTH = 256


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    line: int
    col: int
    children: list[Element] = field(default_factory=list)
    parent: Element | None = field(default=None, repr=False)
    text: str = ""
    """The character data directly inside the element (between its tags, not its children's), stripped."""


class XmlError(Exception):
    """The input is not XML this reader accepts; `line`/`col` are 1-based."""

    def __init__(self, message: str, line: int, col: int):
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


class _Refused(Exception):
    pass


def parse_xml(data: bytes) -> Element:
    """The root element of `data`. Raises XmlError (with its position) on anything else."""
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    root: list[Element] = []
    stack: list[Element] = []
    texts: list[list[str]] = []  # character data of each open element, joined when it closes
    count = 0
    refused: list[str] = []

    def refuse(message: str) -> NoReturn:
        refused.append(message)
        raise _Refused(message)

    def start(tag: str, attrs: dict[str, str]) -> None:
        nonlocal count
        count += 1
        if count > MAX_ELEMENTS:
            refuse(f"more than {MAX_ELEMENTS} elements: not a node topology")
        if len(stack) >= MAX_DEPTH:
            refuse(f"elements nested deeper than {MAX_DEPTH}")
        element = Element(tag, dict(attrs), parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)
        if stack:
            element.parent = stack[-1]
            stack[-1].children.append(element)
        else:
            root.append(element)
        stack.append(element)
        texts.append([])

    def end(tag: str) -> None:
        stack.pop().text = "".join(texts.pop()).strip()

    def characters(data: str) -> None:
        if texts:
            texts[-1].append(data)

    def entity_decl(*_args: object) -> None:
        refuse("entity declarations are not accepted (they can expand without bound)")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    parser.EntityDeclHandler = entity_decl
    def external_entity(*_args: object) -> NoReturn:
        refuse("external entities are not read")

    parser.ExternalEntityRefHandler = external_entity
    try:
        parser.Parse(data, True)
    except _Refused:
        raise XmlError(refused[0], parser.CurrentLineNumber, parser.CurrentColumnNumber + 1) from None
    except expat.ExpatError as exc:
        raise XmlError(f"not well-formed XML: {expat.ErrorString(exc.code)}", exc.lineno, exc.offset + 1) from None
    except (ValueError, UnicodeError, RecursionError) as exc:
        raise XmlError(f"unreadable XML: {exc}", parser.CurrentLineNumber, parser.CurrentColumnNumber + 1) from None
    if not root:
        raise XmlError("no element", 1, 1)
    return root[0]


def walk(element: Element) -> Iterator[Element]:
    """Every element below and including `element`, in document order (iteratively)."""
    pending = [element]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(node.children))
