"""The real H200 VM (shared/data/real-machines/h200-vm, read in place; skipped when absent): its
capture imports to a draft that validates, generates NCCL's topology file with the machine's own
GPU attributes, and diffs clean against NCCL's own dump of the node and against the capture."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from tests.shared_data import REAL_MACHINES

MACHINE = REAL_MACHINES / "h200-vm"
CAPTURE, NCCL_DUMP = MACHINE / "capture", MACHINE / "nccl-2.28.9-dump.xml"
pytestmark = pytest.mark.skipif(not CAPTURE.is_dir(), reason="the real H200 capture is not beside this checkout (../shared)")


@pytest.fixture
def draft(tmp_path, capsys) -> Path:
    path = tmp_path / "h200.yaml"
    assert main(["import", "--sysfs-root", str(CAPTURE), "-o", str(path)]) == 0
    capsys.readouterr()
    return path


def attributes(text: str, tag: str) -> dict[str, str]:
    (element,) = re.findall(rf"<{tag} ([^>]*?)/?>", text)
    return dict(re.findall(r'(\w+)="([^"]*)"', element))


def test_the_capture_drafts_the_gpu_and_the_virtio_nic_and_validates_clean(draft, capsys):
    text = draft.read_text()
    assert "part: h200-sxm-141gb\n  pcie: {upstream: cpu0, bus: '0000:00:06.0'}" in text
    assert "role: ingestion\n  transport: tcp\n  interface: eth0\n  pcie: {upstream: cpu0, bus: '0000:00:03.0'}" in text
    assert main(["validate", str(draft)]) == 0
    assert "error[" not in capsys.readouterr().err


def test_the_generated_topology_file_has_the_machines_gpu_and_leaves_the_virtio_nic_and_gdr_to_nccl(draft, tmp_path, capsys):
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    assert "nccl-topo.xml" not in capsys.readouterr().err  # nothing waits for it
    ours = (tmp_path / "out" / "h200" / "nccl-topo.xml").read_text()
    theirs = NCCL_DUMP.read_text()
    gpu, nccl_gpu = attributes(ours, "gpu"), attributes(theirs, "gpu")
    assert gpu == {key: nccl_gpu[key] for key in ("dev", "sm", "rank")}  # sm="90": what NCCL reads of the GPU
    # gdr is the node's driver state (NCCL detects gdr="1" there): left to detection, not written opposite
    assert "<!-- gdr is left out (no backend network declares GPUDirect): NCCL fills it in from detection -->" in ours
    assert nccl_gpu["gdr"] == "1" and "gdr" not in gpu
    # eth0 is virtio, not a PCI device: NCCL attaches it to the first CPU itself, as its own dump shows
    assert "<net" not in ours and '<net name="eth0"' in theirs
    assert attributes(ours, "pci")["busid"] == attributes(theirs, "pci")["busid"] == "0000:00:06.0"


def test_the_draft_diffs_clean_against_nccls_dump_of_the_same_node_numa_minus_one_included(draft, capsys):
    assert main(["diff", str(draft), str(NCCL_DUMP)]) == 0
    assert "D104" not in capsys.readouterr().out


def test_the_draft_diffs_clean_against_the_capture(draft, capsys):
    assert main(["diff", str(draft), "--sysfs-root", str(CAPTURE)]) == 0


@pytest.mark.parametrize("bus", ["0000:00:05.0", "0000:00:03.7"])
def test_a_frontend_nic_at_a_bus_id_the_machine_has_not_there_is_drift(bus, draft, tmp_path, capsys):
    moved = tmp_path / "moved.yaml"
    moved.write_text(draft.read_text().replace("bus: '0000:00:03.0'", f"bus: '{bus}'"))
    assert main(["diff", str(moved), "--sysfs-root", str(CAPTURE), "--format", "github"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert f"title=D103 device-placement::fe0 ({bus}) is under cpu0 in the spec, but 0000:00:03.0 under NUMA node 0 in the machine" in line
