"""DOT text for the diagrams: quoted ids and labels (`quote`, `label`, `attrs`), clusters being
built (`Cluster`), and graphviz's HTML-like tables (`html_table`, `pair_table`). Any text is
made one safe DOT string here: unprintable characters shown as escapes, quotes escaped."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hwspec.text import visible
from hwspec.text import xml_escape as escape

LEGEND_PREFIX = "_legend_"
"""Legend node ids start with an underscore, which platform ids (lower-case letter first) cannot."""


def _printable(text: str) -> str:
    """`text` with every unprintable character (NUL, control characters, line breaks, lone
    surrogates) shown as its `visible` escape, so graphviz reads one clean line."""
    if text.isprintable():  # the common case; a surrogate is never printable
        return text
    return "".join(c if c.isprintable() else visible(c) for c in text)


def quote(value: Any) -> str:
    """A DOT quoted string: unprintable characters shown as escapes, backslash and double quote
    escaped, so any text is one safe ID."""
    return '"' + _printable(str(value)).replace("\\", "\\\\").replace('"', '\\"') + '"'


def label(*lines: Any) -> str:
    """A quoted label of `lines` joined by DOT line breaks; each line's own text is escaped
    (a backslash stays a backslash, newlines become breaks)."""
    escaped = []
    for line in lines:
        text = "\\n".join(_printable(part).replace("\\", "\\\\").replace('"', '\\"')
                          for part in str(line).replace("\r", "").split("\n"))
        escaped.append(text)
    return '"' + "\\n".join(escaped) + '"'


def attrs(style: dict[str, str], **extra: str) -> str:
    """`key="value", ...` with every value quoted, except values already quoted by `label`."""
    items = [f"{k}={quote(v)}" for k, v in style.items()]
    items += [f"{k}={v}" for k, v in extra.items()]
    return ", ".join(items)


@dataclass
class Cluster:
    """A DOT subgraph being built: its id, its attribute text, and its lines and nested
    subgraphs in order."""

    id: str
    attrs: str
    items: list[Any] = field(default_factory=list)  # Node lines (str) and nested Clusters, in order

    @property
    def is_cluster(self) -> bool:
        return True


def iter_clusters(items: Iterable[Any]) -> Iterable[Cluster]:
    for item in items:
        if isinstance(item, Cluster):
            yield item
            yield from iter_clusters(item.items)


def node_lines(items: Iterable[Any]) -> Iterable[str]:
    for item in items:
        if isinstance(item, Cluster):
            yield from node_lines(item.items)
        else:
            yield item


def html_table(caption: str, header: list[str], rows: list[list[str]]) -> str:
    """An HTML-like graphviz table; `caption` and `header` are plain text, cells are HTML
    (escaped by the caller)."""
    td = '<td align="left">{}</td>'
    lines = [f'<tr><td colspan="{len(header)}"><b>{escape(caption)}</b></td></tr>']
    lines.append("<tr>" + "".join(td.format(f"<b>{escape(h)}</b>" if h else "") for h in header) + "</tr>")
    lines += ["<tr>" + "".join(td.format(cell) for cell in row) + "</tr>" for row in rows]
    return f'<table border="0" cellborder="1" cellspacing="0" cellpadding="3">{"".join(lines)}</table>'


def pair_table(rows: list[str], columns: list[str], links: dict[tuple[str, str], int],
                cell: Callable[[int], tuple[str, str]], caption: str) -> str:
    """An HTML-like table (graphviz label) of link counts between each row and column id,
    `links[(row, column)]`, like `nvidia-smi topo -m`: X on the diagonal, "-" where there is no
    link, else `cell(count)` -> (background colour, text)."""
    plain = '<td align="center">{}</td>'
    lines = ["<tr>" + plain.format("") + "".join(plain.format(f"<b>{escape(c)}</b>") for c in columns) + "</tr>"]
    for a in rows:
        cells = [plain.format(f"<b>{escape(a)}</b>")]
        for b in columns:
            n = links.get((a, b))
            if a == b:
                cells.append('<td align="center" bgcolor="#dddddd">X</td>')
            elif n:
                colour, text = cell(n)
                cells.append(f'<td align="center" bgcolor="{colour}">{text}</td>')
            else:
                cells.append(plain.format("-"))
        lines.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table border="0" cellborder="1" cellspacing="0" cellpadding="3"><tr><td colspan="{len(columns) + 1}">'
            f"{escape(caption)}</td></tr>{''.join(lines)}</table>")
