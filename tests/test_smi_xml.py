"""`nvidia-smi -q -x` as a live input: what it gives per GPU, how it completes a `topo -m`
import, and hostile files as located diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.live.diff import diff
from hwspec.live.inputs import read_input, sniff
from hwspec.live.merge import read_inputs
from hwspec.live.smi_xml import normalise_bus_id, split_pci_id
from hwspec.model.load import load_platform

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "tests/data/live"
GPU = """  <gpu id="{bus}">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <pci>
      <pci_device_id>233010DE</pci_device_id>
      <pci_bus_id>{bus}</pci_bus_id>
      <pci_gpu_link_info>
        <pcie_gen><max_link_gen>5</max_link_gen><current_link_gen>1</current_link_gen></pcie_gen>
        <link_widths><max_link_width>{width}</max_link_width><current_link_width>16x</current_link_width></link_widths>
      </pci_gpu_link_info>
    </pci>
  </gpu>
"""


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def smi(tmp_path: Path, *gpus: str, head: str = "") -> Path:
    path = tmp_path / "smi.xml"
    path.write_text(f'<?xml version="1.0" ?>\n<nvidia_smi_log>\n{head}' + "".join(gpus) + "</nvidia_smi_log>\n")
    return path


def messages(machine) -> list[str]:
    """The problems as `validate` prints them, the input named by its file name only."""
    return [Path(d.file).name + d.format()[len(d.file):] for d in machine.problems]


def test_nvml_bus_ids_and_pci_ids_are_written_as_nccl_writes_them():
    assert normalise_bus_id("00000000:07:00.0") == "0000:07:00.0"
    assert normalise_bus_id("0000:0A:00.0") == "0000:0a:00.0"
    assert normalise_bus_id("00010000:07:00.0") is None  # a domain of more than 16 bits
    assert split_pci_id("233010DE") == ("0x10de", "0x2330")
    assert split_pci_id("0x234110DE") == ("0x10de", "0x2341")


def test_the_h100_sample_gives_eight_gpus_with_bus_ids_pci_ids_and_max_links_and_no_nvlinks():
    m = read_input(LIVE / "smi-h100-8gpu.xml")
    assert m.problems == []
    platform = load_platform("platforms/hgx-h100.yaml")
    assert [g.bus for g in m.gpus.values()] == sorted(g.bus for g in platform.gpus)
    assert {(g.vendor, g.device, g.subsystem_vendor, g.subsystem_device) for g in m.gpus.values()} == {
        ("0x10de", "0x2330", "0x10de", "0x16c1")}
    assert {str(g.link) for g in m.gpus.values()} == {"Gen5 x16"}
    assert {str(g.current_link) for g in m.gpus.values()} == {"Gen1 x16"}
    assert [g.index for g in m.gpus.values()] == list(range(8))
    assert m.nvlinks == [] and "nvlinks" not in m.listed and not m.has_tree


def test_the_gb200_tray_sample_gives_its_nvlink_domain_and_clique():
    m = read_input(LIVE / "smi-gb200-tray.xml")
    assert [g.bus for g in m.gpus.values()] == ["0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"]
    assert {(g.vendor, g.device) for g in m.gpus.values()} == {("0x10de", "0x2941")}
    assert {(g.fabric.cluster_uuid, g.fabric.clique_id, g.fabric.state) for g in m.gpus.values() if g.fabric} == {
        ("00000001-0000-0000-0000-000000000001", 2, "Completed")}
    assert all(g.fabric for g in m.gpus.values())


def test_an_hgx_board_all_zero_cluster_uuid_is_no_nvlink_domain(tmp_path):
    gpu = GPU.format(bus="00000000:18:00.0", width="16x").replace(
        "  </gpu>", "    <fabric><state>Completed</state><cliqueId>0</cliqueId>"
        "<clusterUuid>00000000-0000-0000-0000-000000000000</clusterUuid></fabric>\n  </gpu>")
    assert read_input(smi(tmp_path, gpu)).gpus["0000:18:00.0"].fabric is None


def test_the_format_is_recognised_by_its_root_element():
    assert sniff((LIVE / "smi-gb200-tray.xml").read_bytes()) == "smi-xml"
    assert read_input(LIVE / "smi-gb200-tray.xml").sources[0][1] == "nvidia-smi -q -x"


def test_smi_completes_a_topo_m_import_with_bus_ids_and_part_identities():
    m = read_inputs([LIVE / "zionex.topo-m.txt", LIVE / "zionex.smi.xml"])
    assert m.problems == []
    platform = load_platform("platforms/zionex.yaml")
    assert [(g.key, g.bus, g.vendor, g.device) for g in m.gpus_in_order()] == [
        (f"GPU{g.index}", g.bus, "0x10de", "0x20b0") for g in platform.gpus]
    assert len(m.nics) == 8 and len(m.nvlinks) > 0  # topo -m's NICs and NVLinks are kept
    assert diff(platform, m) == []


def test_smi_matches_an_nccl_dump_by_bus_id_and_a_different_model_is_a_located_contradiction(tmp_path):
    text = (LIVE / "zionex.smi.xml").read_text().replace("20B010DE", "233010DE", 1)
    path = tmp_path / "smi.xml"
    path.write_text(text)
    m = read_inputs([LIVE / "zionex.nccl.xml", path])
    assert messages(m) == ["smi.xml:7:2: warning[I104 input-contradiction]: GPU 0000:14:00.0 PCI id: 0x10de:0x2330 here, "
                           "but 0x10de:0x20b0 in tests/data/live/zionex.nccl.xml:5; keeping 0x10de:0x20b0"]
    assert m.gpus["0000:14:00.0"].model_name == "NVIDIA A100 40GB (OAM)"


def test_diff_of_a_spec_against_smi_compares_bus_ids_and_models():
    platform = load_platform("platforms/zionex.yaml")
    found = [d.format() for d in diff(platform, read_inputs([LIVE / "smi-h100-8gpu.xml"]))]
    at = platform.locate("gpu0")
    assert (f"platforms/zionex.yaml:{at.line}:{at.col}: error[D101 missing-device]: gpu0 (NVIDIA A100 40GB (OAM), "
            "0000:14:00.0) is not in the machine: no GPU at bus id 0000:14:00.0 in tests/data/live/smi-h100-8gpu.xml") in found
    assert sum("D101" in f for f in found) == 8 and sum("D102" in f for f in found) == 8


def test_the_draft_notes_the_nvlink_domain():
    from hwspec import content
    from hwspec.live.draft import draft_text
    from hwspec.model.parts import load_catalogue

    _, notes = draft_text(read_inputs([LIVE / "smi-gb200-tray.xml"]), load_catalogue([content.builtin_dir("parts")]), "tray")
    assert notes == ["gpu0, gpu1, gpu2, gpu3 are in the multi-node NVLink domain 00000001-0000-0000-0000-000000000001, "
                     "clique 2 (the fabric manager's registration, as NVML or nvidia-smi -q reports it): the domain is the cluster's, not described in a node platform"]


# ------------------------------------------------------------------ hostile input


def test_a_billion_laughs_entity_is_a_located_syntax_error(tmp_path):
    path = tmp_path / "smi.xml"
    path.write_text('<!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>\n'
                    "<nvidia_smi_log>&b;</nvidia_smi_log>")
    assert messages(read_input(path)) == ["smi.xml:1:38: error[I101 input-syntax]: entity declarations are not accepted "
                                          "(they can expand without bound)"]


def test_ten_thousand_gpus_are_refused_at_the_first_one_too_many(tmp_path):
    gpus = [f'<gpu id="0000:{i // 256:02x}:{i % 32:02x}.{i % 8}"/>\n' for i in range(10_000)]
    m = read_input(smi(tmp_path, *gpus))
    assert messages(m) == ["smi.xml:67:1: error[I101 input-syntax]: 10000 GPUs, more than the 64 one node has: "
                           "not one node's topology"]
    assert m.gpus == {}


def test_a_non_numeric_link_width_is_a_located_warning_and_the_width_is_unknown(tmp_path):
    m = read_input(smi(tmp_path, GPU.format(bus="00000000:18:00.0", width="sixteen")))
    assert messages(m) == ["smi.xml:10:22: warning[I103 input-value]: <max_link_width> 'sixteen' is not a lane count such as 16x"]
    assert m.gpus["0000:18:00.0"].link.width is None and m.gpus["0000:18:00.0"].link.gen == 5


def test_a_bus_id_with_odd_characters_is_a_located_warning_and_the_gpu_keeps_its_position(tmp_path):
    m = read_input(smi(tmp_path, GPU.format(bus="0000:18:00.0\u202e;rm", width="16x")))
    assert messages(m) == ["smi.xml:7:7: warning[I103 input-value]: '0000:18:00.0\\u202e;rm' is not a PCI bus id 'dddd:bb:dd.f'"]
    assert [(g.key, g.bus, g.device) for g in m.gpus.values()] == [("GPU0", None, "0x2330")]


def test_another_root_element_and_a_gpu_count_that_disagrees_are_located(tmp_path):
    other = tmp_path / "other.xml"
    other.write_text("<nvidia_smi_log_x/>")
    assert messages(read_input(other, "smi-xml")) == [
        "other.xml:1:1: error[I101 input-syntax]: the root element is <nvidia_smi_log_x>, not <nvidia_smi_log>: "
        "not 'nvidia-smi -q -x' output"]
    m = read_input(smi(tmp_path, GPU.format(bus="00000000:18:00.0", width="16x"), head="<attached_gpus>2</attached_gpus>\n"))
    assert messages(m) == ["smi.xml:3:1: warning[I104 input-contradiction]: attached_gpus says 2, but the file has 1 <gpu> elements"]
