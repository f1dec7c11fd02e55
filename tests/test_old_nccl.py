"""Where a generated file meets a known limit of an older NCCL, nccl.conf says which release the
node needs (issue 34, item 6): more than 16 collective NICs (p5's 32 EFA devices) need NCCL 2.21
or later (2.18.1 used 16 of 32 through PXN; before 2.21 a 1,024-byte path print buffer overflows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
NOTE = ("# needs NCCL 2.21 or later: with 32 NICs (more than 16), NCCL before 2.21 uses only part of them (2.18.1's "
        "search used 16 of a p5's 32, through PXN) and overflows the 1,024-byte buffer it prints each GPU's paths into\n")


def _conf(name: str) -> str:
    return next(iter(plan_for(topology_of(load_platform(ROOT / "platforms" / name)), only=["nccl-conf"]).values()))


def test_a_node_with_32_nics_says_it_needs_nccl_2_21() -> None:
    assert NOTE in _conf("aws-p5-48xlarge.yaml")


@pytest.mark.parametrize("name", ["hgx-h100.yaml", "oci-bm-gpu-h100-8.yaml"])  # 8 NICs; 16 ports
def test_a_node_with_at_most_16_nics_names_no_release(name: str) -> None:
    assert "needs NCCL" not in _conf(name)
