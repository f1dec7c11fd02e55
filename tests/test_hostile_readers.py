"""Every reader linear in time and memory in its input, refusing before it reads what it will
refuse (issue 45, classes 10 and 11, and the 40,000-function capture): NVML's saved answers with
escaped bus ids are located in one pass (64 of them in 4 MiB took 45-70 s), hwloc's NVLink matrix
is held in a few bytes a value (32 MB took 1.3 GB), and `diff` and `import` of a captured tree
past a capture's file limit refuse it from its listings, as `capture` does (40,000 functions
took 7 s of CPU). Timings are in benchmarks/hostile_inputs.py; here, CPU-time growth and
Python's allocation peak."""

from __future__ import annotations

import json

from hwspec.live import nvml
from hwspec.live.observed import Machine
from tests.cpu_time import grows_linearly

ESCAPED_GPU = '{"bus": "\\u0030000:%02x:00.0", "name": "NVIDIA H100", "nvlinks": []}'
"""A GPU entry of nvml.json whose bus id starts with a JSON escape ("\\u0030" is "0")."""


def nvml_text(gpus: int) -> str:
    """nvml.json of `gpus` escaped entries, each followed by blank lines in proportion to `gpus`."""
    padding = "\n" * (64 * gpus)
    return '{"nvml": 1, "gpus": [\n' + (",\n" + padding).join(ESCAPED_GPU % (0x10 + i) for i in range(gpus)) + "\n]}\n"


def test_escaped_bus_ids_of_nvml_answers_are_located_in_time_linear_in_the_file():
    assert grows_linearly(lambda gpus: nvml.parse(nvml_text(gpus).encode(), "nvml.json", Machine()), 16, 64)


def test_an_escaped_bus_id_is_located_at_its_own_line():
    machine = Machine()
    text = nvml_text(2)
    nvml.parse(text.encode(), "nvml.json", machine)
    lines = [d.line for d in machine.problems]
    assert lines == [2, 2 + 1 + 128]  # each entry's own line, however its bus id is written
    assert [json.loads(text.splitlines()[line - 1].rstrip(","))["bus"] for line in lines] == ["0000:10:00.0", "0000:11:00.0"]
