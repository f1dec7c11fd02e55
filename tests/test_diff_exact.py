"""`hwspec diff` compares the whole chain of PCIe bridges above a device with the spec's: a NIC
moved from the CPU into a GPU's switch, or one level deeper under the same switch, is a D103 at
the spec's `upstream` with both chains in the message."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.live.diff import diff
from hwspec.live.merge import read_inputs
from hwspec.model.load import load_platform

ROOT = Path(__file__).resolve().parent.parent
SPEC = "tests/fixtures/rules/base_2gpu.yaml"
DUMP = Path("tests/data/live/base-2gpu.nccl.xml")
FE0 = ('    <pci busid="0000:30:00.0" class="0x020000" link_speed="8.0 GT/s PCIe" link_width="16">\n'
       '      <nic>\n        <net name="eth0" dev="1" speed="100000" port="1" gdr="0"/>\n      </nic>\n    </pci>\n')
NIC0 = ('        <pci busid="0000:16:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="16">\n'
        '          <nic>\n            <net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1"/>\n          </nic>\n'
        '        </pci>\n')


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def findings(tmp_path: Path, dump: str) -> list[str]:
    live = tmp_path / "live.xml"
    live.write_text(dump)
    return [d.format() for d in diff(load_platform(SPEC), read_inputs([live]))]


def test_the_unchanged_dump_diffs_clean(tmp_path):
    assert findings(tmp_path, DUMP.read_text()) == []


def test_a_nic_moved_from_the_cpu_into_a_gpus_switch_is_a_d103_with_both_chains(tmp_path):
    text = DUMP.read_text()
    assert FE0 in text and NIC0 in text
    moved = text.replace(FE0, "").replace(NIC0, NIC0 + FE0)
    at = load_platform(SPEC).locate("fe0", "pcie", "upstream")
    assert findings(tmp_path, moved) == [
        f"{SPEC}:{at.line}:{at.col}: error[D103 device-placement]: fe0 (0000:30:00.0) is under cpu0 in the spec, "
        f"but under 0000:11:00.0 < 0000:10:00.0 < NUMA node 0 in the machine (seen at {tmp_path}/live.xml:15)"]


def test_a_nic_one_bridge_deeper_under_the_same_switch_is_a_d103(tmp_path):
    text = DUMP.read_text()
    assert NIC0 in text
    deeper = text.replace(NIC0, '<pci busid="0000:15:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">\n'
                          + NIC0 + "</pci>\n")
    at = load_platform(SPEC).locate("nic0", "pcie", "upstream")
    assert findings(tmp_path, deeper) == [
        f"{SPEC}:{at.line}:{at.col}: error[D103 device-placement]: nic0 (0000:16:00.0) is under sw0 (0000:11:00.0) < "
        "rp0 (0000:10:00.0) < cpu0 in the spec, but under 0000:15:00.0 < 0000:11:00.0 < 0000:10:00.0 < NUMA node 0 in the machine "
        f"(seen at {tmp_path}/live.xml:11)"]
