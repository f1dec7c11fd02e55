"""`unknown` facts: a platform states what its source does not give, and no output makes it up.

(Item 4 of issue 22. The import side, drafting `part: unknown`/`bus: unknown` from real dumps, is
still to come; these tests pin the spec word and its consumers.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError
from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.topology import topology_of

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
