"""`unknown` facts: a platform states what its source does not give, and no output makes it up.

(Item 4 of issue 22: the spec word and its consumers, and `hwspec import` drafting `part: unknown`/
`bus: unknown` where the input does not identify a part or give a bus id.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError
from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.topology import topology_of
from tests.shared_data import REAL_MACHINES as REAL

FIXTURE = Path(__file__).parent / "fixtures" / "rules" / "unknown_facts.yaml"
BASE = FIXTURE.read_text()


def _platform(tmp_path: Path, text: str):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return load_platform(path)


def test_an_unknown_gpu_part_resolves_to_none_figures_and_its_observed_identity():
    gpu = load_platform(FIXTURE).gpu_by_id["gpu1"]
    assert (gpu.part, gpu.pci_vendor, gpu.pci_device, gpu.sm, gpu.hbm_capacity, gpu.compute, gpu.fabric_link_bandwidth) == (
        "unknown", "0x10de", "0x20b0", None, None, None, None)


def test_a_bus_id_left_unknown_resolves_to_none_and_keeps_nccl_topo_xml_unwritten():
    platform = load_platform(FIXTURE)
    assert platform.nics[-1].id == "nic1" and platform.nics[-1].bus is None  # unknown bus ids sort last
    plan = plan_for(topology_of(platform))
    assert "base-2gpu/nccl-topo.xml" not in plan and "base-2gpu/nccl.conf" in plan


def test_nccl_topo_xml_leaves_an_unknown_sm_to_nccl(tmp_path):
    platform = _platform(tmp_path, BASE.replace("bus: unknown", 'bus: "0000:56:00.0"'))
    xml = plan_for(topology_of(platform))["base-2gpu/nccl-topo.xml"]
    assert '<gpu dev="0" sm="80" rank="0"' in xml and '<gpu dev="1" rank="1"' in xml


def test_roofline_says_unknown_and_torchrec_and_calculon_wait():
    plan = plan_for(topology_of(load_platform(FIXTURE)))
    roofline = json.loads(plan["base-2gpu/roofline.json"])
    assert roofline["unknown"] == ["gpu1: HBM, compute, fabric bandwidth (part unknown)"]
    assert (roofline["node"], roofline["gpu_groups"], roofline["intra_node_collectives"]) == (None, None, None)
    assert not any(name.endswith(("torchrec-topology.json", "calculon-system.json")) for name in plan)


def test_estimate_on_unknown_compute_is_a_located_e403_not_a_traceback(capsys):
    assert main(["estimate", str(FIXTURE), "workloads/model-a.yaml"]) == 1
    assert (f"{FIXTURE.relative_to(Path.cwd())}:44:11: error[E403]: cannot estimate with unknown figures: "
            "gpu1: HBM, compute, fabric bandwidth (part unknown)") in capsys.readouterr().err


def test_an_unknown_nic_without_speed_has_no_speed_in_nccl_topo_xml(tmp_path):
    text = BASE.replace("bus: unknown", 'bus: "0000:56:00.0"').replace(
        "  - id: nic1\n    part: connectx-6-200g", '  - id: nic1\n    part: unknown\n    override: {pci_vendor: "0x15b3", pci_device: "0x101b"}').replace(
        'bus: "0000:56:00.0"}', 'bus: "0000:56:00.0", link: {gen: 4, width: 16}}')
    xml = plan_for(topology_of(_platform(tmp_path, text)))["base-2gpu/nccl-topo.xml"]
    (line,) = [line for line in xml.splitlines() if 'name="mlx5_1"' in line]
    assert "speed=" not in line and "gdr=" not in line


def test_an_unknown_parts_override_takes_only_identity_fields(tmp_path):
    text = BASE.replace("fabric: {links: 12}}", "fabric: {links: 12}, hbm: {capacity: 80 GiB}}")
    with pytest.raises(HwspecError) as caught:
        _platform(tmp_path, text)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.line) == ("E112", 45)


def test_a_catalogue_may_not_define_a_part_called_unknown(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "mine.yaml").write_text(
        "hwspec: 1\nkind: parts\ncpus:\n  unknown: {vendor: intel, arch: x86_64, model_name: x, family: 6, model: 85, cores: 4}\n")
    with pytest.raises(HwspecError) as caught:
        _platform(tmp_path, BASE)
    assert "'unknown' is the spec word" in caught.value.diagnostics[0].message


# ------------------------------------------------------------------ import: the draft says only what the input says

REAL_FILES = sorted([*REAL.glob("*.xml"), *REAL.glob("*.txt")]) if REAL.is_dir() else []
LIVE = Path(__file__).resolve().parent / "data" / "live"


def _import(tmp_path: Path, source: Path, capsys) -> tuple[Path, str]:
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(source), "-o", str(draft)]) == 0
    return draft, capsys.readouterr().err


def trusted_attributes(text: str) -> dict[str, str]:
    """The attributes NCCL/RCCL take from a topology file over their own detection, by element:
    a GPU's sm/gcn/arch/gdr and a PCI device's link (by bus id), a net's speed/gdr (by name), and
    NVLink/xGMI counts per GPU pair (links to NVSwitches summed per GPU). `gcn` as its gfx target,
    link speeds as their PCIe generation, so equal facts written two ways compare equal."""
    from xml.etree import ElementTree

    from hwspec.live.observed import PCIE_SPEED_STRINGS

    facts: dict[str, str] = {}
    parents = {child: parent for parent in ElementTree.fromstring(text).iter() for child in parent}
    for element in parents:
        bus = parents[element].get("busid") if element.tag in ("gpu", "nic") else element.get("busid")
        if element.tag == "gpu":
            for key in ("sm", "gcn", "arch", "gdr"):
                if element.get(key) is not None:
                    value = element.get(key, "")
                    facts[f"gpu {bus} {key}"] = f"gfx{value}" if key == "gcn" and value.isdigit() else value
        elif element.tag == "pci" and element.get("link_width") not in (None, "0"):
            facts[f"pci {bus} gen"] = str(PCIE_SPEED_STRINGS.get(element.get("link_speed", ""), element.get("link_speed")))
            facts[f"pci {bus} width"] = element.get("link_width", "")
        elif element.tag == "net":
            for key in ("speed", "gdr"):
                if element.get(key) is not None:
                    facts[f"net {element.get('name')} {key}"] = element.get(key, "")
        elif element.tag in ("nvlink", "xgmi"):
            gpu_bus = parents[parents[element]].get("busid")
            to_switch = element.get("tclass", "").startswith("0x0680")
            key = f"link {gpu_bus} {'nvswitch' if to_switch else element.get('target')}"
            facts[key] = str(int(facts.get(key, "0")) + int(element.get("count", "0")))
    return facts


def generated_topology(out: Path) -> str | None:
    """The NCCL or RCCL topology file `generate` wrote under `out` (None when it wrote none)."""
    files = [*out.glob("*/nccl-topo.xml"), *out.glob("*/rccl-topo.xml")]
    return files[0].read_text() if files else None


def differing_trusted_attributes(source: str, generated: str) -> list[str]:
    """Trusted attributes the generated file states differently from the dump, or states where
    the dump does not (links); attributes of devices the draft leaves out are not compared."""
    seen, written = trusted_attributes(source), trusted_attributes(generated)
    differing = [f"{key}: {seen[key]} in the input, {written[key]} written" for key in sorted(seen.keys() & written.keys())
                 if seen[key] != written[key]]
    links = {key for key in seen.keys() | written.keys() if key.startswith("link ")}
    differing += [f"{key}: {seen.get(key)} in the input, {written.get(key)} written" for key in sorted(links)
                  if seen.get(key) != written.get(key)]
    return differing


@pytest.mark.slow  # imports, validates and diffs every real dump
@pytest.mark.skipif(not REAL_FILES, reason="../shared/data/real-machines is absent")
@pytest.mark.parametrize("source", REAL_FILES, ids=lambda p: p.name)
def test_a_real_dump_drafts_only_parts_its_ids_name_and_validates_and_diffs_clean(tmp_path, capsys, source):
    from hwspec.live.merge import read_inputs

    draft, _ = _import(tmp_path, source, capsys)
    text = draft.read_text()
    assert "nearest" not in text and "not in the parts catalogue" not in text and "figures with the observed" not in text
    seen = read_inputs([source])
    platform = load_platform(draft)
    device_ids = {(d.vendor, d.device) for d in (*seen.gpus.values(), *seen.nics.values())}
    for device in (*platform.gpus, *platform.nics):
        assert device.part == "unknown" or (device.pci_vendor, device.pci_device) in device_ids, device.id
    cpu_ids = {(n.family, n.model) for n in seen.numa.values()}
    assert all(n.part == "unknown" or (n.family, n.model) in cpu_ids for n in platform.sockets)
    if source.name.endswith(".topo-m.txt"):  # nvidia-smi topo -m gives no bus id
        assert all(d.bus is None for d in (*platform.gpus, *platform.nics)) and "bus: unknown" in text
    assert main(["validate", str(draft)]) in (0, 1)
    assert "error[" not in capsys.readouterr().out
    assert main(["diff", str(draft), str(source)]) == 0
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    generated = generated_topology(tmp_path / "out")
    if source.name.endswith((".nccl.xml", ".rccl.xml")) and generated is not None:
        assert differing_trusted_attributes(source.read_text(), generated) == []


def test_a_roce_nic_without_gpudirect_is_drafted_backend_and_nccl_conf_keeps_ib_on(tmp_path, capsys):
    draft, _ = _import(tmp_path, LIVE / "roce-no-gdr.nccl.xml", capsys)
    platform = load_platform(draft)
    assert [(n.id, n.role, n.transport, n.gpudirect) for n in platform.nics] == [
        ("nic0", "backend", "rocev2", False), ("nic1", "backend", "rocev2", False), ("fe0", "ingestion", "tcp", False)]
    conf = plan_for(topology_of(platform))["draft/nccl.conf"]
    assert "NCCL_IB_DISABLE" not in conf and "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1" in conf
    assert main(["diff", str(draft), str(LIVE / "roce-no-gdr.nccl.xml")]) == 0


def test_pci_ids_the_catalogue_lacks_give_part_unknown_with_the_observed_ids(tmp_path, capsys):
    draft, err = _import(tmp_path, LIVE / "unknown-pci-ids.nccl.xml", capsys)
    text = draft.read_text()
    assert ("  part: unknown\n  slot: 0\n  override:\n    vendor: nvidia\n    pci_vendor: \"0x10de\"\n"
            "    pci_device: \"0x2206\"\n    sm: 86\n    fabric: {links: 12}\n") in text
    assert ("  part: unknown\n  override:\n    pci_vendor: \"0x14e4\"\n    pci_device: \"0x1750\"\n    speed: 200 Gb/s\n"
            "    rdma: true\n    gpudirect: true\n  role: backend\n") in text
    assert f"{draft}:25:3: warning[HW603 unknown-facts]: gpu0: unknown GPU part 0x10de:0x2206 (so its HBM, compute and " \
           "fabric figures)\n" in err
    assert "assumed" not in text.split("\ngpus:")[1].split("\nnics:")[0]


def test_hw603_is_one_finding_per_device_naming_all_its_unknown_facts_and_one_for_the_waiting_outputs(tmp_path, capsys):
    topo = tmp_path / "topo.txt"
    topo.write_text("\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\tPIX\t0-15\t0\n"
                    "GPU1\tNV4\t X \tPIX\t0-15\t0\nNIC0\tPIX\tPIX\t X \n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n")
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(topo), "-o", str(draft)]) == 0
    findings = [line.split(": ", 1)[1] for line in capsys.readouterr().err.splitlines() if "HW603" in line]
    assert findings == [
        "warning[HW603 unknown-facts]: waiting for the unknown facts of devices: nccl-topo.xml (PCI bus id of gpu0, gpu1, nic0, rp0; "
        "PCIe link of gpu0, gpu1, nic0); the figures of roofline.json, torchrec-topology.json, calculon-system.json, 'hwspec estimate' "
        "and 'compare' (memory capacity and memory bandwidth of cpu0; GPU part of gpu0, gpu1; PCIe link of gpu0, gpu1, nic0; "
        "NIC speed of nic0)",
        "warning[HW603 unknown-facts]: cpu0: unknown CPU part (so its cores), memory capacity, memory bandwidth",
        "warning[HW603 unknown-facts]: rp0: unknown PCI bus id",
        "warning[HW603 unknown-facts]: gpu0: unknown GPU part (so its HBM, compute and fabric figures), PCI bus id, "
        "PCIe link (no part to take it from)",
        "warning[HW603 unknown-facts]: gpu1: unknown GPU part (so its HBM, compute and fabric figures), PCI bus id, "
        "PCIe link (no part to take it from)",
        "warning[HW603 unknown-facts]: nic0: unknown NIC part, speed, GPUDirect support, PCI bus id, PCIe link (no part to "
        "take it from)"]
    text = draft.read_text().replace("override: {rdma: true}", "override: {rdma: true, speed: 200 Gb/s, gpudirect: true}", 1)
    draft.write_text(text)
    main(["validate", str(draft)])
    nic = [line for line in capsys.readouterr().out.splitlines() if "nic0: unknown" in line]
    assert [line.split(": ", 2)[2] for line in nic] == ["nic0: unknown NIC part, PCI bus id, PCIe link (no part to take it from)"]
