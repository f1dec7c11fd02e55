"""Every number a platform file states is finite and within what the outputs can carry, checked
at validate time: a value `validate` passes never crashes `generate` or `roofline`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.spec import units

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ROOT / "platforms"


def validate(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, list[str]]:
    status = main(["validate", str(path)])
    return status, capsys.readouterr().out.splitlines()


def test_size_of_1e400_bytes_is_an_e110_at_the_value_not_a_generate_crash(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (PLATFORMS / "zionex.yaml").read_text().replace("capacity: {value: 384 GiB", "capacity: {value: 1e400 B")
    Path("z.yaml").write_text(text.replace("  memory: 1.5 TiB\n", ""))
    status, lines = validate(capsys, Path("z.yaml"))
    assert status == 1
    assert lines[0] == "z.yaml:26:25: error[E110]: sockets[0].memory.capacity: a size must be at most 1 PiB, got '1e400 B'"


@pytest.mark.parametrize("validator, written, message", [
    (units.validate_bytes, "1e400 B", "a size must be at most 1 PiB, got '1e400 B'"),
    (units.validate_bytes, "1025 TiB", "a size must be at most 1 PiB, got '1025 TiB'"),
    (units.validate_byte_rate, "1e300 GB/s", "a bandwidth must be at most 1000 TB/s, got '1e300 GB/s'"),
    (units.validate_byte_rate, "8001 Tb/s", "a bandwidth must be at most 1000 TB/s, got '8001 Tb/s'"),
    (units.validate_flop_rate, "2 EFLOPS", "a compute rate must be at most 1 EFLOPS, got '2 EFLOPS'"),
    (units.validate_transfer_rate, "1001 GT/s", "a transfer rate must be at most 1000 GT/s, got '1001 GT/s'"),
    (units.validate_duration, "86401 s", "a duration must be at most 1 day (86400 s), got '86401 s'"),
])
def test_a_quantity_above_its_maximum_is_refused_saying_the_maximum(validator, written, message):
    with pytest.raises(Exception) as error:
        validator(written)
    assert error.value.message() == message


@pytest.mark.parametrize("validator, maximum", [
    (units.validate_bytes, "1 PiB"), (units.validate_byte_rate, "1000 TB/s"), (units.validate_flop_rate, "1 EFLOPS"),
    (units.validate_transfer_rate, "1000 GT/s"), (units.validate_duration, "86400 s"),
])
def test_a_quantity_at_its_maximum_is_accepted(validator, maximum):
    assert validator(maximum) > 0


@pytest.mark.parametrize("written, shown", [(".nan", "nan"), (".inf", "inf"), ("1.0e+400", "inf")])  # a bare 1e400: E110 in the loader
def test_plain_number_nan_inf_or_1e400_is_an_e110_not_accepted(tmp_path, capsys, monkeypatch, written, shown):
    monkeypatch.chdir(tmp_path)
    text = (PLATFORMS / "hgx-h100.yaml").read_text().replace("max_oversubscription: 4", f"max_oversubscription: {written}")
    Path("h.yaml").write_text(text)
    status, lines = validate(capsys, Path("h.yaml"))
    assert status == 1
    assert re.sub(r"^h\.yaml:\d+:\d+: ", "", lines[0]) == (
        f"error[E110]: pcie[4].max_oversubscription: Input should be a finite number, got {shown}")


def test_a_node_at_every_maximum_validates_generates_and_its_roofline_is_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (PLATFORMS / "zionex.yaml").read_text().replace("  memory: 1.5 TiB\n", "")
    text = re.sub(r"\b[0-9.]+ (GiB|TiB|TB|GB|MiB|MB)\b(?!/)", "1 PiB", text)
    text = re.sub(r"\b[0-9.]+ (GB/s|Gb/s|TB/s|MB/s)", "1000 TB/s", text)
    Path("max.yaml").write_text(text)
    assert main(["generate", "--no-svg", "-o", "out", "max.yaml"]) == 0
    assert main(["roofline", "--format", "json", "max.yaml"]) == 0
    json.loads(capsys.readouterr().out)
