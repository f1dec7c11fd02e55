"""An NVSwitch that serves only some of the GPUs lists them (`baseboard.nvswitches[].gpus`, a
DGX-2's two boards): only those GPUs have links to it, in the model, nccl-topo.xml and the link
budget; a name that is not a GPU is E201 at its place."""

from __future__ import annotations

from pathlib import Path

from hwspec.formats.nccl_tree import _nvlinks
from hwspec.testing import check_node_text, load_node_text

ROOT = Path(__file__).resolve().parent.parent
HGX = (ROOT / "platforms" / "hgx-h100.yaml").read_text()
HALVES = (HGX.replace('{id: nvs0, bus: "0000:f3:00.0", links_per_gpu: 5}',
                      '{id: nvs0, bus: "0000:f3:00.0", links_per_gpu: 5, gpus: [gpu0, gpu1, gpu2, gpu3]}')
          .replace('{id: nvs3, bus: "0000:f6:00.0", links_per_gpu: 5}',
                   '{id: nvs3, bus: "0000:f6:00.0", links_per_gpu: 5, gpus: [gpu4, gpu5, gpu6, gpu7]}'))


def test_a_switch_listing_its_gpus_links_only_those():
    assert HALVES != HGX
    platform = load_node_text(HALVES)
    assert [(s.id, s.gpus) for s in platform.baseboard.nvswitches] == [
        ("nvs0", ("gpu0", "gpu1", "gpu2", "gpu3")), ("nvs1", None), ("nvs2", None), ("nvs3", ("gpu4", "gpu5", "gpu6", "gpu7"))]
    links = {(c.a, c.b): c.links for c in platform.nvlinks}
    assert (links[("gpu0", "nvs0")], ("gpu0", "nvs3") in links) == (5, False)
    assert (("gpu7", "nvs0") in links, links[("gpu7", "nvs3")]) == (False, 5)
    assert [target for target, _, _ in _nvlinks(platform)["gpu0"]] == ["0000:f3:00.0", "0000:f4:00.0", "0000:f5:00.0"]


def test_a_switch_naming_something_that_is_not_a_gpu_is_e201_at_the_name():
    text = HALVES.replace("gpus: [gpu0, gpu1, gpu2, gpu3]", "gpus: [gpu0, cpu0]")
    found = [d.format() for d in check_node_text(text, file="h.yaml") if "E201" in d.format()]
    assert found == ["h.yaml:66:70: error[E201]: baseboard.nvswitches[0].gpus[1]: 'cpu0' is a socket, not a GPU\n"
                     "  hint: expected one of: gpu0, gpu1, gpu2, gpu3, gpu4, gpu5, gpu6, gpu7"]
