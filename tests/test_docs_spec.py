"""docs/spec.md: its examples run as written (moved from the README's "The spec language")."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from hwspec.source.loader import load_yaml_text
from hwspec.spec.models import NodeSpec
from tests.cli import run_hwspec

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "spec.md").read_text()


def yaml_block(starts: str) -> str:
    """The one ```yaml block of the page that starts with `starts`."""
    (found,) = [b for b in re.findall(r"^```yaml\n(.*?)^```", PAGE, re.DOTALL | re.MULTILINE) if b.startswith(starts)]
    return found


def validate(path: Path) -> subprocess.CompletedProcess:
    return run_hwspec("validate", path.name, cwd=path.parent)


def test_the_outline_names_only_real_sections():
    outline = load_yaml_text(yaml_block("sockets:            #"), "docs/spec.md").data
    assert outline and set(outline) <= set(NodeSpec.model_fields)


def test_the_repeat_example_replaces_zionex_gpus_and_validates_clean(tmp_path):
    example = yaml_block("gpus:\n  - repeat: {g: 0..7}\n")
    text = (ROOT / "platforms" / "zionex.yaml").read_text()
    start = text.index("\ngpus:\n") + 1
    end = re.search(r"\n[a-z_]+:", text[start + 5:]).start() + start + 5 + 1
    (tmp_path / "zionex.yaml").write_text(text[:start] + example + text[end:])
    result = validate(tmp_path / "zionex.yaml")
    assert (result.returncode, result.stdout) == (0, ""), result.stdout


def test_the_table_example_gives_the_same_gpus_as_the_arithmetic_one_and_validates_clean(tmp_path):
    from hwspec.source.expand import expand

    table, arithmetic = yaml_block("gpus:\n  - repeat: {g: 0..7, bus: [\""), yaml_block("gpus:\n  - repeat: {g: 0..7}\n")
    gpus = expand(load_yaml_text(table, "docs/spec.md")).data["gpus"]
    assert gpus == expand(load_yaml_text(arithmetic, "docs/spec.md")).data["gpus"]
    assert [g["pcie"]["bus"] for g in gpus][::3] == ["0000:14:00.0", "0000:5c:00.0", "0000:d4:00.0"]
    text = (ROOT / "platforms" / "zionex.yaml").read_text()
    start = text.index("\ngpus:\n") + 1
    end = re.search(r"\n[a-z_]+:", text[start + 5:]).start() + start + 5 + 1
    (tmp_path / "zionex.yaml").write_text(text[:start] + table + text[end:])
    result = validate(tmp_path / "zionex.yaml")
    assert (result.returncode, result.stdout) == (0, ""), result.stdout


def test_the_table_of_numbers_gives_the_same_gpus_as_the_table_of_texts():
    from hwspec.source.expand import expand

    numbers, texts = yaml_block("gpus:\n  - repeat: {g: 0..7, bus: [0x"), yaml_block("gpus:\n  - repeat: {g: 0..7, bus: [\"")
    assert expand(load_yaml_text(numbers, "docs/spec.md")).data == expand(load_yaml_text(texts, "docs/spec.md")).data


def test_the_environment_example_validates_clean_on_a_platform(tmp_path):
    fixture = (ROOT / "tests" / "fixtures" / "rules" / "base_2gpu.yaml").read_text()
    (tmp_path / "p.yaml").write_text(fixture + yaml_block("environment:"))
    result = validate(tmp_path / "p.yaml")
    assert (result.returncode, result.stdout) == (0, ""), result.stdout


def test_the_page_links_the_generated_field_reference():
    assert "[field reference](reference/fields.md)" in PAGE


def test_the_connectx8_switch_example_is_a_node_that_validates_with_its_gpus_and_ports_on_one_switch(tmp_path):
    example = yaml_block("pcie:\n  - id: cx8sw0\n")
    node = ("hwspec: 1\nkind: node\nname: mgx-cx8\n"
            "sockets:\n  - {id: cpu0, part: epyc-9575f, numa_node: 0, cpus: 0-127, memory: {capacity: 768 GiB, bandwidth: 614.4 GB/s}}\n"
            + example + "backend: {transport: rocev2, gpudirect: true}\n")
    (tmp_path / "mgx-cx8.yaml").write_text(node)
    result = validate(tmp_path / "mgx-cx8.yaml")
    assert (result.returncode, result.stdout) == (0, ""), result.stdout
    from hwspec.model.load import load_platform
    from hwspec.topology import topology_of

    topology = topology_of(load_platform(tmp_path / "mgx-cx8.yaml"))
    assert [topology.path_type(f"gpu{g}", f"cx8p{g + 1}") for g in (0, 1)] == ["PIX", "PIX"]
