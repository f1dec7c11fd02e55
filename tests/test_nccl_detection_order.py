"""nccl-topo.xml lists its CPUs, GPUs and NICs in the order NCCL's own detection creates them: NCCL
numbers them by their place in the file, and its search breaks ties by those numbers, so a file
in another order can get other rings than the machine's own dump (NCCL 2.20's search on an
imported 2x RTX 4090 dump did: ring 1 0 through mlx5_1 instead of 0 1 through mlx5_0)."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from hwspec.formats.nccl_tree import detection_order
from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.topology import topology_of

# GPU 0 (lowest bus id) hangs off the socket listed second, as an import lists sockets by NUMA node
GPU0_ON_SECOND_SOCKET = """\
hwspec: 1
kind: node
name: order
sockets:
  - {id: cpu0, part: epyc-7v12, numa_node: 2, cpus: 4-5, memory: {capacity: 64 GiB, bandwidth: 80 GB/s}}
  - {id: cpu1, part: epyc-7v12, numa_node: 3, cpus: 6-7, memory: {capacity: 64 GiB, bandwidth: 80 GB/s}}
  - {id: cpu2, part: epyc-7v12, numa_node: 4, cpus: 8-9, memory: {capacity: 64 GiB, bandwidth: 80 GB/s}}
gpus:
  - {id: gpu0, part: a100-sxm4-40gb, pcie: {upstream: cpu1, bus: "0000:01:00.0", link: {gen: 4, width: 16}}}
  - {id: gpu1, part: a100-sxm4-40gb, pcie: {upstream: cpu0, bus: "0000:46:00.0", link: {gen: 4, width: 16}}}
"""


def _system(tmp_path: Path, monkeypatch, text: str) -> ElementTree.Element:
    monkeypatch.chdir(tmp_path)
    Path("order.yaml").write_text(text)
    platform = load_platform(Path("order.yaml"))
    return ElementTree.fromstring(plan_for(topology_of(platform), only=["nccl-topo"])["order/nccl-topo.xml"])


def test_the_socket_of_gpu0_comes_first_and_a_socket_without_devices_keeps_its_place(tmp_path, monkeypatch):
    system = _system(tmp_path, monkeypatch, GPU0_ON_SECOND_SOCKET)
    assert [cpu.get("numaid") for cpu in system] == ["3", "2", "4"]
    assert [gpu.get("rank") for gpu in system.iter("gpu")] == ["0", "1"]


def test_detection_order_moves_only_entries_with_a_gpu_below_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("order.yaml").write_text(GPU0_ON_SECOND_SOCKET)
    arrange = detection_order(topology_of(load_platform(Path("order.yaml"))))
    assert arrange(["cpu2", "cpu0", "cpu1"]) == ["cpu2", "cpu1", "cpu0"]
    assert arrange(["elsewhere", "gpu1", "gpu0"]) == ["elsewhere", "gpu0", "gpu1"]
