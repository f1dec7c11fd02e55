"""HW208: a NIC name made from a PCI location (systemd's predictable names, rdma-core's NAME_PCI)
names the bus, slot and function of the NIC's bus id, in decimal as Linux writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.testing import check_node_text

ROOT = Path(__file__).resolve().parent.parent
HGX = (ROOT / "platforms" / "hgx-h100.yaml").read_text()
NICS = "    interface: ibp${g//2*64+28+g%2*16}s0\n"


def hw208(text: str) -> list[str]:
    return [d.format() for d in check_node_text(text, file="h.yaml") if d.code == "HW208"]


def test_the_shipped_names_agree_with_their_bus_ids():
    assert NICS in HGX and hw208(HGX) == []


def test_a_bus_read_as_decimal_digits_of_its_hex_is_a_located_error_naming_the_right_name():
    text = HGX.replace(NICS, "    interface: ibp${g//2*40+17+g%2*10}s0\n")  # nic0 at 0x1c named ibp17s0, nic1 at 0x2c ibp27s0...
    found = hw208(text)
    assert found[0] == ("h.yaml:96:16: error[HW208 nic-name-bus]: nic0: interface ibp17s0 names bus 17, but its bus id "
                        "0000:1c:00.0 is bus 28 (Linux writes them in decimal: ibp28s0...)\n"
                        "  hint: copy the name from 'ip link' or 'ibv_devices' on the node, and the bus id from 'lspci -D'")
    assert len(found) == 8


def test_a_name_with_hex_letters_is_not_a_pci_path_name_and_is_not_compared():
    assert hw208(HGX.replace(NICS, "    interface: ibp${g//2*0x40+0x1c+g%2*0x10:x}s0\n")) == []  # ibp1cs0


@pytest.mark.parametrize("name, bus, expected", [
    ("enp23s0f1np1", "0000:17:00.1", None),
    ("enp23s0f0", "0000:17:00.1", "function 0, but its bus id 0000:17:00.1 is function 1 (Linux writes them in decimal: enp23s0f1...)"),
    ("enP1p23s0", "0001:17:00.0", None),
    ("enp23s0", "0001:17:00.0", "domain 0, but its bus id 0001:17:00.0 is domain 1 (Linux writes them in decimal: enP1p23s0...)"),
    ("rdmap16s27", "0000:10:1b.0", None),
    ("rdmap16s26", "0000:10:1b.0", "slot 26, but its bus id 0000:10:1b.0 is slot 27 (Linux writes them in decimal: rdmap16s27...)"),
    ("eth0", "0000:10:1b.0", None),
    ("mlx5_0", "0000:10:1b.0", None),
])
def test_each_part_of_the_location_is_compared_where_the_name_has_it(name, bus, expected):
    text = HGX.replace(NICS, f"    interface: {name}\n").replace(
        'bus: "0000:${g//2*0x40+0x1c+g%2*0x10:02x}:00.0"}', f'bus: "{bus}"}}', 1)
    text = text.replace("  - repeat: {g: 0..7}\n    id: nic${g}", "  - repeat: {g: 0..0}\n    id: nic${g}")
    found = [f for f in hw208(text) if "nic0:" in f]
    assert [f.split("\n")[0].split(f"interface {name} names ", 1)[1] for f in found] == ([expected] if expected else [])
