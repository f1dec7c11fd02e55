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
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
TREES = ("good", "gpu-x8", "nvlink-down", "nic-moved", "snc-on", "hca-port-missing")
CPUINFO_ENTRY = ("processor\t: {cpu}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
                 "model name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: {package}\n\n")


def build(name: str, out: Path) -> None:
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
        function(out, gpu, f"{chain}/{down0}/{gpu}", "0x030200", "0x10de", "0x2330", numa, "32.0 GT/s PCIe", width,
                 cpus=numa_cpus[numa])
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
             "max_link_speed": speed, "max_link_width": "16"}
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
