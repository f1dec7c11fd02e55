"""The cloud platforms shipped from public vendor documents (AWS p5.48xlarge, GCP
a3-megagpu-8g, Azure ND H100 v5): they validate with every rule on, a GPU's scale-out
bandwidth is the sum of its own NICs (p5: 4 EFA devices), and what a document does not give
(a3's bus ids) is left to NCCL's detection, not invented."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.perf.platform_figures import figures
from hwspec.pipeline import check
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parents[1]
CLOUDS = ("aws-p5-48xlarge", "gcp-a3-megagpu-8g", "azure-nd-h100-v5")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("name", CLOUDS)
def test_a_cloud_platform_validates_with_every_rule_on(name):
    path = Path("platforms") / f"{name}.yaml"
    assert "rules" not in yaml.safe_load(path.read_text())
    report = check(path)
    assert [d.format() for d in report.diagnostics if d.severity.name == "ERROR"] == []


def test_compare_gives_p5_50_and_a3_25_gb_per_s_per_gpu():
    p5 = figures(topology_of(load_platform("platforms/aws-p5-48xlarge.yaml")))
    a3 = figures(topology_of(load_platform("platforms/gcp-a3-megagpu-8g.yaml")))
    assert (p5.nic_bandwidth, a3.nic_bandwidth) == (50e9, 25e9)


def test_a3_without_bus_ids_gets_no_topology_file_and_no_nccl_topo_file_setting():
    plan = plan_for(topology_of(load_platform("platforms/gcp-a3-megagpu-8g.yaml")))
    assert not any(path.endswith("nccl-topo.xml") for path in plan)
    (conf,) = (text for path, text in plan.items() if path.endswith("nccl.conf"))
    assert "NCCL_TOPO_FILE=" not in conf
    assert "# no NCCL_TOPO_FILE: the platform's bus ids (or NIC links) are not all known" in conf


def test_p5_efa_devices_are_left_to_nccls_detection_by_bus_id():
    plan = plan_for(topology_of(load_platform("platforms/aws-p5-48xlarge.yaml")))
    (xml,) = (text for path, text in plan.items() if path.endswith("nccl-topo.xml"))
    assert '<pci busid="0000:50:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="8"/>' in xml
    assert "<net " not in xml
