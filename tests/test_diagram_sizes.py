"""Diagrams a person can read at the size a browser shows: every shipped topology diagram renders
with graphviz without a warning and within a width bound, repeated structure is drawn once, and
a node whose GPUs are summarised gets its fabric in a view of its own (docs/diagrams.md)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hwspec.generate import diagram
from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from tests.test_diagram import parse

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
P5_LIKE = ROOT / "tests" / "fixtures" / "many_nics" / "four_nics_per_gpu.yaml"  # 8 GPUs, 32 NICs, 4 switches of 2 GPUs
BROWSER_WIDTH_PT = 1500
"""2,000 px at 96 dpi (graphviz writes SVG sizes in points, 72 to the inch)."""
ANY_WIDTH_PT = 2000
"""What no node diagram may exceed (the widest today, Zion's fabric view of 8 sockets, is just under)."""
NODE_DIAGRAMS = sorted(p.relative_to(GENERATED).as_posix() for p in GENERATED.rglob("topology*.dot"))
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed (CI installs it)")


def _svg_size(dot_text: str) -> tuple[float, float]:
    """(width, height) in points of the SVG dot renders; fails on any warning."""
    result = subprocess.run(["dot", "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    size = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', result.stdout)
    assert size is not None
    return float(size[1]), float(size[2])


@needs_dot
@pytest.mark.parametrize("relative", NODE_DIAGRAMS)
def test_every_shipped_node_diagram_renders_without_warnings_within_the_width_bound(relative):
    width, height = _svg_size((GENERATED / relative).read_text())
    assert width <= ANY_WIDTH_PT and height <= ANY_WIDTH_PT, (width, height)


@needs_dot
@pytest.mark.parametrize("name", ["aws-p5-48xlarge", "hgx-h100", "hgx-h200", "gb200-tray", "azure-nd-h100-v5",
                                  "gcp-a3-megagpu-8g"])
def test_eight_gpu_and_tray_diagrams_fit_a_browser_window(name):
    for view in ("topology.dot", diagram.FABRIC_VIEW):
        width, _ = _svg_size((GENERATED / name / view).read_text())
        assert width <= BROWSER_WIDTH_PT, (view, width)


@pytest.fixture(scope="module")
def p5_like():
    platform = load_platform(P5_LIKE)
    return platform, plan_for(platform.topology, only=["diagram"])


def test_a_p5_sized_node_draws_one_gpu_with_its_nics_per_socket_and_lists_the_rest(p5_like):
    platform, plan = p5_like
    nodes, edges, _ = parse(plan["four-nics-per-gpu/topology.dot"])
    drawn = {n for n in nodes if not n.startswith(diagram.LEGEND_PREFIX)}
    assert {g.id for g in platform.gpus} & drawn == {"gpu0", "gpu4"}  # the first GPU under each socket
    assert len(drawn) == 2 * 9  # a socket, its frontend NIC, root port, switch, GPU and 4 NICs, twice
    tables = {n: a["label"] for n, a in nodes.items() if n.startswith(diagram.LEGEND_PREFIX + "like_")}
    assert sorted(tables) == sorted(diagram.repeats_node(first) for first in ("gpu0", "rp0", "gpu4", "rp2"))
    assert "<b>1 more like rp0</b>" in tables[diagram.repeats_node("rp0")]  # the other switch, 2 GPUs, 8 NICs
    assert '<td align="left"><b>like nic3</b></td><td align="left">nic7<br/>0000:2c:03.0</td>' in tables[diagram.repeats_node("gpu0")]
    visible = [(a, b) for a, b, attrs in edges if attrs.get("style") != "invis" and not a.startswith(diagram.LEGEND_PREFIX)]
    assert visible and all(a in drawn and b in drawn for a, b in visible)  # no edge to a device in a table


def test_a_p5_sized_node_splits_its_fabric_into_a_view_that_draws_every_gpu(p5_like):
    platform, plan = p5_like
    assert sorted(plan) == ["four-nics-per-gpu/topology-fabric.dot", "four-nics-per-gpu/topology.dot"]
    nodes, edges, _ = parse(plan[f"four-nics-per-gpu/{diagram.FABRIC_VIEW}"])
    gpus = {g.id for g in platform.gpus}
    assert gpus < set(nodes)
    assert not any(b in platform.nics or b in platform.bridge_by_id for _, b, _ in edges)
    overview, _, _ = parse(plan["four-nics-per-gpu/topology.dot"])
    assert f"see {diagram.FABRIC_VIEW}" in overview[diagram.LEGEND_PREFIX + "devices"]["label"]


@needs_dot
def test_a_p5_sized_node_fits_a_browser_window(p5_like):
    _, plan = p5_like
    for text in plan.values():
        assert _svg_size(text)[0] <= BROWSER_WIDTH_PT


def test_a_node_without_repeats_draws_everything_in_one_view():
    platform = load_platform(ROOT / "platforms" / "hpe-ex255a-mi300a.yaml")
    plan = plan_for(platform.topology, only=["diagram"])
    assert list(plan) == ["hpe-ex255a-mi300a/topology.dot"]
    nodes, _, _ = parse(plan["hpe-ex255a-mi300a/topology.dot"])
    assert {n for n in nodes if not n.startswith(diagram.LEGEND_PREFIX)} == set(diagram.device_ids(platform))


def test_the_devices_and_repeats_tables_escape_what_they_show(p5_like):
    platform, _ = p5_like
    table = diagram.devices_table(platform, ["gpu0"], caption='<b>&"caption"')
    assert '<td colspan="5"><b>&lt;b&gt;&amp;"caption"</b></td>' in table
    assert "NVIDIA H100 80GB HBM3" in table


@needs_dot
def test_the_docs_render_a_png_with_the_commands_they_show(tmp_path):
    text = (ROOT / "docs" / "diagrams.md").read_text()
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    (tmp_path / "platforms").symlink_to(ROOT / "platforms")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # this checkout's hwspec, from another directory
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    for png in ("p5.png", "p5-fabric.png"):
        assert (tmp_path / png).read_bytes().startswith(b"\x89PNG")
