"""YAML text that hwspec's loader reads back as exactly the data written.

PyYAML's safe dumper is not enough: given `allow_unicode` it writes NEL (U+0085) raw inside a
plain or single-quoted scalar, where the reader takes it for a line break, and it writes plain a
string that YAML 1.2 reads as a number (`1e3`, which YAML 1.1 reads as text), a form the loader
refuses (`hwspec.source.yaml_versions`). Here every string that is not printable ASCII, or that
the two YAML versions would read differently, is double-quoted, where every line break and
control character is escaped (`\\N`, `\\L`, `\\x01`) and printable non-ASCII text stays as it is.
"""

from __future__ import annotations

import yaml

from hwspec.source import yaml_versions


class TextSafeDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, with strings written so that hwspec's loader reads them back."""


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    plain = text.isascii() and text.isprintable() and yaml_versions.conflict(text, text) is None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=None if plain else '"')


TextSafeDumper.add_representer(str, _represent_text)


def dump_yaml(data: object, flow: bool | None = None) -> str:
    """`data` as YAML text, in its key order; `flow` as PyYAML's `default_flow_style` (None:
    short lists and mappings in flow style). Invariant: `hwspec.source.loader.load_yaml_text`
    of the text gives back `data`, whatever its strings hold (a lone surrogate is written, but
    the loader refuses it: it cannot be UTF-8)."""
    return yaml.dump(data, Dumper=TextSafeDumper, sort_keys=False, default_flow_style=flow, width=4096, allow_unicode=True)
