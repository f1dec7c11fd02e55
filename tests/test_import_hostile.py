"""Hostile inputs of `hwspec import` and `hwspec diff`: whatever an input file's name and free
text hold, the draft loads back as exactly what import meant to write (the hostile text only
as the values it was, or escaped in a `# note:` comment), and every report stays one line
per finding."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from hwspec import content
from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError, display_path
from hwspec.live.draft import draft_platform, draft_text
from hwspec.live.merge import read_inputs
from hwspec.model.parts import load_catalogue
from hwspec.source.expand import expand
from hwspec.source.loader import load_yaml_text
from hwspec.testing import ImportInput, hostile_import_inputs
from hwspec.text import comment, visible

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "tests/data/live"
SPEC = ROOT / "tests/fixtures/spec/minimal_node.yaml"
SARIF_SCHEMA = ROOT / "tests/data/sarif-schema-2.1.0.json"
DRAFT_KEYS = ["hwspec", "kind", "name", "title", "source", "sources", "sockets", "pcie", "baseboard", "gpus", "nvlink", "nics", "backend"]
PROPERTY = settings(max_examples=settings().max_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def catalogue():
    return load_catalogue([content.builtin_dir("parts")])


def write(directory: Path, name: bytes | str, data: bytes | str) -> Path:
    """`data` in the file `name` (bytes: any name a file system holds) of `directory`."""
    raw_name = name if isinstance(name, bytes) else name.encode()
    path = Path(os.fsdecode(os.path.join(os.fsencode(directory), raw_name)))
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def nccl_with_a_note() -> str:
    """minimal-node's NCCL dump with NVLink counts that disagree: the draft gets two notes."""
    return (LIVE / "minimal-node.nccl.xml").read_text().replace('count="12"', 'count="6"', 1)


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


def loaded(text: str) -> dict:
    return load_yaml_text(text, "draft.yaml").data


def expanded(text: str) -> dict:
    return expand(load_yaml_text(text, "draft.yaml")).data


def values(data):
    """`data` with each annotated value (`{value: ..., assumed: ...}`) as its value, as expansion reads it."""
    if isinstance(data, dict):
        if set(data) == {"value", "assumed"}:
            return values(data["value"])
        return {key: values(value) for key, value in data.items()}
    if isinstance(data, list):
        return [values(item) for item in data]
    return data


def header(text: str) -> list[str]:
    return text[: text.index("\nhwspec: 1\n")].split("\n")


# ------------------------------------------------------------------ one class of text at a time


def test_newline_in_input_file_name_stays_inside_the_note_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "x\nenvironment: {LD_PRELOAD: x.so}\n#.xml", nccl_with_a_note())
    status, _, err = run("import", "x\nenvironment: {LD_PRELOAD: x.so}\n#.xml", "-o", "draft.yaml")
    text = (tmp_path / "draft.yaml").read_text()
    assert status == 0, err
    assert list(loaded(text)) == DRAFT_KEYS
    assert header(text)[3:] == [
        "# note: x\\x0aenvironment: {LD_PRELOAD: x.so}\\x0a#.xml:6: NVLink count 6 from 0000:14:00.0 to 0000:1c:00.0 but 12 back: "
        "the smaller is used",
        "# note: x\\x0aenvironment: {LD_PRELOAD: x.so}\\x0a#.xml:16: NVLink count 12 from 0000:1c:00.0 to 0000:14:00.0 but 6 back: "
        "the smaller is used"]
    assert loaded(text)["sources"] == {"input0": "x\\x0aenvironment: {LD_PRELOAD: x.so}\\x0a#.xml: NCCL topology XML"}
    assert "hwspec: note: x\\x0aenvironment: {LD_PRELOAD: x.so}\\x0a#.xml:6: NVLink count 6" in err


@pytest.mark.parametrize("line_break", ["\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c"])
def test_every_line_break_yaml_or_python_knows_stays_inside_the_note_comment(line_break, tmp_path):
    path = write(tmp_path, f"x{line_break}environment: {{LD_PRELOAD: x.so}}{line_break}#.xml", nccl_with_a_note())
    text, notes = draft_text(read_inputs([path]), catalogue(), "imported")
    assert len(notes) == 2
    assert text.splitlines() == text.rstrip("\n").split("\n")
    assert header(text)[3:] == [f"# note: {comment(note)}" for note in notes]
    assert list(loaded(text)) == DRAFT_KEYS


@pytest.mark.parametrize(("name", "shown"), [(b"in\xff.xml", "in\\xff.xml"), (b"in${n}.xml", "in$\\x7bn}.xml")])
def test_a_non_utf8_or_expression_input_file_name_is_written_escaped_and_the_draft_validates(name, shown, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, name, (LIVE / "minimal-node.nccl.xml").read_bytes())
    status, _, err = run("import", os.fsdecode(name), "-o", "draft.yaml")
    assert status == 0, err
    assert loaded((tmp_path / "draft.yaml").read_text())["source"] == f"hwspec import of {shown} (NCCL topology XML)"


def test_line_breaks_in_an_nccl_net_name_load_back_as_that_name_and_validate_refuses_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    xml = (LIVE / "minimal-node.nccl.xml").read_text().replace('name="mlx5_0"', 'name="mlx5_0&#10;environment: {LD_PRELOAD: x.so}&#x85;#"')
    write(tmp_path, "dump.xml", xml)
    status, _, err = run("import", "dump.xml", "-o", "draft.yaml")
    data = loaded((tmp_path / "draft.yaml").read_text())
    assert status == 1
    assert list(data) == DRAFT_KEYS
    assert data["nics"][0]["device"] == "mlx5_0\nenvironment: {LD_PRELOAD: x.so}\x85#"
    assert ("draft.yaml:41:11: error[E110]: nics[0].device: String should have at most 15 characters, "
            "got 'mlx5_0\\nenvironment: {LD_PRELOAD: x.so}\\x85#'\n") in err


TOPO_M = ("\tGPU0\tGPU1\tNIC0\tNIC1\x1b]0;pwned\x07\tCPU Affinity\tNUMA Affinity\n"
          "GPU0\t X \tNV12\tPIX\tPIX\t0-15\t0\nGPU1\tNV12\t X \tPIX\tPIX\t0-15\t0\nNIC0\tPIX\tPIX\t X \tPIX\n"
          "\nNIC Legend:\n\n  NIC0: mlx5_0'\"#:{}[]&*!|>%@`\x00\x7f\n")


def test_a_topo_m_column_header_with_a_terminal_escape_is_shown_escaped_and_a_nic_name_loads_back_as_itself(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "topo.txt", TOPO_M)
    status, _, err = run("import", "topo.txt", "-o", "draft.yaml")
    text = (tmp_path / "draft.yaml").read_text()
    assert status == 1
    assert err.startswith("topo.txt:1:1: warning[I103 input-value]: column NIC1\\x1b]0;pwned\\x07 has no row\n")
    assert "\x1b" not in err + text
    assert [nic.get("device") for nic in loaded(text)["nics"]] == ["mlx5_0'\"#:{}[]&*!|>%@`\x00\x7f", None]


def test_an_lstopo_model_name_and_device_name_with_line_breaks_load_back_as_themselves(tmp_path):
    xml = (LIVE / "minimal-node.lstopo.xml").read_text()
    xml = xml.replace("[10de:20b0]", "[10de:fff0]").replace('value="NVIDIA A100-SXM4-40GB"', 'value="A100&#10;environment: {}&#x2028;#"')
    xml = xml.replace('name="mlx5_0"', 'name="mlx5_0&#x85;#"')
    text, _ = draft_text(read_inputs([write(tmp_path, "lstopo.xml", xml)]), catalogue(), "imported")
    data = expanded(text)
    assert list(data) == ["hwspec", "kind", "name", "title", "source", "sources", "sockets", "pcie", "gpus", "nics", "backend"]
    assert [gpu["override"]["model_name"] for gpu in data["gpus"]] == ["A100\nenvironment: {}\u2028#"] * 2
    assert data["nics"][0]["device"] == "mlx5_0\x85#"


# ------------------------------------------------------------------ properties over hostile inputs


def written(directory: Path, case: ImportInput) -> tuple[Path, Path]:
    """The hostile and the benign input of `case`, saved in `directory`."""
    return write(directory, case.name, case.data), write(directory, case.benign_name, case.benign_data)


def with_hostile_texts(value: Any, texts: list[tuple[str, str]]) -> Any:
    """`value` with each benign text replaced by its hostile counterpart, in every string."""
    if isinstance(value, dict):
        return {key: with_hostile_texts(item, texts) for key, item in value.items()}
    if isinstance(value, list):
        return [with_hostile_texts(item, texts) for item in value]
    if isinstance(value, str):
        for benign, hostile in texts:
            value = value.replace(benign, hostile)
    return value


@PROPERTY
@given(hostile_import_inputs())
def test_a_draft_from_hostile_inputs_loads_back_as_exactly_what_import_meant_to_write(tmp_path_factory, case):
    """The draft text loads (with hwspec's loader) as the draft import built, with each note as
    one escaped comment line and no other line break; that draft is the draft of the same input
    with benign names, with the hostile texts where the benign ones were; and it expands to
    itself, unless a hostile text holds `${...}`, which the loader refuses at its place."""
    hostile_path, benign_path = written(tmp_path_factory.mktemp("inputs"), case)
    parts = catalogue()
    machine = read_inputs([hostile_path])
    assert [d.format() for d in machine.problems if d.severity.label == "error"] == []
    text, notes = draft_text(machine, parts, "imported")
    meant = draft_platform(read_inputs([hostile_path]), parts, "imported")
    assert loaded(text) in (meant.spec, meant.flat)
    assert text.splitlines() == text.rstrip("\n").split("\n")
    assert header(text)[3:] == [f"# note: {comment(note)}" for note in notes]
    benign = draft_platform(read_inputs([benign_path]), parts, "imported")
    texts = [(display_path(benign_path), visible(display_path(hostile_path))), *case.texts]
    assert meant.flat == with_hostile_texts(benign.flat, texts)
    try:
        assert expanded(text) == values(meant.flat)
    except HwspecError as exc:
        assert any("${" in hostile for _, hostile in case.texts)
        assert {d.message.endswith("uses ${...} outside a repeat block") for d in exc.diagnostics} == {True}


def assert_one_line_per_finding(outputs: dict[str, str], spec: str) -> None:
    """The four report formats of one diff: valid, with the same findings, one line each."""
    findings = json.loads(outputs["json"])["findings"]
    text_lines = outputs["text"].split("\n")[:-1]
    assert outputs["text"].splitlines() == text_lines
    assert len([line for line in text_lines if not line.startswith("  hint: ")]) == len(findings), outputs["text"]
    assert all(re.match(r"\S.*:\d+:\d+: (error|warning|info)\[", line) for line in text_lines if not line.startswith("  hint: "))
    github_lines = outputs["github"].split("\n")[:-1]
    assert "\r" not in outputs["github"] and len(github_lines) == len(findings)
    assert all(line.startswith(("::error file=", "::warning file=")) for line in github_lines)
    assert len(json.loads(outputs["sarif"])["runs"][0]["results"]) == len(findings)
    assert {d["file"] for d in findings} >= {spec}


@PROPERTY
@given(hostile_import_inputs())
def test_diff_reports_stay_one_line_per_finding_whatever_the_inputs_names(tmp_path_factory, case):
    hostile_path, _ = written(tmp_path_factory.mktemp("inputs"), case)
    outputs = {fmt: run("diff", str(SPEC), str(hostile_path), "--format", fmt)[1] for fmt in ("text", "json", "github", "sarif")}
    assert_one_line_per_finding(outputs, display_path(SPEC))


def test_diff_reports_of_a_hostile_input_are_valid_in_every_format(tmp_path):
    xml = re.sub('link_width="16"', 'link_width="16&#10;::error file=x::forged&#x2028;"', nccl_with_a_note(), count=1)
    path = write(tmp_path, "dump\n::error file=x::forged\u2028.xml", xml)
    outputs = {}
    for fmt in ("text", "json", "github", "sarif"):
        status, outputs[fmt], err = run("diff", str(SPEC), str(path), "--format", fmt)
        assert status == 1 and "\n" not in err.rstrip("\n"), err
    assert_one_line_per_finding(outputs, display_path(SPEC))
    shown = visible(display_path(path))
    assert outputs["text"].split("\n")[:3] == [
        f"{display_path(SPEC)}:23:9: error[D106 nvlink-count]: gpu0-gpu1: 12 NVLinks in the spec, but 6 in the machine (seen at {shown}:6)",
        "  hint: an NVLink down: check 'nvidia-smi nvlink --status' and the baseboard",
        f"{shown}:3:5: warning[I103 input-value]: link_width=\"16\\x0a::error file=x::forged\\u2028\" is not a lane count"]
    jsonschema.validate(json.loads(outputs["sarif"]), json.loads(SARIF_SCHEMA.read_text()))
