"""NCCL's own meaning of the attributes import reads and generate writes (issue 44, item 4):
`<net port>` is the verbs port plus the IB devices before it on the bus (NCCL_IB_HCA wants the
verbs port), a width of 0 and an empty speed are what NCCL reads (x16, Gen3) and are kept as the
machine states them, `numaid="-1"` stays -1. Every link NCCL reads from a dump, it reads the same
from hwspec's file of the dump's draft (topo.cc `ncclTopoAddPci`: width x per-lane rate / 80)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.live.merge import read_inputs
from hwspec.live.nccl import verbs_ports
from hwspec.live.observed import Location, Nic, NicPort
from hwspec.live.xmlread import parse_xml
from tests.shared_data import REAL_MACHINES as REAL

HERE = Path(__file__).resolve().parent
LIVE = HERE / "data" / "live"
SHARED_BUS = LIVE / "rdma-devices-sharing-a-bus.nccl.xml"

NCCL_LANE_RATE = {"2.5 GT/s": 15, "5 GT/s": 30, "8 GT/s": 60, "16 GT/s": 120, "32 GT/s": 240, "2.5 GT/s PCIe": 15,
                  "5.0 GT/s PCIe": 30, "8.0 GT/s PCIe": 60, "16.0 GT/s PCIe": 120, "32.0 GT/s PCIe": 240, "64.0 GT/s PCIe": 480}
"""topo.cc `kvDictPciGen` (NVIDIA/nccl 1708736f, 2.27.3): per-lane rate in 100 Mb/s; anything else reads 60."""


def nccl_pci_bw(attrs: dict[str, str]) -> float:
    """The GB/s NCCL gives a `<pci>`'s link (topo.cc `ncclTopoAddPci`): width 0 or empty is 16, an
    unknown speed string is Gen3."""
    width = int(attrs.get("link_width") or 0) or 16
    return width * NCCL_LANE_RATE.get(attrs.get("link_speed", ""), 60) / 80


def pci_links(path: Path) -> dict[str, float]:
    """Bus id -> NCCL's link bandwidth of every `<pci>` of an NCCL topology file that states a link."""
    out: dict[str, float] = {}

    def walk(e) -> None:
        if e.tag == "pci" and "link_width" in e.attrs:
            out[e.attrs["busid"].lower()] = nccl_pci_bw(e.attrs)
        for child in e.children:
            walk(child)
    walk(parse_xml(path.read_bytes()))
    return out


DUMPS = sorted([*LIVE.glob("*.nccl.xml"), *HERE.glob("data/*.xml"), *REAL.glob("*.nccl.xml"), *REAL.glob("*/nccl-*-dump.xml")])


@pytest.mark.slow  # imports and generates every NCCL dump (about 30)
@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: p.name)
def test_nccl_reads_every_link_of_the_dump_the_same_from_hwspecs_file(dump, tmp_path, capsys):
    draft = tmp_path / "node.yaml"
    if main(["import", str(dump), "-o", str(draft)]) != 0 or main(["generate", str(draft), "-o", str(tmp_path / "out"),
                                                                    "--no-svg"]) != 0:
        pytest.skip(f"{dump.name}: the draft does not generate (tests/test_validate_means_generate.py covers it)")
    capsys.readouterr()
    written = pci_links(next((tmp_path / "out" / "node").glob("*-topo.xml")))
    stated = {bus: bw for bus, bw in pci_links(dump).items() if bus in written}
    assert stated, f"{dump.name}: no <pci> of the input states a link in hwspec's file"
    assert {bus: (bw, written[bus]) for bus, bw in stated.items() if bw != written[bus]} == {}


def test_a_host_bridge_a_vm_reports_at_width_0_stays_width_0_and_an_empty_speed_gen3(tmp_path, capsys):
    draft = tmp_path / "node.yaml"
    assert main(["import", str(LIVE / "gvisor-host-bridge.nccl.xml"), "-o", str(draft)]) == 0
    text = draft.read_text()
    assert ("  link:\n    gen: 3\n    width: 0\n    physical:\n      value: {gen: 5, width: 16}\n      assumed: 'the machine "
            "reports width 0 for this bridge (a VM''s; NCCL reads it as x16): Gen5 x16 assumed'\n  assumed: 'the input gives "
            "this link no speed (link_speed=\"\"): Gen3, as NCCL reads it'\n") in text
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    capsys.readouterr()
    xml = (tmp_path / "out" / "node" / "nccl-topo.xml").read_text()
    assert '<pci busid="0000:00:00.0" class="0x060400" vendor="0x8086" device="0x09a2" link_speed="8.0 GT/s PCIe" link_width="0">' in xml


def test_rdma_ports_are_drafted_as_verbs_ports_and_written_as_nccl_numbers_them(tmp_path, capsys):
    draft = tmp_path / "node.yaml"
    assert main(["import", str(SHARED_BUS), "-o", str(draft)]) == 0
    assert "\n  port:" not in draft.read_text()  # mlx5_1's port="2" is its verbs port 1 plus mlx5_0 before it on bus 1c
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    assert main(["diff", str(draft), str(SHARED_BUS)]) == 0
    capsys.readouterr()
    out = tmp_path / "out" / "node"
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" in (out / "nccl.conf").read_text()
    xml = (out / "nccl-topo.xml").read_text()
    assert '<net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/>' in xml
    assert '<net name="mlx5_1" dev="1" speed="400000" port="2" gdr="1"/>' in xml


def _ports(*nets: tuple[str, int, str, int]) -> list[NicPort]:
    """(name, dev, bus, NCCL's port) -> the ports `verbs_ports` leaves, each on a NIC of its bus."""
    where = Location("dump.xml", 1)
    nics: dict[str, Nic] = {}
    read = []
    for name, dev, bus, port in nets:
        nic = nics.setdefault(bus, Nic(bus, where, "numa:0", bus))
        nic.ports.append(NicPort(name, where, port))
        read.append((dev, nic, nic.ports[-1]))
    verbs_ports(read)
    return [port for nic in nics.values() for port in nic.ports]


def test_verbs_ports_take_out_the_devices_before_on_the_bus():
    # a ConnectX-3: one device, verbs ports 1 and 2, which NCCL writes 1 and 3
    assert [(p.name, p.port, p.position) for p in _ports(("mlx4_0", 0, "0000:03:00.0", 1), ("mlx4_0", 1, "0000:03:00.0", 3))] \
        == [("mlx4_0", 1, 1), ("mlx4_0", 2, 2)]
    # two functions of a dual-port ConnectX, each its own device (verbs port 1), and a card on another bus
    assert [(p.name, p.port, p.position) for p in _ports(("mlx5_0", 0, "0000:19:00.0", 1), ("mlx5_1", 1, "0000:19:00.1", 2),
                                                         ("mlx5_2", 2, "0000:29:00.0", 1))] \
        == [("mlx5_0", 1, 1), ("mlx5_1", 1, 2), ("mlx5_2", 1, 1)]
    # counted in NCCL's device order (dev), not the file's
    assert [(p.name, p.port) for p in _ports(("mlx5_1", 1, "0000:19:00.1", 2), ("mlx5_0", 0, "0000:19:00.0", 1))] \
        == [("mlx5_1", 1), ("mlx5_0", 1)]


def test_a_port_below_nccls_count_is_kept_as_given():
    assert [p.port for p in _ports(("mlx5_0", 0, "0000:19:00.0", 1), ("mlx5_1", 1, "0000:19:00.1", 1))] == [1, 1]


def test_a_dump_whose_gpus_have_no_numa_node_keeps_numaid_minus_1(tmp_path, capsys):
    dump = REAL / "h200-vm" / "nccl-2.28.9-dump.xml"
    if not dump.exists():
        pytest.skip("../shared/data/real-machines is absent")
    machine = read_inputs([dump])
    assert machine.unknown_numa_cpu is not None and not machine.numa
    draft = tmp_path / "node.yaml"
    assert main(["import", str(dump), "-o", str(draft)]) == 0
    assert "  numa_node: -1\n" in draft.read_text()
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    capsys.readouterr()
    out = tmp_path / "out" / "node"
    assert '<cpu numaid="-1" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="207">' in (out / "nccl-topo.xml").read_text()
    assert "    0) node=0 cpus=" in (out / "bind.sh").read_text()  # the OS still calls it node 0: numactl binds there
