"""Transports as typed facts: what each backend transport writes (nccl.conf, launch.env,
nccl-topo.xml), from `hwspec.formats.transports`, and the rules that refuse what cannot run."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from hwspec.formats.transports import TRANSPORTS
from hwspec.generate.engine import plan_for
from hwspec.pipeline import check
from hwspec.spec.models import Transport

ROOT = Path(__file__).resolve().parent.parent
MINIMAL = ROOT / "tests" / "fixtures" / "spec" / "minimal_node.yaml"

# Site parts for the cloud NICs whose PCIe link no public document gives (the catalogue only holds sourced parts).
SITE_PARTS = """hwspec: 1
kind: parts
nics:
  efa-site: {vendor: amazon, model_name: EFA, speed: 100 Gb/s, transports: [efa], rdma: true, gpudirect: true,
             pci_vendor: '0x1d0f', pci_device: '0xefa1', pcie: {gen: 4, width: 16}}
  gvnic-site: {vendor: google, model_name: gVNIC, speed: 200 Gb/s, transports: [tcpx, tcpxo, tcp], rdma: false,
               gpudirect: true, pci_vendor: '0x1ae0', pci_device: '0x0042', pcie: {gen: 4, width: 16}}
"""


def _platform(tmp_path: Path, transport: str, part: str, device: str | None = "mlx5_${g}") -> Path:
    """minimal_node.yaml with its backend NICs on `part` running `transport`."""
    text = MINIMAL.read_text().replace("transport: rocev2", f"transport: {transport}")
    text = text.replace("part: connectx-6-200g", f"part: {part}")
    text = text.replace("device: mlx5_${g}", f"device: {device}" if device else "")
    (tmp_path / "parts").mkdir(exist_ok=True)
    (tmp_path / "parts" / "site.yaml").write_text(SITE_PARTS)
    path = tmp_path / f"{transport}.yaml"
    path.write_text(text)
    return path


def _settings(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def _files(path: Path) -> dict[str, str]:
    checked = check(path)
    assert not checked.failed(), [d.format() for d in checked.diagnostics]
    files = plan_for(checked.topology, only=["nccl-conf", "launch-env", "nccl-topo"])
    return {key.split("/", 1)[1]: text for key, text in files.items()}


def test_the_table_covers_every_transport_the_spec_names():
    assert set(TRANSPORTS) == set(get_args(Transport))
    assert all(net.sources for net in TRANSPORTS.values())
    assert all(s.source for net in TRANSPORTS.values() for s in net.settings + net.gpudirect_settings)


def test_efa_writes_the_libfabric_provider_and_device_rdma_and_no_ib_settings(tmp_path):
    files = _files(_platform(tmp_path, "efa", "efa-site", "rdmap${22+g*8}s0"))
    conf, env = _settings(files["nccl.conf"]), _settings(files["launch.env"])
    assert conf == {"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_NET_GDR_LEVEL": "PIX", "NCCL_CROSS_NIC": "0",
                    "NCCL_TOPO_FILE": "/etc/hwspec/minimal/nccl-topo.xml"}
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert "FI_PROVIDER" not in conf and "NCCL_IB_DISABLE" not in env and "NCCL_IB_HCA" not in env
    assert '<net name="rdmap22s0" dev="0" speed="100000" port="1" gdr="1"/>' in files["nccl-topo.xml"]


def test_efa_without_gpudirect_leaves_device_rdma_unset(tmp_path):
    path = _platform(tmp_path, "efa", "efa-site", "rdmap${22+g*8}s0")
    path.write_text(path.read_text().replace("gpudirect: true", "gpudirect: false"))
    env = _settings(_files(path)["launch.env"])
    assert env["FI_PROVIDER"] == "efa" and "FI_EFA_USE_DEVICE_RDMA" not in env and "NCCL_NET_GDR_LEVEL" not in env


@pytest.mark.parametrize(("transport", "data", "control"), [
    ("tcpx", "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "NCCL_GPUDIRECTTCPX_CTRL_DEV"),
    ("tcpxo", "NCCL_FASTRAK_IFNAME", "NCCL_FASTRAK_CTRL_DEV"),
])
def test_gpudirect_tcpx_names_the_data_and_control_interfaces(tmp_path, transport, data, control):
    files = _files(_platform(tmp_path, transport, "gvnic-site", None))
    assert _settings(files["nccl.conf"]) == {
        "NCCL_SOCKET_IFNAME": "=eth0", data: "eth1,eth2", control: "eth0", "NCCL_CROSS_NIC": "0",
        "NCCL_TOPO_FILE": "/etc/hwspec/minimal/nccl-topo.xml"}
    assert '<net name="eth1" dev="0" speed="200000" port="1" gdr="1"/>' in files["nccl-topo.xml"]


def test_slingshot_writes_hpe_settings_and_sockets_on_the_hsn_interfaces(tmp_path):
    path = _platform(tmp_path, "slingshot", "hpe-slingshot-200g", "cxi${g}")
    path.write_text(path.read_text().replace("interface: eth${g+1}", "interface: hsn${g}"))
    files = _files(path)
    conf, env = _settings(files["nccl.conf"]), _settings(files["launch.env"])
    assert conf["NCCL_SOCKET_IFNAME"] == "=hsn0,hsn1" and "NCCL_NET" not in conf
    assert "# NCCL_NET is not written: its documented value, AWS Libfabric, holds a space" in files["nccl.conf"]
    assert {k: v for k, v in env.items() if k.startswith("FI_")} == {
        "FI_PROVIDER": "cxi", "FI_MR_CACHE_MONITOR": "userfaultfd", "FI_CXI_DISABLE_HOST_REGISTER": "1",
        "FI_CXI_DEFAULT_CQ_SIZE": "131072", "FI_CXI_DEFAULT_TX_SIZE": "2048", "FI_CXI_RDZV_PROTO": "alt_read",
        "FI_CXI_RDZV_EAGER_SIZE": "0", "FI_CXI_RDZV_GET_MIN": "0", "FI_CXI_RX_MATCH_MODE": "hybrid"}
    assert "HSA_FORCE_FINE_GRAIN_PCIE" not in env  # HPE documents it for RCCL only


def test_a_platform_file_still_cannot_name_the_net_plugin(tmp_path):
    path = _platform(tmp_path, "efa", "efa-site", "rdmap${22+g*8}s0")
    path.write_text(path.read_text() + "environment: {NCCL_NET_PLUGIN: ofi}\n")
    assert [d.code for d in check(path).diagnostics if d.code == "HW702"] == ["HW702"]


def test_an_amd_platform_on_tcpx_is_a_located_hw210(tmp_path):
    text = (ROOT / "platforms" / "mi300x-oam.yaml").read_text()
    backend_transport = text.index("transport:", text.index("\nbackend:"))
    path = tmp_path / "mi300x_on_tcpx.yaml"
    path.write_text(text[:backend_transport] + text[backend_transport:].replace("transport: rocev2", "transport: tcpx", 1)
                    .replace("transport: infiniband", "transport: tcpx", 1))
    found = [d for d in check(path).diagnostics if d.code == "HW210"]
    assert [d.format().split(str(tmp_path) + "/", 1)[-1] for d in found] == [
        "mi300x_on_tcpx.yaml:108:14: error[HW210 rccl-transport]: backend.transport is tcpx, which RCCL (the library "
        "of this node's AMD GPUs) cannot use\n  hint: use one RCCL supports: infiniband, rocev2, tcp, slingshot"]


def test_a_nic_part_without_the_transport_is_hw204(tmp_path):
    findings = [d.format() for d in check(_platform(tmp_path, "efa", "connectx-6-200g")).diagnostics if d.code == "HW204"]
    assert findings and all("transport efa is not supported by connectx-6-200g" in f for f in findings)


def test_the_cluster_backend_transport_must_match_the_nodes(tmp_path):
    node = _platform(tmp_path, "efa", "efa-site", "rdmap${22+g*8}s0")
    cluster = (ROOT / "tests" / "fixtures" / "cluster" / "backend_speed_mismatch.yaml").read_text()
    cluster = cluster.replace("../spec/minimal_node.yaml", node.name).replace("speed: 100 Gb/s", "speed: 100 Gb/s")
    path = tmp_path / "cluster_on_rocev2.yaml"
    path.write_text(cluster)
    found = [d.message for d in check(path).diagnostics if d.code == "HW807"]
    assert found and found[0].endswith("nic0 is 100 Gb/s efa, the backend network is 100 Gb/s rocev2")
