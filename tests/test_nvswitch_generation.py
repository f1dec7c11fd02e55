"""The NVSwitch generation comes from the GPUs' parts unless the file states it (issue 34, item 5):
an HGX H100 file without `baseboard.nvswitch_generation` has the same all-reduce bound (NVLink
SHARP, 700 GB/s busbw) as with it; where the parts do not say, or the file says otherwise, rule
HW308 says so at the baseboard."""

from __future__ import annotations

import re
from pathlib import Path

from hwspec.perf import roofline as rf
from hwspec.testing import check_node_text, load_node_text
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
HGX = (ROOT / "platforms" / "hgx-h100.yaml").read_text()
WRITTEN = re.compile(r"  nvswitch_generation: \{.*\}\n")
WITHOUT = WRITTEN.sub("", HGX)


def _all_reduce(text: str) -> tuple[float, str]:
    doc = rf.roofline(topology_of(load_node_text(text)))["intra_node_collectives"]["all_reduce"]
    return doc["busbw_bytes_per_s"], doc["algorithm"]


def _hw308(text: str) -> list[str]:
    return [d.format() for d in check_node_text(text, file="hgx.yaml") if "HW308" in d.format()]


def test_an_hgx_h100_without_the_generation_takes_its_gpus_and_keeps_nvlink_sharp() -> None:
    assert WITHOUT != HGX
    assert load_node_text(WITHOUT).baseboard.nvswitch_generation == 3
    assert _all_reduce(WITHOUT) == _all_reduce(HGX) == (700e9, "NVLS")
    assert _hw308(WITHOUT) == []


def test_a_written_generation_wins_and_a_different_one_is_reported_at_its_line() -> None:
    text = WRITTEN.sub("  nvswitch_generation: 2\n", HGX)
    assert _all_reduce(text) == (450e9, "Ring")
    assert _hw308(text) == ["hgx.yaml:64:24: warning[HW308 nvswitch-generation]: baseboard: nvswitch_generation is 2, "
                            "but the GPUs' nvlink4 attaches to generation-3 NVSwitch chips\n"
                            "  hint: write nvswitch_generation: 3, or leave it out to take the GPUs'"]


def test_gpus_the_parts_do_not_describe_leave_the_generation_unknown_with_a_finding_at_the_baseboard() -> None:
    text = WITHOUT.replace("part: h100-sxm5-80gb", "part: unknown\n    override: {vendor: nvidia}")
    assert load_node_text(text).baseboard.nvswitch_generation is None
    assert _hw308(text) == ["hgx.yaml:61:3: warning[HW308 nvswitch-generation]: baseboard: NVSwitch generation unknown "
                            "(the GPUs' NVLink generation is unknown): the all-reduce bounds leave out NVLink SHARP "
                            "(NCCL's NVLS), which third-generation and later switches have\n"
                            "  hint: give 'nvswitch_generation:' (1 V100, 2 A100, 3 H100/H200, 4 Blackwell), or name the GPU part"]
