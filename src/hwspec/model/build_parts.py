"""Write `data/parts.jsonl`: the built-in parts catalogue validated once, when hwspec is built.

    python -m hwspec.model.build_parts          # after changing data/parts/*.yaml or the part models

Each built-in parts file is validated from its YAML as a site's is (`hwspec.model.load`) and
its parts recorded with the SHA-256 of its bytes (`hwspec.model.parts.render_prebuilt`).
tests/test_prebuilt_parts.py fails while the committed file differs from what this writes.
"""

from __future__ import annotations

from hwspec import content
from hwspec.atomic import write_atomic_bytes
from hwspec.diagnostics import display_path
from hwspec.model.load import load_parts_file, parts_files
from hwspec.model.parts import prebuilt_path, render_prebuilt
from hwspec.source.loader import read_regular_file


def render() -> str:
    """The text of `data/parts.jsonl` for the built-in parts files as they are now. Raises
    HwspecError when one of them does not validate."""
    paths = parts_files(content.builtin_dir("parts"))
    return render_prebuilt([(path.name, read_regular_file(path), load_parts_file(path).parts) for path in paths])


def main() -> int:
    write_atomic_bytes(prebuilt_path(), render().encode())
    print(f"wrote {display_path(prebuilt_path())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
