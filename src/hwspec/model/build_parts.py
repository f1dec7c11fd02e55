"""Write `data/parts.jsonl`: the built-in parts catalogue validated once, when hwspec is built.

    python -m hwspec.model.build_parts          # after changing data/parts/*.yaml or the part models

Each built-in parts file is validated from its YAML as a site's is (`hwspec.model.parts.load_parts_file`)
and its parts recorded with the SHA-256 of its bytes and of its records (`render_prebuilt`).
This module is the writer of that file and runs at build time only; `hwspec.model.parts`
reads it (`prebuilt_file`), checking each record's shape against what is written here.
tests/test_prebuilt_parts.py fails while the committed file differs from what this writes.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from hwspec import content
from hwspec.atomic import write_atomic_bytes
from hwspec.diagnostics import display_path
from hwspec.model.parts import PREBUILT_FORMAT, Part, Parts, load_parts_file, parts_files, prebuilt_path, records_sha256
from hwspec.source.loader import read_regular_file

if TYPE_CHECKING:
    from pydantic import BaseModel

PREBUILT_ABOUT = ("The built-in parts catalogue (data/parts/*.yaml) as it validates. Line 1: each file's SHA-256 (of the "
                  "bytes it was validated from), its part names by kind, the line of its first part and the SHA-256 of "
                  "its parts' lines (joined by line breaks); then one part a line: [kind, name, record]. Written by "
                  "`python -m hwspec.model.build_parts`, read by hwspec.model.parts.")


def render() -> str:
    """The text of `data/parts.jsonl` for the built-in parts files as they are now. Raises
    HwspecError when one of them does not validate."""
    paths = parts_files(content.builtin_dir("parts"))
    return render_prebuilt([(path.name, read_regular_file(path), load_parts_file(path).parts) for path in paths])


def render_prebuilt(files: list[tuple[str, bytes, Parts]]) -> str:
    """The text of `data/parts.jsonl` for built-in parts files given as (file name, bytes, parts)."""
    header: dict[str, Any] = {"about": PREBUILT_ABOUT, "format": PREBUILT_FORMAT, "files": {}}
    lines: list[str] = []
    for file, data, parts in files:
        records = [_line([kind, name, part_record(part)]) for kind, found in parts.items() for name, part in found.items()]
        header["files"][file] = {"sha256": hashlib.sha256(data).hexdigest(), "line": len(lines) + 2,
                                 "parts": {kind: list(found) for kind, found in parts.items()},
                                 "records": records_sha256([line.encode("utf-8") for line in records])}
        lines += records
    return "\n".join([_line(header), *lines]) + "\n"


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def part_record(part: Part) -> dict[str, Any]:
    """A part's record: its entry as written, its model (`model_record`), its positions and notes."""
    return {"raw": part.raw, "model": model_record(part.model),
            "positions": [[list(path), line, col] for path, (line, col) in part.positions.items()],
            "notes": [[list(path), note.source, note.assumed] for path, note in part.notes.items()]}


def model_record(model: BaseModel) -> dict[str, Any]:
    """Every field's value (a nested model as its own record) and the fields the file wrote."""
    values = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        values[name] = model_record(value) if hasattr(value, "model_fields_set") else value
    return {"written": sorted(model.model_fields_set), "values": values}


def main() -> int:
    write_atomic_bytes(prebuilt_path(), render().encode())
    print(f"wrote {display_path(prebuilt_path())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
