"""Plain scalars that YAML 1.1 and YAML 1.2 read differently.

hwspec reads YAML with PyYAML, which resolves plain scalars by YAML 1.1's rules; editors
(yaml-language-server, and so the JSON Schema's checks) read YAML 1.2's core schema. The two
disagree on a few spellings: `010` is 8 to YAML 1.1 (octal) and 10 to YAML 1.2; `1:30` is 90
(base 60), `0b101` is 5, `1_000` is 1000 and `yes`/`no`/`on`/`off` are booleans to YAML 1.1
but text to YAML 1.2; `1e3`, `0o10` and `-.5` are numbers to YAML 1.2 but text to YAML 1.1. (And `._0` and `-0o7`
are text to both, but ruamel.yaml, which check-jsonschema reads with, takes them as numbers.)
`conflict()` finds such a scalar so that the loader can refuse it: a refused file is safer
than one whose numbers differ between the editor and the generated files.
"""

from __future__ import annotations

import math
import re

_INT = re.compile(r"[-+]?[0-9]+")
_OCTAL = re.compile(r"0o[0-7]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INFINITY = re.compile(r"[-+]?\.(inf|Inf|INF)")
_NAN = {".nan", ".NaN", ".NAN"}
_NULL = {"", "~", "null", "Null", "NULL"}
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}

MAY_DIFFER_FIRST = frozenset("-+.0123456789yYnNoO")
"""The first characters of every plain scalar the two versions can read differently (a
cheap test before `conflict`): numbers, and yes/no/on/off."""


def yaml12_value(text: str) -> object:
    """What a YAML 1.2 reader (core schema) makes of the plain scalar `text`."""
    if text in _NULL:
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.fullmatch(text):
        return int(text)
    if _OCTAL.fullmatch(text):
        return int(text[2:], 8)
    if _HEX.fullmatch(text):
        return int(text[2:], 16)
    if _FLOAT.fullmatch(text):
        return float(text)
    if _INFINITY.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    if text in _NAN:
        return math.nan
    return text


def _lenient_value(text: str) -> object:
    """What ruamel.yaml (check-jsonschema's reader) makes of `text` in YAML 1.2 mode: it also
    takes '_' between digits and a sign before 0o and 0x."""
    sign, digits = (text[0], text[1:]) if text[:1] in ("-", "+") else ("", text)
    value = yaml12_value(digits.replace("_", ""))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return -value if sign == "-" else value
    return yaml12_value(text)


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _reading(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {_spelling(value)}"
    return "text"


def _spelling(value: object) -> str:
    """`value` written so that YAML 1.1 and 1.2 both read it back as the same value."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        mantissa, e, exponent = repr(value).partition("e")
        return (mantissa if "." in mantissa else mantissa + ".0") + (e + exponent)
    return str(value)


def conflict(text: str, yaml11: object) -> tuple[str, str] | None:
    """(message, hint) when the plain scalar `text`, which YAML 1.1 read as `yaml11`, reads as
    something else in YAML 1.2; None when both read the same value."""
    yaml12 = yaml12_value(text)
    if _same(yaml11, yaml12):
        yaml12 = _lenient_value(text)
    if _same(yaml11, yaml12):
        return None
    shown = repr(text)
    message = (f"{shown} is {_reading(yaml11)} in YAML 1.1 but {_reading(yaml12)} in YAML 1.2 (editors): "
               "hwspec refuses a form the two read differently")
    spellings = list(dict.fromkeys(_spelling(v) for v in (yaml11, yaml12) if not isinstance(v, str)))
    hint = "write " + " or ".join(spellings)
    if isinstance(yaml11, str) or isinstance(yaml12, str):
        hint += f", or quote it ({shown}) for the text"
    return message, hint
