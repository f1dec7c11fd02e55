"""RDMA NICs a sandbox shows under host bridges stay RDMA NICs (issue 34, item 3): an 8x B200 VM
under gVisor shows each mlx5 function as a host bridge (class 0x060000, no link). Where the input
says RDMA (an infiniband device in sysfs, an NCCL `<net>` with an RDMA device name), the draft
keeps the NIC as a backend NIC, nccl-topo.xml has its `<net>`, and nccl.conf does not disable IB.
Fixtures: tests/data/live/gvisor-rdma-host-bridges.nccl.xml and a sysfs tree built here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hwspec.cli.commands import main
from hwspec.live import lstopo
from hwspec.live.merge import read_inputs
from hwspec.live.observed import Machine
from hwspec.live.sysfs import read_sysfs

DATA = Path(__file__).resolve().parent / "data"
LIVE = DATA / "live"


def _build():
    spec = importlib.util.spec_from_file_location("sysfs_build", DATA / "sysfs" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sandbox_tree(root: Path) -> Path:
    """A sysfs tree of the gVisor shape: one B200 (Gen5 x16) on the root complex and two mlx5
    RDMA devices (InfiniBand, 400 Gb/s) whose functions read class 0x060000 with no link."""
    b = _build()
    b.write(root, "sys/devices/system/node/node0/cpulist", "0-7")
    b.write(root, "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       67108864 kB")
    b.write(root, "proc/cpuinfo", "".join(b.CPUINFO_ENTRY.format(cpu=c, package=0) for c in range(8)))
    b.function(root, "0000:00:04.0", "sys/devices/pci0000:00/0000:00:04.0", "0x030200", "0x10de", "0x2901", 0,
               "32.0 GT/s PCIe", 16, cpus="0-7")
    for n, bus in enumerate(("0000:00:05.0", "0000:00:06.0")):
        path = f"sys/devices/pci0000:00/{bus}"
        for attr, value in {"class": "0x060000", "vendor": "0x8086", "device": "0x09a2", "numa_node": "0"}.items():
            b.write(root, f"{path}/{attr}", value)
        b.link(root, f"sys/bus/pci/devices/{bus}", path)
        device = f"{path}/infiniband/mlx5_{n}"
        b.link(root, f"sys/class/infiniband/mlx5_{n}", device)
        b.write(root, f"{device}/ports/1/state", "4: ACTIVE")
        b.write(root, f"{device}/ports/1/rate", "400 Gb/sec (4X NDR)")
        b.write(root, f"{device}/ports/1/link_layer", "InfiniBand")
    return root


def _end_to_end(tmp_path: Path, capsys, inputs: list[str]) -> tuple[str, str, str]:
    """import -> validate -> generate: (draft, nccl-topo.xml, nccl.conf)."""
    draft = tmp_path / "node.yaml"
    assert main(["import", *inputs, "-o", str(draft)]) == 0
    assert main(["validate", str(draft)]) == 0
    assert "error[" not in capsys.readouterr().out
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    out = tmp_path / "out" / "node"
    return draft.read_text(), (out / "nccl-topo.xml").read_text(), (out / "nccl.conf").read_text()


def test_rdma_functions_shown_as_host_bridges_in_sysfs_are_backend_nics_with_their_ports(tmp_path):
    machine = read_sysfs(sandbox_tree(tmp_path / "tree"))
    nics = sorted(machine.nics.values(), key=lambda n: n.key)
    assert [(n.bus, n.fabric, n.shown_as, n.link, [(p.name, p.speed) for p in n.ports]) for n in nics] == [
        ("0000:00:05.0", "infiniband", "0x0600", None, [("mlx5_0", 50e9)]),
        ("0000:00:06.0", "infiniband", "0x0600", None, [("mlx5_1", 50e9)])]
    assert "rdma-nics" in machine.listed


def test_a_sysfs_sandbox_node_keeps_rdma_end_to_end(tmp_path, capsys):
    tree = sandbox_tree(tmp_path / "tree")
    text, xml, conf = _end_to_end(tmp_path, capsys, ["--sysfs-root", str(tree)])
    assert text.count("  role: backend\n  transport: infiniband\n") == 2
    assert ("the input shows this NIC''s function as class 0x0600 without a link (a sandbox): taken as Gen5 x16, "
            "the GPUs'' generation") in text
    assert '<net name="mlx5_0" dev="0" speed="400000" port="1"' in xml and '<net name="mlx5_1" dev="1"' in xml
    assert '<pci busid="0000:00:05.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">' in xml
    assert "NCCL_IB_DISABLE" not in conf and "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" in conf


def test_an_nccl_dump_with_each_nic_alone_under_a_host_bridge_keeps_rdma_end_to_end(tmp_path, capsys):
    machine = read_inputs([LIVE / "gvisor-rdma-host-bridges.nccl.xml"])
    assert sorted(machine.bridges) == ["0000:00:04.0", "0000:00:06.0"]
    # the bridge function's link (link_speed="", link_width="0") is what NCCL reads for the NIC
    assert [(n.bus, n.vendor, (n.link.width_zero, n.link.speed_unstated) if n.link else None, n.shown_as)
            for n in machine.nics.values()] == [
        ("0000:00:05.0", None, (True, True), "0x060000"), ("0000:00:07.0", None, (True, True), "0x060000")]
    text, xml, conf = _end_to_end(tmp_path, capsys, [str(LIVE / "gvisor-rdma-host-bridges.nccl.xml")])
    assert ("gvisor-rdma-host-bridges.nccl.xml:8: the NIC 0000:00:05.0 reads PCI class 0x060000 (a bridge's), as a "
            "sandbox shows a NIC's function; it holds only the <nic>, so it is the NIC's device, as NCCL reads it") in text
    assert text.count("  role: backend\n  transport: rocev2\n") == 2
    assert ('    <pci busid="0000:00:05.0" class="0x020000" link_speed="8.0 GT/s PCIe" link_width="0">\n'
            '      <nic>\n        <net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/>\n') in xml
    assert "NCCL_IB_DISABLE" not in conf and "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" in conf
    assert main(["diff", str(tmp_path / "node.yaml"), str(LIVE / "gvisor-rdma-host-bridges.nccl.xml")]) == 0


LSTOPO = """<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000ffff" nodeset="0x00000001">
    <object type="NUMANode" os_index="0" cpuset="0x0000ffff" nodeset="0x00000001" local_memory="1024"/>
    <object type="Bridge" bridge_type="0-1" depth="0">
      <object type="PCIDev" pci_busid="0000:11:00.0" pci_type="0600 [8086:09a2] [0000:0000] 00">
        <object type="OSDev" name="mlx5_0" osdev_type="3"/>
      </object>
      <object type="PCIDev" pci_busid="0000:12:00.0" pci_type="0600 [8086:09a2] [0000:0000] 00">
        <object type="OSDev" name="eth1" osdev_type="2"/>
      </object>
    </object>
  </object>
</topology>
"""


def test_an_lstopo_openfabrics_device_on_a_host_bridge_class_function_is_a_nic_and_an_interface_alone_is_not():
    machine = Machine()
    lstopo.parse(LSTOPO.encode(), "l.xml", machine)
    assert [(n.bus, n.vendor, n.link, n.shown_as, [p.name for p in n.ports]) for n in machine.nics.values()] == [
        ("0000:11:00.0", None, None, "0x0600", ["mlx5_0"])]
    assert machine.notes == ["l.xml:6: the RDMA function 0000:11:00.0 reads class 0x0600 (as a sandbox shows a NIC's "
                             "function): read as the NIC's device, as NCCL reads it"]
