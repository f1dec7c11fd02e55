"""The catalogue for current machines (issue 44): Xeon 6, EPYC 9005, MI355X, Thor 2 400G, Pollara
400, BlueField-3 2x400G and ConnectX-8 2x400G load with the figures their sources give, each
figure with its source (or an assumption saying why); an MI355X node of them validates and is
written to rccl-topo.xml."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from hwspec.formats.nccl_topology import check_rccl_xml
from hwspec.generate.engine import plan_for
from hwspec.model.parts import load_catalogue
from hwspec.testing import check_node_text, load_node_text
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = load_catalogue([ROOT / "src/hwspec/data/parts"])
NEW = {"cpus": ["xeon-6980p", "xeon-6776p", "epyc-9575f", "epyc-9965"], "gpus": ["mi355x-oam-288gb"],
       "nics": ["broadcom-bcm57608-1x400g", "amd-pensando-pollara-400", "bluefield-3-2x400g", "connectx-8-2x400g"]}


@pytest.mark.parametrize(("kind", "name", "field", "value"), [
    ("cpus", "xeon-6980p", ("cores",), 128), ("cpus", "xeon-6980p", ("model",), 0xAD),
    ("cpus", "xeon-6776p", ("cores",), 64), ("cpus", "epyc-9575f", ("family",), 191), ("cpus", "epyc-9575f", ("model",), 2),
    ("cpus", "epyc-9965", ("cores",), 192),
    ("gpus", "mi355x-oam-288gb", ("gcn",), "gfx950"), ("gpus", "mi355x-oam-288gb", ("hip_arch",), 38911),
    ("gpus", "mi355x-oam-288gb", ("compute_units",), 256), ("gpus", "mi355x-oam-288gb", ("pci_device",), "0x75a0"),
    ("gpus", "mi355x-oam-288gb", ("fabric", "links"), 7), ("gpus", "mi355x-oam-288gb", ("hbm", "bandwidth"), 8e12),
    ("nics", "broadcom-bcm57608-1x400g", ("speed",), 50e9), ("nics", "amd-pensando-pollara-400", ("pci_vendor",), "0x1dd8"),
    ("nics", "bluefield-3-2x400g", ("ports",), 2), ("nics", "connectx-8-2x400g", ("pcie", "gen"), 6),
])
def test_each_new_part_has_the_figure_its_source_gives(kind, name, field, value):
    got = CATALOGUE.get(kind, name).model
    for key in field:
        got = getattr(got, key)
    assert got == pytest.approx(value) if isinstance(value, float) else got == value


@pytest.mark.parametrize(("kind", "name"), [(kind, name) for kind, names in NEW.items() for name in names])
def test_each_new_part_names_its_source_and_every_figure_without_one_says_why(kind, name):
    part = CATALOGUE.get(kind, name)
    assert part.note().source
    for path, note in part.notes.items():
        assert note.source or note.assumed, (name, path)


def test_an_mi355x_node_on_turin_with_thor2_nics_validates_and_is_written_for_rccl():
    text = (ROOT / "platforms" / "mi300x-oam.yaml").read_text(encoding="utf-8")
    for old, new in (("part: mi300x-oam-192gb", "part: mi355x-oam-288gb"), ("part: epyc-9654", "part: epyc-9575f"),
                     ("    part: connectx-7-400g\n", "    part: broadcom-bcm57608-1x400g\n"), ("device: mlx5_${g}", "device: bnxt_re${g}")):
        assert old in text
        text = text.replace(old, new)
    assert [f.format() for f in check_node_text(text, file="mi355x.yaml") if f.severity.label == "error"] == []
    written = plan_for(topology_of(load_node_text(text, file="mi355x.yaml")))["mi300x-oam/rccl-topo.xml"]
    assert check_rccl_xml(written) == []
    root = ElementTree.fromstring(written)
    assert {(g.get("gcn"), g.get("arch"), g.get("sm")) for g in root.iter("gpu")} == {("gfx950", "38911", "256")}
    assert {c.get("familyid") for c in root.iter("cpu")} == {"191"}
    assert re.findall(r'<net name="bnxt_re0"[^>]*speed="(\d+)"', written) == ["400000"]
