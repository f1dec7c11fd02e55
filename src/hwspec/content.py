"""Where built-in content (templates, rules, parts) lives.

The built-in content is package data: the templates beside the generators that feed them
(`generate/templates/`), the shipped rules (`rules/builtin/`, loaded by path like a site's own)
and the parts catalogue (`data/parts/`). A source checkout and an installed wheel have the same
layout. Sites add their own directories with command-line flags; these are only the defaults.
"""

from __future__ import annotations

import functools
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_LAYOUT = {"templates": "generate/templates", "rules": "rules/builtin", "parts": "data/parts"}


@functools.cache
def builtin_dir(name: str) -> Path:
    """The built-in directory `name` ("templates", "rules" or "parts"), resolved; it does not
    move while the process runs, so it is looked up once."""
    return (_PACKAGE / _LAYOUT[name]).resolve()
