"""docs/internals.md: its Python examples run in a fresh interpreter, and its tables of
`plan_for`'s arguments and `node_platforms`' parameters are the real ones."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.generate.engine import generators, plan_for
from hwspec.testing import node_specs

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "internals.md").read_text()


def section(heading: str) -> str:
    """The page's text under `### {heading}`, up to the next heading."""
    return PAGE.split(f"\n### {heading}\n", 1)[1].split("\n#", 1)[0]


def first_column(text: str) -> list[str]:
    """The backquoted names in the first column of the table rows of `text`."""
    return [name for row in re.findall(r"^\| ([^|]+) \|", text, re.MULTILINE) for name in re.findall(r"`(\w+)`", row)]


@pytest.mark.parametrize("index", range(3))
def test_each_python_example_runs_in_a_fresh_interpreter(index):
    """`import hwspec` alone, from the repository root, as a user would."""
    examples = re.findall(r"^```python\n(.*?)^```", PAGE, re.DOTALL | re.MULTILINE)
    assert len(examples) == 3
    result = subprocess.run([sys.executable, "-c", examples[index]], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_plan_for_table_lists_its_keyword_arguments_and_every_generator():
    text = section("Generating in memory: `plan_for`")
    keywords = [name for name in inspect.signature(plan_for).parameters if name != "topology"]
    assert first_column(text) == keywords
    (only_row,) = [row for row in text.splitlines() if row.startswith("| `only` |")]
    assert sorted(re.findall(r"`([a-z-]+)`", only_row.split("|")[3])) == sorted(generators())


def test_the_node_platforms_table_lists_every_parameter():
    text = section("Property tests: `node_platforms` and its parameters")
    assert first_column(text) == list(inspect.signature(node_specs).parameters)
