"""Where built-in content (templates, validators, parts) lives.

In a source checkout it is the top-level `templates/`, `validators/` and `platforms/parts/`;
in an installed wheel the same files are carried under `hwspec/_content/`. Sites add their
own directories with command-line flags; these are only the defaults.
"""

from __future__ import annotations

import functools
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_SOURCE_LAYOUT = {"templates": "templates", "validators": "validators", "parts": "platforms/parts"}


@functools.cache
def builtin_dir(name: str) -> Path:
    """The built-in directory `name` ("templates", "validators" or "parts"), resolved; it
    does not move while the process runs, so it is looked up once."""
    packaged = _PACKAGE / "_content" / name
    if packaged.is_dir():
        return packaged.resolve()
    return (_PACKAGE.parent / _SOURCE_LAYOUT[name]).resolve()
