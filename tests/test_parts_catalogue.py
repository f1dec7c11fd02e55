"""The parts catalogue as import uses it: every part identifiable by PCI ids and sourced, no two
parts import cannot tell apart, and real dumps drafted with the part their ids name (issue 22,
item 4: identify parts across the parts in the field)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from hwspec import content
from hwspec.cli.commands import main
from hwspec.live.identify import ids_assumed
from hwspec.model.load import load_platform
from hwspec.model.parts import load_catalogue
from hwspec.topology import topology_of
from tests.shared_data import REAL_MACHINES as REAL

LIVE = Path(__file__).resolve().parent / "data" / "live"
CATALOGUE = load_catalogue([content.builtin_dir("parts")])
ID_KINDS = ("gpus", "nics", "pcie_switches")


def _parts(kind: str):
    return sorted(CATALOGUE.parts.get(kind, {}).items())


@pytest.mark.parametrize("kind", ID_KINDS)
def test_every_catalogue_part_has_pci_ids_and_a_source(kind):
    for name, part in _parts(kind):
        assert part.model.pci_vendor.startswith("0x") and part.model.pci_device.startswith("0x"), name
        note = part.note()
        assert note is not None and note.source, f"{kind}.{name} names no source"


def _told_apart(kind: str, a, b) -> bool:
    """Whether import can tell two parts with the same PCI ids apart by a declared fact."""
    if kind == "gpus":
        return a.sm != b.sm or a.gcn != b.gcn or a.compute_units != b.compute_units
    if kind == "nics":
        return a.speed != b.speed or not set(a.transports) & set(b.transports)
    return False


@pytest.mark.parametrize("kind", ["gpus", "nics"])
def test_no_two_parts_share_pci_ids_without_a_declared_distinguishing_fact(kind):
    for (name_a, a), (name_b, b) in combinations(_parts(kind), 2):
        if (a.model.pci_vendor, a.model.pci_device) != (b.model.pci_vendor, b.model.pci_device):
            continue
        borrowed = ids_assumed(CATALOGUE, kind, name_a) != ids_assumed(CATALOGUE, kind, name_b)
        assert borrowed or _told_apart(kind, a.model, b.model), f"{name_a} and {name_b} share ids and nothing tells them apart"


def _draft(tmp_path: Path, *args: str, status: int = 0) -> tuple[str, str]:
    out = tmp_path / "draft.yaml"
    assert main(["import", *args, "-o", str(out)]) == status
    return out.read_text(), str(out)


REAL_PARTS = {
    "panlichen-8xrtx3090.nccl.xml": ({"geforce-rtx-3090"}, {"unknown"}),       # a ConnectX-6 at 56 Gb/s: no part
    "rwkv-2xrtx4090.nccl.xml": ({"geforce-rtx-4090"}, {"connectx-4-2x100g"}),
    "hwloc-power8-4xp100.lstopo.xml": ({"p100-sxm2-16gb"}, set()),
    "aliyun-simai-8xa100-4xcx6.nccl.xml": ({"a100-sxm4-80gb"}, {"unknown"}),   # CX-6 Dx bonds at 200 Gb/s
    "rocm-rccl-8xmi300x.rccl.xml": ({"mi300x-oam-192gb"}, {"connectx-7-400g"}),
}


@pytest.mark.parametrize("name", sorted(REAL_PARTS))
def test_a_real_dump_is_drafted_with_the_parts_its_ids_name(tmp_path, name):
    if not (REAL / name).is_file():
        pytest.skip("../shared/data/real-machines is absent")
    _, path = _draft(tmp_path, str(REAL / name))
    platform = load_platform(path)
    gpus, nics = REAL_PARTS[name]
    assert ({g.part for g in platform.gpus}, {n.part for n in platform.nics}) == (gpus, nics)


MI250 = """\
<system version="2">
  <cpu numaid="0" arch="x86_64" vendor="AuthenticAMD" familyid="25" modelid="1">
    <pci busid="0000:c1:00.0" class="0x038000" vendor="0x1002" device="0x740c" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="CUS" gcn="gfx90a" arch="9999" rank="0" gdr="1"/>
    </pci>
  </cpu>
</system>
"""


@pytest.mark.parametrize(("cus", "part", "status"), [("110", "mi250x-gcd-64gb", 0), ("104", "mi250-gcd-64gb", 0), ("100", "unknown", 0)])
def test_mi250x_and_mi250_sharing_a_device_id_are_told_apart_by_the_compute_units_rccl_writes_as_sm(tmp_path, cus, part, status):
    source = tmp_path / "mi250.xml"
    source.write_text(MI250.replace("CUS", cus))
    text, _ = _draft(tmp_path, str(source), status=status)
    assert f"  part: {part}\n" in text


TWIN = """\
# yaml-language-server: $schema=../schema/hwspec.schema.json
hwspec: 1
kind: parts
gpus:
  a100-twin:
    source: "a test board that shows the A100 SXM4 40GB's ids"
    vendor: nvidia
    model_name: Other A100 Board
    form_factor: sxm4
    sm: 80
    pci_vendor: "0x10de"
    pci_device: "0x20b0"
    hbm: {capacity: 40 GiB, bandwidth: 1555 GB/s}
    compute: {fp32: 19.5 TFLOPS}
    fabric: {kind: nvlink3, links: 12, link_bandwidth: 25 GB/s}
    pcie: {gen: 4, width: 16}
"""


def _twin_parts(tmp_path: Path) -> Path:
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "twin.yaml").write_text(TWIN)
    return parts


def test_two_parts_the_ids_do_not_tell_apart_leave_part_unknown_and_a_note_naming_both(tmp_path, capsys):
    text, _ = _draft(tmp_path, "--parts", str(_twin_parts(tmp_path)), str(LIVE / "minimal-node.nccl.xml"))
    assert "a100-twin" not in text.split("\ngpus:")[1].split("\nnics:")[0] and "  part: unknown\n" in text
    assert ("hwspec: note: gpu0: the GPU 0x10de:0x20b0 fits catalogue parts a100-sxm4-40gb, a100-twin, which the input "
            "does not tell apart: left 'part: unknown' (name the part, or import nvidia-smi -q -x with the other inputs)"
            in capsys.readouterr().err)


def test_the_model_name_the_driver_reports_settles_parts_sharing_ids(tmp_path):
    text, _ = _draft(tmp_path, "--parts", str(_twin_parts(tmp_path)), str(LIVE / "minimal-node.lstopo.xml"))
    assert "  part: a100-sxm4-40gb\n" in text and "part: unknown" not in text.split("\ngpus:")[1].split("\nnics:")[0]


def test_a_part_that_borrows_another_parts_ids_gives_way_to_the_part_whose_ids_are_sourced(tmp_path):
    text, _ = _draft(tmp_path, str(LIVE / "minimal-node.nccl.xml"))
    assert ids_assumed(CATALOGUE, "gpus", "a100-oam-40gb") and not ids_assumed(CATALOGUE, "gpus", "a100-sxm4-40gb")
    assert "  part: a100-sxm4-40gb\n" in text and "a100-oam-40gb" not in text


def test_a_gpu_without_fabric_links_may_leave_link_bandwidth_out_but_one_with_links_may_not(tmp_path, capsys):
    parts = _twin_parts(tmp_path)
    (parts / "twin.yaml").write_text(TWIN.replace(", link_bandwidth: 25 GB/s", ""))
    assert main(["import", "--parts", str(parts), str(LIVE / "minimal-node.nccl.xml"), "-o", str(tmp_path / "d.yaml")]) == 2
    assert "a part with fabric links states 'link_bandwidth' (per link, per direction)" in capsys.readouterr().err
    assert CATALOGUE.get("gpus", "l4-24gb").model.fabric.link_bandwidth is None


def test_a_pcie_card_without_fabric_links_has_known_figures_and_a_roofline():
    """An L4 leaves `link_bandwidth` out because it has no fabric links: that is a known 0, not an
    unknown figure, so the roofline, TorchRec and the estimates are written for it."""
    from hwspec.perf import roofline as rf
    from hwspec.testing.nodes import load_node_text

    platform = load_node_text(
        "hwspec: 1\nkind: node\nname: l4\nsockets:\n- id: cpu0\n  part: epyc-7763\n  numa_node: 0\n"
        "  memory: {capacity: 256 GiB, bandwidth: 80 GB/s}\n  cpus: 0-127\n"
        "gpus:\n- id: gpu0\n  part: l4-24gb\n  pcie: {upstream: cpu0, bus: '0000:11:00.0'}\n")
    (gpu,) = platform.gpus
    assert (gpu.fabric_links, gpu.fabric_link_bandwidth) == (0, 0.0)
    assert platform.unknown_figures == ()
    assert rf.roofline(topology_of(platform))["gpu_groups"][0]["tiers"]["hbm"]["bandwidth_bytes_per_s"] == 300e9


def test_a_gcd_whose_dump_gives_no_gfx_target_nor_cu_count_gets_what_both_parts_of_its_id_share(tmp_path, capsys):
    """MI250X and MI250 GCDs share 1002:740c: without RCCL's sm (compute units) the GCD stays
    `part: unknown`, with the gcn and hip_arch both parts have, marked assumed; HW911 then asks
    for the compute units only, saying where to read them."""
    source = tmp_path / "mi250.xml"
    source.write_text(MI250.replace(' sm="CUS" gcn="gfx90a" arch="9999"', ""))
    text, _ = _draft(tmp_path, str(source), status=1)
    assert "    pci_device: \"0x740c\"\n    gcn: gfx90a\n    hip_arch: 38911\n" in text
    assert ("  assumed: 'gcn gfx90a: what the catalogue''s parts of its device id (mi250-gcd-64gb, mi250x-gcd-64gb) all have; "
            "hip_arch 38911: what the catalogue''s parts of its device id (mi250-gcd-64gb, mi250x-gcd-64gb) all have'\n") in text
    assert ("error[HW911 rccl-topo-writable]: gpu0: part unknown and its override: gives no compute_units; RCCL's <gpu> needs "
            "gcn, arch and sm (the compute-unit count): write them under override: (compute_units: rocminfo's Compute Unit "
            "count; or an RCCL topology dump's gcn, arch and sm)") in capsys.readouterr().err
