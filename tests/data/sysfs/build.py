"""Write the synthetic sysfs trees under tests/data/sysfs/ (run it after changing a tree here;
tests/test_live_sysfs.py checks the committed trees are what it writes).

`good` is a small GPU node as `hwspec capture` saves one: two NUMA nodes, each with a PCIe
switch holding an H100 SXM and a ConnectX-7 (InfiniBand, one port), 4 NVLinks between the two
GPUs in NVML's answers. Each other tree is `good` with one fault, as fleets see them:

    gpu-x8            GPU 0 trained at Gen5 x8 (a reseat)
    nvlink-down       one of the four NVLinks between the GPUs inactive (NVML)
    nic-moved         NIC 1 in a slot under the other switch (another bus id, another NUMA node)
    snc-on            sub-NUMA clustering turned on: four NUMA nodes, two per socket
    hca-port-missing  NIC 1's RDMA device lists no port
    gpu-link-down     GPU 0's link never trained (current_link_speed Unknown, width 63)

`nvswitch-board` is another node: an HGX H100 baseboard as NVML sees it, 8 H100 SXM in pairs
under four PCIe switches (two per socket), four NVSwitches, each GPU with its 18 NVLinks active
to the switches (5, 4, 4, 5), and every GPU registered in one clique of an NVLink domain. Its
`nvml.json` is also what the stand-in NVML library answers (tests/nvml_library.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
TREES = ("good", "gpu-x8", "nvlink-down", "nic-moved", "snc-on", "hca-port-missing", "gpu-link-down", "nvswitch-board")
BOARD_SWITCHES = ("0000:c5:00.0", "0000:c6:00.0", "0000:c7:00.0", "0000:c8:00.0")
BOARD_LINKS = (5, 4, 4, 5)
"""An H100's 18 NVLinks to the four NVSwitches of an HGX H100 board, by switch."""
BOARD_FABRIC = {"cluster_uuid": "5f3c2a10-7b1e-4c9d-8a2f-0e6d1b9c4a77", "clique_id": 1, "state": "Completed"}
CPUINFO_ENTRY = ("processor\t: {cpu}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
                 "model name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: {package}\n\n")


def build(name: str, out: Path) -> None:
    if name == "nvswitch-board":
        build_board(out)
        return
    numa_cpus = {0: "0-3", 1: "4-7"} if name != "snc-on" else {0: "0-1", 1: "2-3", 2: "4-5", 3: "6-7"}
    for node, cpus in numa_cpus.items():
        write(out, f"sys/devices/system/node/node{node}/cpulist", cpus)
        write(out, f"sys/devices/system/node/node{node}/meminfo", f"Node {node} MemTotal:       {64 * 1024 * 1024 // len(numa_cpus) * 2} kB")
    write(out, "proc/cpuinfo", "".join(CPUINFO_ENTRY.format(cpu=c, package=c // 4) for c in range(8)))
    snc = name == "snc-on"
    for socket, root in ((0, "0000:00"), (1, "0000:80")):
        base = int(root[5:], 16)
        rp, up, down0, down1 = (f"{root}:01.0", f"0000:{base + 1:02x}:00.0", f"0000:{base + 2:02x}:00.0", f"0000:{base + 2:02x}:01.0")
        gpu, nic = f"0000:{base + 3:02x}:00.0", f"0000:{base + 4:02x}:00.0"
        numa = socket * 2 if snc else socket
        chain = f"sys/devices/pci{root}/{rp}/{up}"
        for bus, path in ((rp, f"sys/devices/pci{root}/{rp}"), (up, chain), (down0, f"{chain}/{down0}"), (down1, f"{chain}/{down1}")):
            function(out, bus, path, "0x060400", "0x1000", "0xc030", numa, "32.0 GT/s PCIe", 16)
        width = 8 if name == "gpu-x8" and socket == 0 else 16
        down = name == "gpu-link-down" and socket == 0
        function(out, gpu, f"{chain}/{down0}/{gpu}", "0x030200", "0x10de", "0x2330", numa, "Unknown" if down else "32.0 GT/s PCIe",
                 63 if down else width, cpus=numa_cpus[numa])
        nic_parent = down1
        if name == "nic-moved" and socket == 1:  # NIC 1 sits in a slot of switch 0
            nic, nic_parent, numa, chain = "0000:05:00.0", "0000:02:01.0", 0, "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
        nic_path = f"{chain}/{nic_parent}/{nic}"
        function(out, nic, nic_path, "0x020700", "0x15b3", "0x1021", numa, "32.0 GT/s PCIe", 16)
        device = f"mlx5_{socket}"
        link(out, f"sys/class/infiniband/{device}", f"{nic_path}/infiniband/{device}")
        write(out, f"{nic_path}/infiniband/{device}/node_type", "1: CA")  # git keeps no empty directory
        if not (name == "hca-port-missing" and socket == 1):
            write(out, f"{nic_path}/infiniband/{device}/ports/1/state", "4: ACTIVE")
            write(out, f"{nic_path}/infiniband/{device}/ports/1/rate", "400 Gb/sec (4X NDR)")
        link(out, f"sys/class/net/ib{socket}", f"{nic_path}/net/ib{socket}")
        write(out, f"{nic_path}/net/ib{socket}/operstate", "up")
    gpus = ("0000:03:00.0", "0000:83:00.0")
    write(out, "nvml.json", nvml(gpus, down=name == "nvlink-down"))


def build_board(out: Path) -> None:
    """The `nvswitch-board` tree (see the module docstring)."""
    for node, cpus in {0: "0-3", 1: "4-7"}.items():
        write(out, f"sys/devices/system/node/node{node}/cpulist", cpus)
        write(out, f"sys/devices/system/node/node{node}/meminfo", f"Node {node} MemTotal:       {1024 * 1024 * 1024} kB")
    write(out, "proc/cpuinfo", "".join(CPUINFO_ENTRY.format(cpu=c, package=c // 4) for c in range(8)))
    gpus = []
    for switch in range(4):
        socket = switch // 2
        root = f"0000:{socket * 0x80:02x}"
        base = socket * 0x80 + (switch % 2) * 0x10
        rp, up = f"{root}:{switch % 2 + 1:02x}.0", f"0000:{base + 1:02x}:00.0"
        chain = f"sys/devices/pci{root}/{rp}/{up}"
        function(out, rp, f"sys/devices/pci{root}/{rp}", "0x060400", "0x8086", "0x352a", socket, "32.0 GT/s PCIe", 16)
        function(out, up, chain, "0x060400", "0x1000", "0xc030", socket, "32.0 GT/s PCIe", 16)
        for slot in range(2):
            down, gpu = f"0000:{base + 2:02x}:{slot:02x}.0", f"0000:{base + 3 + slot:02x}:00.0"
            function(out, down, f"{chain}/{down}", "0x060400", "0x1000", "0xc030", socket, "32.0 GT/s PCIe", 16)
            function(out, gpu, f"{chain}/{down}/{gpu}", "0x030200", "0x10de", "0x2330", socket, "32.0 GT/s PCIe", 16,
                     cpus="0-3" if socket == 0 else "4-7")
            gpus.append(gpu)
    for number, bus in enumerate(BOARD_SWITCHES):  # the NVSwitches' management functions, on socket 1
        bridge = f"0000:80:{number + 3:02x}.0"
        function(out, bridge, f"sys/devices/pci0000:80/{bridge}", "0x060400", "0x8086", "0x352a", 1, "8.0 GT/s PCIe", 4)
        function(out, bus, f"sys/devices/pci0000:80/{bridge}/{bus}", "0x068000", "0x10de", "0x22a3", 1, "8.0 GT/s PCIe", 2)
    entries = []
    for gpu in sorted(gpus):
        remotes = [bus for bus, count in zip(BOARD_SWITCHES, BOARD_LINKS) for _ in range(count)]
        links = [{"link": n, "active": True, "remote": remote} for n, remote in enumerate(remotes)]
        entries.append(json.dumps({"bus": gpu, "fabric": BOARD_FABRIC, "name": "NVIDIA H100 80GB HBM3", "nvlinks": links},
                                  sort_keys=True))
    write(out, "nvml.json", '{"nvml": 1, "gpus": [\n' + ",\n".join(entries) + "\n]}")


def nvml(gpus: tuple[str, str], down: bool) -> str:
    entries = []
    for me, other in (gpus, gpus[::-1]):
        links = [{"link": n, "active": not (down and n == 3), "remote": other if not (down and n == 3) else None} for n in range(4)]
        entries.append(json.dumps({"bus": me, "fabric": None, "name": "NVIDIA H100 80GB HBM3", "nvlinks": links}, sort_keys=True))
    return '{"nvml": 1, "gpus": [\n' + ",\n".join(entries) + "\n]}"


def function(out: Path, bus: str, path: str, pci_class: str, vendor: str, device: str, numa: int, speed: str, width: int,
             cpus: str | None = None) -> None:
    attrs = {"class": pci_class, "vendor": vendor, "device": device, "subsystem_vendor": vendor, "subsystem_device": "0x0000",
             "numa_node": str(numa), "current_link_speed": speed, "current_link_width": str(width),
             "max_link_speed": speed if speed != "Unknown" else "32.0 GT/s PCIe", "max_link_width": "16"}
    if cpus is not None:
        attrs["local_cpulist"] = cpus
    for attr, value in attrs.items():
        write(out, f"{path}/{attr}", value)
    link(out, f"sys/bus/pci/devices/{bus}", path)


def write(out: Path, rel: str, text: str) -> None:
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")


def link(out: Path, rel: str, target: str) -> None:
    """A relative link at `rel` to `target` (both relative to the tree's root), as sysfs has them."""
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, os.path.dirname(rel)), path)


def main(into: Path = HERE) -> None:
    for name in TREES:
        shutil.rmtree(into / name, ignore_errors=True)
        build(name, into / name)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
