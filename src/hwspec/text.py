"""Hostile text made safe to show: in comments of generated files, in JSON values, in messages.

Platform files, their paths and the names in them come from whoever opened the pull request.
Any such text that reaches a generated file either passes a strict value check (`env_value`
and the spec's id/name patterns) or is shown through `visible`, which keeps it on one line of
printable characters that every consumer reads as a comment or a string, never as code.

Also numbers for people (`significant`), as rule findings and the performance reports print them.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any


def visible(value: Any) -> str:
    """`value` as one line of printable text that means the same to every reader.

    A backslash becomes `\\\\`; every character that is not printable (line breaks of any kind,
    NUL and other control characters, format characters, unassigned code points, lone
    surrogates) becomes an escape: `\\xNN` (a surrogate-escaped byte of a non-UTF-8 file name
    shows as that byte), `\\uNNNN` or `\\UNNNNNNNN`. The result can be encoded as UTF-8 and
    holds no line break, so it is safe in a comment of any generated file."""
    text = str(value)
    if text.isprintable() and "\\" not in text:  # the common case; a surrogate is never printable
        return text
    out = []
    for char in text:
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif char.isprintable() and not 0xD800 <= code <= 0xDFFF:
            out.append(char)
        elif 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's escape for an undecodable byte
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


XML_COMMENT_DASH = re.compile(r"-(?=-)")


def comment(value: Any, syntax: str = "hash") -> str:
    """Text for the inside of one comment line in `syntax` ("hash", "slash" or "xml"): `visible`,
    and for XML no `--` (each dash that precedes another becomes `\\x2d`), so the comment
    cannot end early or break the document."""
    text = visible(value)
    if syntax == "xml":
        text = XML_COMMENT_DASH.sub(r"\\x2d", text)
    return text


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def one_line(value: Any) -> str:
    """`value` with every control character, line break and lone surrogate but `\\n` shown as
    its `visible` escape; backslashes stay as they are (for messages, which quote hostile
    values but are not parsed back)."""
    return _CONTROLS.sub(lambda m: visible(m.group()), str(value))


_XML_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def xml_escape(text: str, extra: dict[str, str] | None = None) -> str:
    """`text` with `&`, `<`, `>` (and each key of `extra`) replaced by its entity, as
    `xml.sax.saxutils.escape` does; written here because importing xml.sax.saxutils pulls in
    urllib.request and http.client, a quarter of `hwspec validate`'s start-up."""
    return text.translate(_translation(tuple(sorted((extra or {}).items()))))


@functools.lru_cache(maxsize=16)
def _translation(extra: tuple[tuple[str, str], ...]) -> dict[int, str]:
    """`str.translate` table of `_XML_ESCAPES` plus `extra`."""
    return {ord(char): entity for char, entity in {**_XML_ESCAPES, **dict(extra)}.items()}


def significant(value: float, digits: int) -> str:
    """`value` to `digits` significant digits, never with an exponent nor trailing zeros; a
    number of `digits` or more integer digits in full: with 3, 7.8769 -> '7.88', 31.5077 ->
    '31.5', 1555.4 -> '1555', 0.5 -> '0.5'. Infinities and NaN as Python writes them."""
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return f"{value:g}"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")
