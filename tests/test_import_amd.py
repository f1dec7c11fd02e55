"""AMD inputs are always RCCL's (issue 34, item 3): a GPU with a gfx target is an AMD GPU whatever
PCI ids the input leaves out, so its node gets rccl-topo.xml (RCCL's dialect) and never an
nccl-topo.xml with the compute-unit count as a CUDA `sm` and xGMI written as NVLink."""

from __future__ import annotations

from pathlib import Path

from hwspec.cli.commands import main

LIVE = Path(__file__).resolve().parent / "data" / "live"


def test_a_gfx_target_without_pci_ids_is_an_amd_gpu_and_generates_rccl_topo_xml(tmp_path, capsys) -> None:
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(LIVE / "gfx90a-no-pci-ids.rccl.xml"), "-o", str(draft)]) == 0
    assert ("  override:\n    vendor: amd\n    gcn: gfx90a\n    hip_arch: 36864\n    compute_units: 104\n"
            "    fabric: {kind: xgmi, links: 4}\n") in draft.read_text()
    capsys.readouterr()
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    files = sorted(p.name for p in (tmp_path / "out" / "draft").iterdir())
    assert "rccl-topo.xml" in files and "nccl-topo.xml" not in files
    xml = (tmp_path / "out" / "draft" / "rccl-topo.xml").read_text()
    assert '<system version="2">' in xml and xml.count('sm="104" gcn="gfx90a" arch="36864"') == 2
    assert "<nvlink" not in xml and xml.count('<xgmi target=') == 2
