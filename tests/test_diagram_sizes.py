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
from hwspec.generate.diagram import repeats
from hwspec.generate.diagram.fabric import edges_between
from hwspec.generate.diagram.repeats import repeats_table
from hwspec.generate.diagram.tree import tree_items
from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.topology import topology_of
from tests.test_diagram import parse

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
P5_LIKE = ROOT / "tests" / "fixtures" / "many_nics" / "four_nics_per_gpu.yaml"  # 8 GPUs, 32 NICs, 4 switches of 2 GPUs
MINIMAL = ROOT / "tests" / "fixtures" / "spec" / "minimal_node.yaml"  # 2 GPUs with a NIC each, NVLink between them
BROWSER_WIDTH_PT = 1500
"""2,000 px at 96 dpi (graphviz writes SVG sizes in points, 72 to the inch)."""
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
def test_every_shipped_node_diagram_renders_without_warnings_and_fits_a_browser_window(relative):
    width, height = _svg_size((GENERATED / relative).read_text())
    assert width <= BROWSER_WIDTH_PT and height <= BROWSER_WIDTH_PT, (width, height)


@needs_dot
@pytest.mark.parametrize("name", ["aws-p5-48xlarge", "hgx-h100", "hgx-h200", "gb200-tray", "azure-nd-h100-v5",
                                  "gcp-a3-megagpu-8g"])
def test_eight_gpu_and_tray_diagrams_fit_a_browser_window(name):
    for view in sorted(p.name for p in (GENERATED / name).glob("topology*.dot")):
        width, _ = _svg_size((GENERATED / name / view).read_text())
        assert width <= BROWSER_WIDTH_PT, (view, width)


@pytest.fixture(scope="module")
def p5_like():
    platform = load_platform(P5_LIKE)
    return platform, plan_for(topology_of(platform), only=["diagram"])


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
    plan = plan_for(topology_of(platform), only=["diagram"])
    assert list(plan) == ["hpe-ex255a-mi300a/topology.dot"]
    nodes, _, _ = parse(plan["hpe-ex255a-mi300a/topology.dot"])
    assert {n for n in nodes if not n.startswith(diagram.LEGEND_PREFIX)} == set(diagram.device_ids(platform))


def test_the_devices_and_repeats_tables_escape_what_they_show(p5_like):
    platform, _ = p5_like
    table = diagram.devices_table(platform, ["gpu0"], caption='<b>&"caption"')
    assert '<td colspan="5"><b>&lt;b&gt;&amp;"caption"</b></td>' in table
    assert "NVIDIA H100 80GB HBM3" in table


@pytest.mark.slow  # renders PNGs with graphviz's dot
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


def _drawn(text: str) -> set[str]:
    return {n for n in parse(text)[0] if not n.startswith(diagram.LEGEND_PREFIX)}


def test_a_node_that_fits_the_width_budget_draws_every_device_and_its_nvlinks_in_one_view():
    platform = load_platform(MINIMAL)
    assert diagram.drawing_width(platform) <= diagram.WIDTH_BUDGET_PT
    plan = plan_for(topology_of(platform), only=["diagram"])
    assert list(plan) == ["minimal/topology.dot"]  # no table of repeats, no fabric view
    text = plan["minimal/topology.dot"]
    assert _drawn(text) == set(diagram.device_ids(platform))
    nodes, edges, _ = parse(text)
    assert not any(n.startswith(diagram.LEGEND_PREFIX + "like_") for n in nodes)
    nvlink = [(a, b, attrs) for a, b, attrs in edges if attrs.get("class") == "nvlink"]
    assert [(a, b) for a, b, _ in nvlink] == [("gpu0", "gpu1")] and "xlabel" not in nvlink[0][2]
    assert ">NV12</td>" in nodes[diagram.LEGEND_PREFIX + "nvlink_matrix"]["label"]  # the link count, in the pair table
    # the NICs outside, the GPUs side by side: the NVLink between them crosses no NIC
    assert '{ rank="same"; "nic0"; "gpu0"; }' in text and '{ rank="same"; "gpu1"; "nic1"; }' in text


def test_a_node_wider_than_the_budget_is_summarised_and_the_estimate_says_so(p5_like):
    platform, _ = p5_like
    assert diagram.drawing_width(platform) > 2 * diagram.WIDTH_BUDGET_PT  # 40 boxes under 4 switches


@needs_dot
@pytest.mark.parametrize("path", [MINIMAL, P5_LIKE, ROOT / "platforms" / "gb200-tray.yaml"])
def test_the_width_estimate_is_within_a_tenth_of_what_dot_draws(path):
    platform = load_platform(path)
    top, drawn, _ = tree_items(platform, summarise=False)
    edges = [e for e in edges_between(platform, drawn, fabric=False)]
    body = "\n".join(_statements(top) + edges)
    width, _ = _svg_size(f'graph g {{ graph [nodesep="0.15"]; node [fontname="Helvetica", fontsize="10", margin="0.08,0.04"];\n{body}\n}}')
    assert abs(diagram.drawing_width(platform) - width) <= width / 10, (diagram.drawing_width(platform), width)


def _statements(items) -> list[str]:
    lines = []
    for item in items:
        if isinstance(item, diagram.Cluster):
            lines += [f"subgraph {item.id} {{ graph [{item.attrs}];", *_statements(item.items), "}"]
        else:
            lines.append(item)
    return lines


def test_the_legend_shows_only_what_the_picture_draws():
    platform = load_platform(MINIMAL)
    nodes, _, _ = parse(plan_for(topology_of(platform), only=["diagram"])["minimal/topology.dot"])
    legend = nodes[diagram.LEGEND]["label"]
    shown = re.findall(r'<td align="left">([^<]+)</td>', legend)
    assert shown == ["CPU socket", "PCIe switch", "GPU", "backend NIC", "ingestion / frontend NIC", "PCIe", "NVLink / xGMI"]


@pytest.mark.parametrize("relative", NODE_DIAGRAMS)
def test_no_shipped_diagram_labels_an_nvlink_or_c2c_edge(relative):
    _, edges, _ = parse((GENERATED / relative).read_text())
    assert not [(a, b) for a, b, attrs in edges if attrs.get("class") in ("nvlink", "c2c") and "xlabel" in attrs]


def test_the_repeats_table_escapes_ids_and_bus_ids(p5_like, monkeypatch):
    platform, _ = p5_like
    monkeypatch.setattr(repeats, "bus_text", lambda _platform, item_id: f"bus<{item_id}>")
    first = 'g<0>&"x"'
    node = repeats_table(platform, [first, "n&0"], [['g<1>"', "n]1"]])
    assert node.startswith(f'{diagram.quote(diagram.repeats_node(first))} [shape="plaintext"')
    assert "<b>1 more like g&lt;0&gt;&amp;\"x\"</b>" in node
    assert '<td align="left"><b>like n&amp;0</b></td><td align="left">n]1<br/>bus&lt;n]1&gt;</td>' in node
    assert '<td align="left">g&lt;1&gt;"<br/>bus&lt;g&lt;1&gt;"&gt;</td>' in node


CLUSTER_DIAGRAMS = sorted(p.relative_to(GENERATED).as_posix() for p in GENERATED.glob("*/cluster.dot"))


@needs_dot
@pytest.mark.parametrize("relative", CLUSTER_DIAGRAMS)
def test_every_shipped_cluster_diagram_renders_without_warnings_and_fits_a_browser_window(relative):
    width, height = _svg_size((GENERATED / relative).read_text())
    assert width <= BROWSER_WIDTH_PT and height <= BROWSER_WIDTH_PT, (width, height)


def test_a_rail_optimized_pods_leaves_are_one_box_and_its_hosts_one_hostlist():
    text = (GENERATED / "dgx-h100-16" / "cluster.dot").read_text()
    nodes, edges, _ = parse(text)
    assert nodes["hosts0"]["label"] == "dgxh100-[00-15]\\n16 x hgx-h100, 8 GPUs each"
    assert nodes["leaves0"]["label"] == "rail0-leaf0 ... rail7-leaf0\\n8 leaves, one per rail"
    assert [(a, b) for a, b, attrs in edges if attrs.get("style") != "invis"] == [("hosts0", "leaves0")]
