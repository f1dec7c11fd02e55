"""Which NCCL releases read a topology file with GPUs' NVLinks to their CPU (issue 44, item 7):
NCCL's `findLocalCpu` walk (topo.cc) run on the tree as NCCL builds it, in each of its three
forms (hwspec.formats.nccl_cpu_links names the releases and commits read)."""

from __future__ import annotations

from pathlib import Path

from hwspec.formats.nccl_cpu_links import cpu_link_note, cpu_link_readers
from hwspec.formats.nccl_tree import XmlNode, system_tree
from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
GEN3 = "8.0 GT/s PCIe"


def _gpu(bus: str, cpu_link: bool = True, width: str = "16") -> XmlNode:
    links = [XmlNode("nvlink", [("target", "fffffff:ff:ff.0"), ("count", "2"), ("tclass", "0x068001")])] if cpu_link else []
    return XmlNode("pci", [("busid", bus), ("class", "0x030200"), ("link_speed", GEN3), ("link_width", width)],
                   [XmlNode("gpu", [("dev", "0"), ("sm", "70"), ("rank", "0")], links)])


def _bridge(bus: str, width: str, *children: XmlNode) -> XmlNode:
    return XmlNode("pci", [("busid", bus), ("class", "0x060400"), ("link_speed", GEN3), ("link_width", width)], list(children))


def _system(*children: XmlNode) -> XmlNode:
    return XmlNode("system", [("version", "1")], [XmlNode("cpu", [("numaid", "0"), ("arch", "ppc64")], list(children))])


def test_a_gpu_right_under_its_cpu_is_read_by_every_release():
    assert cpu_link_readers(_system(_gpu("0004:04:00.0"))) == [
        ("2.21 and earlier", True), ("2.22 to 2.25", True), ("2.26 and later", True)]


def test_a_gpu_under_a_root_port_no_faster_than_it_loops_in_2_21_and_earlier():
    # the root port lists its link down to the GPU first: 2.21 follows it back to the GPU
    assert cpu_link_readers(_system(_bridge("0004:00:00.0", "16", _gpu("0004:01:00.0")))) == [
        ("2.21 and earlier", False), ("2.22 to 2.25", True), ("2.26 and later", True)]


def test_a_root_port_faster_than_every_link_below_lists_its_uplink_first():
    assert cpu_link_readers(_system(_bridge("0004:00:00.0", "16", _gpu("0004:01:00.0", width="8")))) == [
        ("2.21 and earlier", True), ("2.22 to 2.25", True), ("2.26 and later", True)]


def test_a_gpu_behind_a_switch_loops_until_2_26():
    # the switch's upstream port lists its link down to the downstream port first: 2.22-2.25 bounce between them
    system = _system(_bridge("0004:00:00.0", "16", _bridge("0004:01:00.0", "16", _bridge("0004:02:00.0", "16",
                                                                                         _gpu("0004:03:00.0")))))
    assert cpu_link_readers(system) == [("2.21 and earlier", False), ("2.22 to 2.25", False), ("2.26 and later", True)]
    assert cpu_link_note(system) == (
        "GPUs' NVLinks to their CPU (tclass 0x068001): NCCL joins each to the CPU it finds by walking up the PCIe tree "
        "(topo.cc findLocalCpu); on this file the walk of NCCL 2.21 and earlier and of NCCL 2.22 to 2.25 comes back to a "
        "node it is still in and recurses until the process dies: run NCCL 2.26 or later with it")


def test_a_file_without_cpu_links_says_nothing():
    system = _system(_bridge("0004:00:00.0", "16", _gpu("0004:01:00.0", cpu_link=False)))
    assert cpu_link_readers(system) == [] and cpu_link_note(system) is None


def test_the_generated_file_of_a_power_node_says_which_releases_read_it():
    platform = load_platform(ROOT / "tests/fixtures/rules/nvlink_cpu_links_ok.yaml")
    readers = cpu_link_readers(system_tree(topology_of(platform)))
    assert readers and readers[-1] == ("2.26 and later", True)
    text = next(iter(plan_for(topology_of(platform), only=["nccl-topo"]).values()))
    assert f"<!-- {cpu_link_note(system_tree(topology_of(platform)))} -->\n" in text
