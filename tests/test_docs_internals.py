"""docs/internals.md: its Python examples run in a fresh interpreter, and its tables of
`plan_for`'s arguments and `node_platforms`' parameters are the real ones."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.generate.engine import plan_for
from hwspec.generate.registry import builtin_generators
from hwspec.testing import node_specs

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "internals.md").read_text()


def section(heading: str) -> str:
    """The page's text under `### {heading}`, up to the next heading."""
    return PAGE.split(f"\n### {heading}\n", 1)[1].split("\n#", 1)[0]


def first_column(text: str) -> list[str]:
    """The backquoted names in the first column of the table rows of `text`."""
    return [name for row in re.findall(r"^\| ([^|]+) \|", text, re.MULTILINE) for name in re.findall(r"`(\w+)`", row)]


@pytest.mark.slow  # a fresh interpreter per example
@pytest.mark.parametrize("index", range(4))
def test_each_python_example_runs_in_a_fresh_interpreter(index):
    """`import hwspec` alone, from the repository root, as a user would."""
    examples = re.findall(r"^```python\n(.*?)^```", PAGE, re.DOTALL | re.MULTILINE)
    assert len(examples) == 4
    result = subprocess.run([sys.executable, "-c", examples[index]], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_plan_for_table_lists_its_keyword_arguments_and_every_generator():
    text = section("Generating in memory: `plan_for`")
    keywords = [name for name in inspect.signature(plan_for).parameters if name != "topology"]
    assert first_column(text) == keywords
    (only_row,) = [row for row in text.splitlines() if row.startswith("| `only` |")]
    assert sorted(re.findall(r"`([a-z-]+)`", only_row.split("|")[3])) == sorted(g.name for g in builtin_generators())


def test_the_node_platforms_table_lists_every_parameter():
    text = section("Property tests: `node_platforms` and its parameters")
    assert first_column(text) == list(inspect.signature(node_specs).parameters)


# ---------------------------------------------------------------- the generated Python API section


def class_section(page: str, name: str) -> str:
    return re.split(rf"\n#### {name}(?: \([\w, ]+\))? {{ #{name.lower()} }}\n", page)[1].split("\n#", 1)[0]


def test_internals_has_the_marker_the_hook_fills_with_the_python_api_once():
    from hwspec.cli import docsgen

    assert PAGE.count(docsgen.MODEL_REFERENCE_MARKER) == 1
    assert docsgen.GENERATED_SECTIONS["internals.md"] == {docsgen.MODEL_REFERENCE_MARKER: docsgen.model_reference}
    assert "](#the-resolved-model-classes-and-attributes)" in PAGE
    assert docsgen.model_reference().startswith("## The resolved model: classes and attributes\n")


def test_every_public_attribute_of_every_model_class_has_a_row_with_a_description():
    """Every field and every public name `dir()` shows on each dataclass of hwspec.model.node and .cluster (fields,
    inherited ones too, properties, methods) is a row of its class's table, and says what it is."""
    import dataclasses

    import hwspec.model.cluster
    import hwspec.model.node
    from hwspec.cli import docsgen

    page = docsgen.model_reference()
    documented = 0
    for module in (hwspec.model.node, hwspec.model.cluster):
        for name, cls in vars(module).items():
            if name.startswith("_") or not dataclasses.is_dataclass(cls) or cls.__module__ != module.__name__:
                continue
            section = class_section(page, name)
            rows = {row.split("(")[0]: description for row, description in
                    re.findall(r"^\| `([^`]+)` \| `[^`]*` \| (.*) \|$", section, re.MULTILINE)}
            public = {attribute for attribute in [*dir(cls), *(f.name for f in dataclasses.fields(cls))] if not attribute.startswith("_")}
            assert set(rows) == public, name
            assert all(rows.values()), (name, [attribute for attribute, text in rows.items() if not text])
            documented += len(rows)
    assert documented >= 200  # 236 when this was written


def test_the_model_rows_say_the_flat_names_and_the_units():
    from hwspec.cli import docsgen

    page = docsgen.model_reference()
    nic = class_section(page, "Nic")
    assert "| `bus` | `str | None` | PCI bus id (`0000:18:00.0`); None: `bus: unknown` (the source gives no bus id). |" in nic
    assert "| `speed` | `float | None` | Bytes/s per direction per port; None where unknown. |" in nic
    gpu = class_section(page, "Gpu")
    assert "| `hbm_capacity` | `int | None` | HBM (device memory) in bytes; None where unknown. |" in gpu
    assert "| `c2c_bandwidth` | `float (property)` | NVLink-C2C bandwidth to `c2c_socket`, bytes/s per direction (0 without C2C). |" in gpu
    assert "\n#### Gpu (PcieDevice) { #gpu }\n" in page
    assert page.index("\n#### Platform ") < page.index("\n#### PcieLink ")  # the top class first


def test_every_public_name_of_hwspec_testing_is_listed_with_each_strategys_parameters():
    import hwspec.testing
    from hwspec.cli import docsgen

    page = docsgen.model_reference().split("\n## Strategies: `hwspec.testing`\n", 1)[1]
    for name in hwspec.testing.__all__:
        value = getattr(hwspec.testing, name)
        section = page.split(f"\n### {name} {{ #{name.lower()} }}\n", 1)[1].split("\n### ", 1)[0]
        if inspect.isfunction(value):
            block = section.split("```python\n", 1)[1].split("```", 1)[0]
            assert block.startswith(f"{name}(")
            for parameter in inspect.signature(value).parameters:
                assert re.search(rf"\b{parameter}\b", block), (name, parameter)
            assert docsgen.plain(inspect.getdoc(value)) in section, name
    nodes = page.split("\n### node_specs { #node_specs }\n", 1)[1]
    assert "    min_gpus: int = 1,\n    max_gpus: int = 16,\n" in nodes
    assert "ForwardRef" not in page and "hypothesis.strategies." not in page  # every strategy's type as written
    assert "hostile_node_specs(**kwargs: Any) -> st.SearchStrategy[tuple[Path_, str, dict[str, Any]]]\n" in page
