"""Where ../shared/data lives is computed once, in tests/shared_data.py: no other test module or
benchmark builds a path to it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.shared_data import REAL_MACHINES, REAL_MEASUREMENTS, SHARED_DATA

ROOT = Path(__file__).resolve().parent.parent


def paths_built_to_shared(source: str) -> list[int]:
    """Lines where `source` joins a path with a literal naming shared/ (`X / "shared" ...`)."""
    return sorted(node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant) and isinstance(node.right.value, str)
            and node.right.value.split("/", 1)[0] == "shared")


def test_only_shared_data_py_builds_the_path_to_shared_data():
    modules = [*sorted((ROOT / "tests").glob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py"))]
    texts = {m: m.read_text() for m in modules}
    builders = {str(m.relative_to(ROOT)): lines for m, text in texts.items() if re.search(r"[\"']shared", text) and (lines := paths_built_to_shared(text))}
    assert builders == {"tests/shared_data.py": [11]}


def test_the_guard_sees_both_ways_of_writing_the_path():
    assert paths_built_to_shared('REAL = ROOT.parent / "shared" / "data"\nX = HERE / "shared/data/real-machines"\n') == [1, 2]


def test_the_folders_sit_beside_the_checkout():
    assert SHARED_DATA.relative_to(ROOT.parent).parts == ("shared", "data")
    assert (REAL_MACHINES.parent, REAL_MEASUREMENTS.parent) == (SHARED_DATA, SHARED_DATA)
