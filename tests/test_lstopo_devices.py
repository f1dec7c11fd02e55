"""What hwloc XML says, read as what it is: display controllers and coprocessors are not GPUs,
POWER CPUs keep their identity, link figures in GB/s are the exact PCIe links they are, and a
device with no NUMA locality is not put on NUMA node 0."""

from __future__ import annotations

import pytest

from hwspec.live.lstopo import parse
from hwspec.live.observed import Link, Machine
from tests.shared_data import REAL_MACHINES as REAL


def lstopo(devices: str, nodesets: str = "0x00000001", numa: str = "") -> Machine:
    """hwloc 2 XML of a machine with one NUMA node (or `numa`) and `devices` below a host bridge."""
    text = f"""<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000ffff" nodeset="{nodesets}">
    <info name="Architecture" value="x86_64"/>
    {numa or '<object type="NUMANode" os_index="0" cpuset="0x0000ffff" nodeset="0x00000001" local_memory="1024"/>'}
    <object type="Bridge" bridge_type="0-1" depth="0">
      <object type="Bridge" pci_busid="0000:10:00.0" pci_type="0604 [8086:2030] [0000:0000] 00" pci_link_speed="31.507692">
{devices}
      </object>
    </object>
  </object>
</topology>
"""
    machine = Machine()
    parse(text.encode(), "l.xml", machine)
    return machine


def pcidev(bus: str, pci_type: str, inner: str = "") -> str:
    return f'<object type="PCIDev" pci_busid="{bus}" pci_type="{pci_type}" pci_link_speed="15.753846">{inner}</object>'


def test_bmc_display_controllers_and_a_xeon_phi_are_not_gpus_and_accelerators_are():
    machine = lstopo("\n".join([
        pcidev("0000:11:00.0", "0300 [102b:0536] [15d9:1b95] 04"),     # Matrox G200eW3 (BMC graphics)
        pcidev("0000:12:00.0", "0300 [1a03:2000] [1a03:2000] 41"),     # ASPEED AST2500
        pcidev("0000:13:00.0", "0300 [1002:515e] [15d9:0000] 02"),     # ATI ES1000 on-board
        pcidev("0000:14:00.0", "0b40 [8086:225d] [8086:7d95] 00"),     # Xeon Phi coprocessor
        pcidev("0000:15:00.0", "0302 [10de:20b0] [10de:134f] a1"),     # A100 SXM (3D controller)
        pcidev("0000:16:00.0", "0300 [10de:2684] [1458:40e5] a1"),     # RTX 4090 (VGA)
        pcidev("0000:17:00.0", "0380 [1002:740c] [1002:0c34] 01"),     # MI250X (display controller)
        pcidev("0000:18:00.0", "0300 [1002:744c] [1002:0e3b] c8", '<object type="OSDev" name="rsmi0" osdev_type="1"/>'),
    ]))
    assert sorted(machine.gpus) == ["0000:15:00.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"]


@pytest.mark.parametrize("gb_per_s, forms", [
    ("31.507692", [(4, 16), (5, 8), (3, 32)]),
    ("15.753846", [(3, 16), (4, 8), (5, 4)]),
    ("7.876923", [(3, 8), (4, 4), (5, 2)]),
    ("8.000000", [(2, 16), (1, 32)]),
    ("60.500000", [(6, 8)]),
    ("17.300000", []),
])
def test_hwloc_link_figures_are_read_as_the_exact_links_they_are(gb_per_s, forms):
    assert Link(None, None, float(gb_per_s) * 1e9).forms() == forms


def test_a_device_whose_locality_is_several_numa_nodes_has_no_numa_node_not_node_0():
    numa = "\n".join(f'<object type="NUMANode" os_index="{n}" cpuset="0x000000{"0f" if n == 0 else "f0"}" '
                     f'nodeset="0x0000000{n + 1}" local_memory="1024"/>' for n in (0, 1))
    machine = lstopo(pcidev("0000:15:00.0", "0302 [10de:20b0] [10de:134f] a1"), nodesets="0x00000003", numa=numa)
    assert machine.numa_of("0000:15:00.0") == -1
    assert [d.format() for d in machine.problems] == [
        "l.xml:8:7: warning[I103 input-value]: the PCI device's locality is not one NUMA node: left without a NUMA node"]


def test_the_power8_machine_is_read_with_its_own_cpu_and_its_four_p100s():
    path = REAL / "hwloc-power8-4xp100.lstopo.xml"
    if not path.exists():
        pytest.skip("../shared/data/real-machines is absent")
    machine = Machine()
    parse(path.read_bytes(), "p8.xml", machine)
    assert {n: (c.vendor, c.arch, c.model_name, c.family) for n, c in machine.numa.items()} == {
        n: ("ibm", "ppc64le", "POWER8NVL, altivec supported", None) for n in (0, 1)}
    assert machine.numa[1].cpus == (80, 81, 88, 89, 96, 97, 104, 105)  # cpuset "0x00000303,0x03030000,,0x0"
    assert [(g.bus, g.device, g.model_name, g.link.forms()[0]) for g in machine.gpus.values()] == [
        (bus, "0x15f9", "Tesla P100-SXM2-16GB", (3, 16)) for bus in ("0002:01:00.0", "0003:01:00.0", "000a:01:00.0", "000b:01:00.0")]
