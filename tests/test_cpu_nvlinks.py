"""NVLinks from a GPU to its own CPU (IBM POWER8/POWER9, `nvlink.cpu_links`) kept end to end: the
model's bandwidth, the topology's edge and host link, NCCL's `<nvlink tclass="0x068001">` written
and read back (one entry per NPU function, as NCCL's detection writes them, summed), and `diff`
reporting a CPU link missing either way."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.formats.nccl_tree import system_tree
from hwspec.model.load import load_platform
from hwspec.perf.calculon import calculon_system
from hwspec.perf.roofline import TIER_NOTES, roofline
from hwspec.perf.torchrec import torchrec_topology
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
OK = ROOT / "tests/fixtures/rules/nvlink_cpu_links_ok.yaml"
NPU_DUMP = ROOT / "tests/data/live/power9-npu-links.nccl.xml"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_cpu_links_carry_the_gpu_parts_per_link_rate_into_the_model_the_graph_and_the_host_link():
    topology = topology_of(load_platform(OK))
    assert [(c.gpu, c.socket, c.links, c.bandwidth, c.entry) for c in topology.platform.cpu_nvlinks] == [
        ("gpu0", "cpu0", 2, 50e9, 0), ("gpu1", "cpu1", 2, 50e9, 1)]  # A100: 25 GB/s per link per direction
    edge = topology.graph.edges["gpu0", "cpu0"]
    assert (edge["kind"], edge["links"], edge["bandwidth"]) == ("nvlink", 2, 50e9)
    host = topology.host_link("gpu0")
    assert (host.kind, host.link, host.bandwidth, host.shared_bandwidth) == ("nvlink", "NVLink 2 x 25 GB/s", 50e9, 50e9)
    assert topology.nvlink_links("gpu0") == 10  # the GPU-to-GPU fabric leaves the CPU links out


def test_nccl_topo_xml_gives_each_gpu_one_cpu_link_entry_of_tclass_068001():
    gpus = [node for cpu in system_tree(topology_of(load_platform(OK))).children for node in _walk(cpu) if node.tag == "gpu"]
    assert [[c.attrs for c in gpu.children] for gpu in gpus] == [
        [[("target", "0000:54:00.0"), ("count", "10"), ("tclass", "0x030200")],
         [("target", "fffffff:ff:ff.0"), ("count", "2"), ("tclass", "0x068001")]],
        [[("target", "0000:14:00.0"), ("count", "10"), ("tclass", "0x030200")],
         [("target", "fffffff:ff:ff.0"), ("count", "2"), ("tclass", "0x068001")]]]


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


def test_an_unknown_socket_is_a_located_reference_error(tmp_path, capsys):
    bad = tmp_path / "node.yaml"
    bad.write_text(OK.read_text().replace("{gpu: gpu1, socket: cpu1, links: 2}", "{gpu: gpu1, socket: cpu7, links: 2}"))
    assert main(["validate", str(bad)]) == 1
    assert capsys.readouterr().out == (f"{bad}:52:27: error[E201]: nvlink.cpu_links[1].socket: 'cpu7' does not name a socket\n"
                                       "  hint: did you mean 'cpu1'? known: cpu0, cpu1\n")


def test_an_nccl_dump_with_one_entry_per_npu_function_drafts_the_summed_links_and_round_trips(tmp_path, capsys):
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(NPU_DUMP), "-o", str(draft)]) == 0
    assert "I102" not in capsys.readouterr().err
    platform = load_platform(draft)
    assert [(c.gpu, c.socket, c.links, c.bandwidth) for c in platform.cpu_nvlinks] == [
        ("gpu0", "cpu0", 3, 75e9), ("gpu1", "cpu0", 3, 75e9)]
    assert main(["diff", str(draft), str(NPU_DUMP)]) == 0
    assert main(["generate", str(draft), "-o", str(tmp_path / "gen"), "--no-svg"]) == 0
    written = tmp_path / "gen" / "draft" / "nccl-topo.xml"
    assert written.read_text().count('<nvlink target="fffffff:ff:ff.0" count="3" tclass="0x068001"/>') == 2
    assert main(["diff", str(draft), str(written)]) == 0


def test_diff_reports_a_cpu_link_down_and_one_the_spec_leaves_out(tmp_path, capsys):
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(NPU_DUMP), "-o", str(draft)]) == 0
    one_down = tmp_path / "one-down.nccl.xml"
    one_down.write_text(NPU_DUMP.read_text().replace('<nvlink target="0007:00:00.2" count="1" tclass="0x068001"/>', ""))
    capsys.readouterr()
    assert main(["diff", str(draft), str(one_down)]) == 1
    out = capsys.readouterr().out
    assert (f"{draft}:48:5: error[D106 nvlink-count]: gpu0 has 3 NVLinks to its CPU in the spec, but 2 in the machine "
            f"(seen at {one_down}:7)\n  hint: an NVLink down: check 'nvidia-smi nvlink --status'") in out
    left_out = tmp_path / "left-out.yaml"
    left_out.write_text(draft.read_text().replace("  - {gpu: gpu1, socket: cpu0, links: 3}\n", ""))
    assert main(["diff", str(left_out), str(NPU_DUMP)]) == 1
    out = capsys.readouterr().out
    assert (f"{left_out}:45:3: error[D106 nvlink-count]: gpu1 has 0 NVLinks to its CPU in the spec, but 3 in the machine "
            f"(seen at {NPU_DUMP.relative_to(ROOT)}:17)\n  hint: add {{gpu: gpu1, socket: cpu0, links: 3}} to nvlink.cpu_links") in out


def test_topo_m_lists_no_cpu_links_so_their_absence_there_is_no_drift(tmp_path, capsys):
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(NPU_DUMP), "-o", str(draft)]) == 0
    topo = tmp_path / "node.topo-m.txt"
    shutil.copy(ROOT / "tests/data/live/base-2gpu.topo-m.txt", topo)
    capsys.readouterr()
    main(["diff", str(draft), str(topo)])
    assert "to its CPU" not in capsys.readouterr().out


def _sysfs_build():
    spec = importlib.util.spec_from_file_location("sysfs_build", ROOT / "tests/data/sysfs/build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def power9_tree(root: Path, active: int = 3) -> Path:
    """A POWER9 board's half as `hwspec capture` saves it: two V100s under their own root ports, the
    CPU's NVLink ports (IBM NPU functions, class 0x068001) on their own PHB, and NVML's answers:
    3 links between the GPUs, 3 from each to an NPU function (`active` of gpu0's)."""
    b = _sysfs_build()
    b.write(root, "sys/devices/system/node/node0/cpulist", "0-7")
    b.write(root, "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       67108864 kB")
    b.write(root, "proc/cpuinfo", "".join(b.CPUINFO_ENTRY.format(cpu=c, package=0) for c in range(8)))
    gpus = ("0004:04:00.0", "0035:03:00.0")
    for gpu in gpus:
        domain, rp = gpu[:4], f"{gpu[:4]}:00:00.0"
        b.function(root, rp, f"sys/devices/pci{domain}:00/{rp}", "0x060400", "0x1014", "0x04c1", 0, "8.0 GT/s PCIe", 16)
        b.function(root, gpu, f"sys/devices/pci{domain}:00/{rp}/{gpu}", "0x030200", "0x10de", "0x1db1", 0, "8.0 GT/s PCIe", 16,
                   cpus="0-7")
    npus = [[f"0007:00:0{g}.{n}" for n in range(3)] for g in range(2)]
    for bus in (bus for per_gpu in npus for bus in per_gpu):
        b.function(root, bus, f"sys/devices/pci0007:00/{bus}", "0x068001", "0x1014", "0x04ea", 0, "8.0 GT/s PCIe", 16)
    entries = []
    for me, (gpu, peer) in enumerate((gpus, gpus[::-1])):
        links = [{"link": n, "active": True, "remote": peer} for n in range(3)]
        links += [{"link": 3 + n, "active": me == 1 or n < active, "remote": npu if me == 1 or n < active else None}
                  for n, npu in enumerate(npus[me])]
        entries.append(json.dumps({"bus": gpu, "fabric": None, "name": "Tesla V100-SXM2-16GB", "nvlinks": links}, sort_keys=True))
    b.write(root, "nvml.json", '{"nvml": 1, "gpus": [\n' + ",\n".join(entries) + "\n]}")
    return root


def test_a_captured_power9_node_drafts_nvml_links_to_npu_functions_as_cpu_links_and_diffs_a_link_down(tmp_path, capsys):
    draft = tmp_path / "draft.yaml"
    assert main(["import", "--sysfs-root", str(power9_tree(tmp_path / "tree")), "-o", str(draft)]) == 0
    platform = load_platform(draft)
    assert [(l.a, l.b, l.links) for l in platform.nvlinks] == [("gpu0", "gpu1", 3)]
    assert [(c.gpu, c.socket, c.links) for c in platform.cpu_nvlinks] == [("gpu0", "cpu0", 3), ("gpu1", "cpu0", 3)]
    assert platform.baseboard is None or not platform.baseboard.nvswitches  # the NPU functions are no NVSwitches
    capsys.readouterr()
    assert main(["diff", str(draft), "--sysfs-root", str(tmp_path / "tree")]) == 0
    down = power9_tree(tmp_path / "down", active=2)
    assert main(["diff", str(draft), "--sysfs-root", str(down)]) == 1
    assert "error[D106 nvlink-count]: gpu0 has 3 NVLinks to its CPU in the spec, but 2 in the machine" in capsys.readouterr().out


def test_the_diagram_draws_each_gpus_cpu_links_and_gives_their_figures():
    from hwspec.generate import diagram
    from hwspec.generate import engine as generate

    platform = load_platform(OK)
    context = generate.GenContext(topology_of(platform), generate.template_environment(), "diagram", platform.file)
    dot = context.render("topology.dot.j2", "slash", **diagram.topology_view(platform))
    assert [line.split(" [")[0].strip() for line in dot.splitlines() if 'class="nvlink"' in line and "cpu" in line.split(" [")[0]] == [
        '"cpu0" -- "gpu0"', '"cpu1" -- "gpu1"']
    assert "NVLink 2 x nvlink3, 50 GB/s to its CPU" in dot


def test_cpu_links_of_unknown_bandwidth_leave_the_host_link_unknown_not_pcie():
    import dataclasses

    platform = load_platform(OK)
    unknown = dataclasses.replace(platform, cpu_nvlinks=tuple(dataclasses.replace(c, bandwidth=None) for c in platform.cpu_nvlinks))
    assert topology_of(unknown).cpu_nvlink_bandwidth("gpu0") is None
    assert topology_of(unknown).host_link("gpu0") is None


def test_roofline_calculon_and_torchrec_notes_name_the_cpu_links_as_the_host_link_where_a_node_has_them():
    power = topology_of(load_platform(OK))
    notes = roofline(power)["tier_notes"]
    assert notes["pcie_host"] == ("the GPU's link to its socket, with the GPU alone on it: its NVLinks to its CPU "
                                  "(POWER8/POWER9, nvlink.cpu_links) or its NVLink-C2C links when it has them, else the "
                                  "narrowest PCIe link on its path to its socket")
    assert notes["pcie_host_shared"].startswith("the same when every GPU transfers at once: a GPU's NVLinks to its CPU ")
    calculon = calculon_system(power)
    assert calculon is not None
    assert any("host link: its NVLinks to its CPU or NVLink-C2C when it has them, else PCIe" in n for n in calculon[1])
    zionex = topology_of(load_platform(ROOT / "platforms/zionex.yaml"))
    assert roofline(zionex)["tier_notes"]["pcie_host"] == TIER_NOTES["pcie_host"]
    assert torchrec_topology(power)["_derivation"]["hbm_to_ddr_mem_bw"].startswith(
        "the GPU's host link, GPU alone on it (its NVLinks to its CPU or its NVLink-C2C links when it has them, else")


def test_a_platform_with_unknown_figures_still_gets_the_tier_notes_of_its_cpu_links():
    import dataclasses

    platform = load_platform(OK)
    draft = dataclasses.replace(platform, gpus=(dataclasses.replace(platform.gpus[0], hbm_capacity=None), *platform.gpus[1:]))
    document = roofline(topology_of(draft))
    assert (document["unknown"], document["gpu_groups"]) == (["gpu0: HBM (not given)"], None)
    assert document["tier_notes"] == roofline(topology_of(platform))["tier_notes"]
    assert document["tier_notes"]["pcie_host"] != TIER_NOTES["pcie_host"]
