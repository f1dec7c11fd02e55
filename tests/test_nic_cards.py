"""NIC cards and their ports: a NIC entry is a card (one PCI function, one PCIe link) that may
list its `ports:`, each with its id, names, speed and GPUs. Every consumer reads the ports: the
per-GPU scale-out share sums the ports that serve the GPU, the PCIe rules count the card's link
once, NCCL's topology file writes one `<pci>` with one `<net>` per port (one guid), and
NCCL_IB_HCA names each port as device:port.

Fixtures: tests/fixtures/cards/ (two H100s on one Gen5 switch, one ConnectX-7 2x200G per GPU
with both ports cabled)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.perf import roofline as rf
from hwspec.testing import check_node_text
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
CARDS = ROOT / "tests" / "fixtures" / "cards"
TWO_PORTS = CARDS / "card_two_ports.yaml"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _text(**changes: str) -> str:
    text = TWO_PORTS.read_text()
    for old, new in changes.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def _formatted(text: str) -> list[str]:
    return [d.format() for d in check_node_text(text, file="card.yaml")]


def test_a_card_with_two_ports_validates_clean_with_every_rule() -> None:
    assert _formatted(TWO_PORTS.read_text()) == []


def test_each_port_is_a_nic_of_its_card_sharing_the_cards_bus_and_link() -> None:
    p = load_platform(TWO_PORTS)
    assert [(n.id, n.card, n.port, n.device, n.bus, n.gpus) for n in p.nics] == [
        ("nic0p1", "nic0", 1, "mlx5_0", "0000:1c:00.0", ("gpu0",)),
        ("nic0p2", "nic0", 2, "mlx5_1", "0000:1c:00.0", ("gpu0",)),
        ("nic1p1", "nic1", 1, "mlx5_2", "0000:2c:00.0", ("gpu1",)),
        ("nic1p2", "nic1", 2, "mlx5_3", "0000:2c:00.0", ("gpu1",)),
    ]
    assert {n.card_id for n in p.nics} == {"nic0", "nic1"}


def test_both_ports_count_in_each_gpus_scale_out_share() -> None:
    topology = topology_of(load_platform(TWO_PORTS))
    assert topology.scale_out_share("gpu0") == 50e9  # 2 x 200 Gb/s
    tier = rf.roofline(topology)["gpu_groups"][0]["tiers"]["backend_nic"]
    assert (tier["bandwidth_bytes_per_s"], tier["nics"]) == (50e9, 2)


def test_a_port_may_run_below_its_parts_speed() -> None:
    text = _text(**{"{id: nic0p2, device: mlx5_1, gpu: gpu0}": "{id: nic0p2, device: mlx5_1, gpu: gpu0, speed: 100 Gb/s}"})
    from hwspec.testing import load_node_text

    topology = topology_of(load_node_text(text))
    assert (topology.scale_out_share("gpu0"), topology.scale_out_share("gpu1")) == (37.5e9, 50e9)


def test_nccl_topology_writes_one_pci_per_card_with_a_net_per_port_and_one_guid() -> None:
    xml = next(iter(plan_for(topology_of(load_platform(TWO_PORTS)), only=["nccl-topo"]).values()))
    card = re.search(r'<pci busid="0000:1c:00.0" class="0x020700"[^>]*>\n\s*<nic>\n(.*?)</nic>', xml, re.S)
    assert card is not None
    assert card.group(1).split("\n")[:2] == [
        '            <net name="mlx5_0" dev="0" speed="200000" port="1" guid="0x1c000" gdr="1"/>',
        '            <net name="mlx5_1" dev="1" speed="200000" port="2" guid="0x1c000" gdr="1"/>']
    assert xml.count('<pci busid="0000:1c:00.0"') == 1 and xml.count("<net ") == 4


def test_nccl_ib_hca_names_every_port_by_its_rdma_device_and_that_devices_port() -> None:
    # each port is its own mlx5 device (port 1 of it); NCCL's topology file numbers them 1, 2 on the card
    conf = next(iter(plan_for(topology_of(load_platform(TWO_PORTS)), only=["nccl-conf"]).values()))
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1\n" in conf


def test_ports_sharing_one_rdma_device_are_named_by_their_port_numbers() -> None:
    from hwspec.testing import load_node_text

    text = _text(**{"device: mlx5_1, gpu: gpu0": "device: mlx5_0, gpu: gpu0"})
    platform = load_node_text(text)
    conf = next(iter(plan_for(topology_of(platform), only=["nccl-conf"]).values()))
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_0:2,mlx5_2:1,mlx5_3:1\n" in conf


def test_the_switch_counts_a_cards_link_once() -> None:
    # 2 GPUs + 2 cards, each Gen5 x16, below one Gen5 x16 uplink: 4:1 (the ports would make it 6:1)
    findings = _formatted(_text(**{"max_oversubscription: 4": "max_oversubscription: 3"}))
    assert findings == ["card.yaml:22:11: warning[HW103 pcie-oversubscription]: sw0: 252 GB/s of links below it "
                        "(gpu0, nic0, gpu1, nic1) share its Gen5 x16 uplink (63 GB/s): 4:1, above its "
                        "max_oversubscription of 3\n"
                        "  hint: widen the uplink, move devices to another bridge, or raise max_oversubscription "
                        "if the traffic pattern allows it"]


def test_a_slow_card_link_is_reported_once_for_the_card_at_the_cards_line() -> None:
    text = _text(**{'pcie: {upstream: sw0, bus: "0000:1c:00.0"}':
                    'pcie: {upstream: sw0, bus: "0000:1c:00.0", link: {gen: 3, width: 8}}'})
    findings = [f for f in _formatted(text) if "HW401" in f]
    assert findings == ["card.yaml:39:54: error[HW401 nic-path-bandwidth]: nic0: 200 Gb/s NIC (25 GB/s) sits behind a "
                        "Gen3 x8 link (7.88 GB/s)\n"
                        "  hint: give the NIC (and the bridges above it) a link at least as fast as the NIC"]


@pytest.mark.parametrize("change, expected", [
    ({"    ports:\n      - {id: nic0p1": "    gpu: gpu0\n    ports:\n      - {id: nic0p1"},
     "card.yaml:32:5: error[E110]: nics[0]: with 'ports', give 'gpu' in each port, not on the card"),
    ({"{id: nic0p2, device: mlx5_1, gpu: gpu0}": "{id: nic0p2, port: 1, device: mlx5_1, gpu: gpu0}"},
     "card.yaml:32:5: error[E110]: nics[0]: port 1 is listed more than once"),
    ({"{id: nic0p2, device: mlx5_1, gpu: gpu0}": "{id: nic1p1, device: mlx5_1, gpu: gpu0}"},
     "card.yaml:45:14: error[E202]: duplicate id 'nic1p1' (also used by nics[0].ports[1])"),
    ({"{id: nic0p2, device: mlx5_1, gpu: gpu0}": "{id: nic0p2, device: mlx5_1, gpu: gpu7}"},
     "card.yaml:38:43: error[E201]: nics[0].ports[1].gpu: 'gpu7' does not name a GPU\n"
     "  hint: did you mean 'gpu1'? known: gpu0, gpu1"),
])
def test_a_card_naming_its_ports_wrongly_is_a_located_error(change: dict, expected: str) -> None:
    assert _formatted(_text(**change)) == [expected]


# ---------------------------------------------------------------- import


LIVE = ROOT / "tests" / "data" / "live"
PEX_DUMP = LIVE / "dual-port-pex-gen2-upstream.nccl.xml"


def test_a_dual_port_dump_behind_pex_switches_drafts_one_card_per_function_clean_with_every_rule(tmp_path, capsys) -> None:
    from hwspec.cli.commands import main

    draft = tmp_path / "draft.yaml"
    assert main(["import", str(PEX_DUMP), "-o", str(draft)]) == 0
    text = draft.read_text()
    assert ("- id: nic0\n  part: connectx-7-2x200g\n  role: backend\n  transport: infiniband\n  ports:\n"
            "  - {id: nic0p1, gpu: gpu0, device: mlx5_0}\n  - {id: nic0p2, gpu: gpu0, device: mlx5_1}\n"
            "  pcie: {upstream: sw1, bus: '0000:19:00.0'}\n") in text
    assert "backend: {transport: infiniband, nic_per_gpu: true, gpudirect: true," in text
    capsys.readouterr()
    assert main(["validate", str(draft)]) == 0
    assert "error[" not in capsys.readouterr().out
    assert [d for d in check_node_text(text, file="draft.yaml") if d.severity == "error"] == []
    assert main(["diff", str(draft), str(PEX_DUMP)]) == 0
    topology = topology_of(load_platform(draft))
    assert [topology.scale_out_share(g) for g in ("gpu0", "gpu1")] == [50e9, 50e9]
    assert [topology.path_type("gpu0", n) for n in topology.nics_of("gpu0")] == ["PXB", "PXB"]
    xml = next(iter(plan_for(topology, only=["nccl-topo"]).values()))
    assert xml.count('<pci busid="0000:19:00.0"') == 1
    assert ('<net name="mlx5_0" dev="0" speed="200000" port="1" guid="0x19000" gdr="1"/>\n'
            '            <net name="mlx5_1" dev="1" speed="200000" port="2" guid="0x19000" gdr="1"/>') in xml


def test_lstopos_interfaces_of_one_function_become_the_ports_of_one_card(tmp_path) -> None:
    from hwspec.cli.commands import main

    draft = tmp_path / "draft.yaml"
    assert main(["import", str(LIVE / "nic-dual-port.lstopo.xml"), "-o", str(draft)]) == 0
    assert ("- id: fe0\n  part: intel-e810-cqda2\n  role: ingestion\n  transport: tcp\n  ports:\n"
            "  - {id: fe0p1, interface: eth0}\n  - {id: fe0p2, interface: eth9}\n") in draft.read_text()
    assert [(n.id, n.card, n.port, n.interface) for n in load_platform(draft).host_nics] == [
        ("fe0p1", "fe0", 1, "eth0"), ("fe0p2", "fe0", 2, "eth9")]


def test_compare_counts_both_ports_of_each_card(capsys) -> None:
    from hwspec.cli.commands import main

    assert main(["compare", "platforms/oci-bm-gpu-h100-8.yaml", "platforms/gcp-a3-megagpu-8g.yaml"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "NIC bandwidth" in line]
    assert rows == [["per-GPU", "NIC", "bandwidth", "50", "GB/s", "25", "GB/s", "0.5x"]]


def test_a_cards_part_is_judged_once_for_all_its_ports() -> None:
    text = _text(**{"part: connectx-7-2x200g\n    role: backend\n    transport: infiniband\n    ports:\n      - {id: nic0p1":
                    "part: ethernet-100g\n    role: backend\n    transport: infiniband\n    ports:\n      - {id: nic0p1"})
    hw204 = [f.split(": ", 1)[1].split("\n")[0] for f in _formatted(text) if "HW204" in f]
    assert hw204 == ["error[HW204 backend-nic-rdma]: nic0: backend NIC part ethernet-100g (100GbE adapter) cannot do RDMA",
                     "error[HW204 backend-nic-rdma]: nic0: backend.gpudirect is declared, but ethernet-100g does not support "
                     "GPUDirect RDMA",
                     "error[HW204 backend-nic-rdma]: nic0: transport infiniband is not supported by ethernet-100g (supports tcp)"]


def test_ports_that_are_functions_of_their_own_keep_their_bus_and_the_card_its_one_link() -> None:
    from hwspec.testing import load_node_text

    text = _text(**{"{id: nic0p2, device: mlx5_1, gpu: gpu0}": '{id: nic0p2, device: mlx5_1, gpu: gpu0, bus: "0000:1c:00.1"}'})
    platform = load_node_text(text)
    assert [(n.id, n.bus) for n in platform.nics[:2]] == [("nic0p1", "0000:1c:00.0"), ("nic0p2", "0000:1c:00.1")]
    assert _formatted(text) == []
    hw103 = [f for f in _formatted(text.replace("max_oversubscription: 4", "max_oversubscription: 3")) if "HW103" in f]
    assert len(hw103) == 1 and "sw0: 252 GB/s of links below it (gpu0, nic0, gpu1, nic1)" in hw103[0]  # the card once
    xml = next(iter(plan_for(topology_of(platform), only=["nccl-topo"]).values()))
    assert xml.count("<pci busid=\"0000:1c:00.") == 1 and xml.count('guid="0x1c000"') == 2


def test_a_port_bus_of_another_device_is_a_located_error() -> None:
    text = _text(**{"{id: nic0p2, device: mlx5_1, gpu: gpu0}": '{id: nic0p2, device: mlx5_1, gpu: gpu0, bus: "0000:1d:00.1"}'})
    assert _formatted(text) == ["card.yaml:32:5: error[E110]: nics[0]: port nic0p2's bus 0000:1d:00.1 is not a function "
                                "of the card's device 0000:1c:00 (its ports are functions .0, .1, ... of one device)"]


def test_two_functions_of_one_device_draft_as_one_card_whose_ports_keep_their_functions(tmp_path, capsys) -> None:
    from hwspec.cli.commands import main

    dump = LIVE / "dual-function-card.nccl.xml"
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(dump), "-o", str(draft)]) == 0
    assert ("  ports:\n  - {id: nic0p1, gpu: gpu0, device: mlx5_0}\n"
            "  - {id: nic0p2, gpu: gpu0, device: mlx5_1, bus: '0000:19:00.1'}\n"
            "  pcie: {upstream: rp0, bus: '0000:19:00.0'}\n") in draft.read_text()
    assert main(["diff", str(draft), str(dump)]) == 0
    capsys.readouterr()
    conf = next(iter(plan_for(topology_of(load_platform(draft)), only=["nccl-conf"]).values()))
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" in conf
