"""docs/platforms.md and docs/clusters.md name what is shipped and what the generators write."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_the_shipped_platforms_table_has_every_platform_file_once():
    text = (DOCS / "platforms.md").read_text()
    table = text.split("\n| file | node |", 1)[1].split("\n\n", 1)[0]
    files = [name for row in table.splitlines()[2:] for name in re.findall(r"`([\w.-]+\.yaml)`", row.split(" | ")[0])]
    assert sorted(files) == sorted(path.name for path in (ROOT / "platforms").glob("*.yaml"))


def test_the_clusters_page_names_the_nvlink_domain_label_the_generator_writes():
    """The Kubernetes row of "What each consumer gets" names the key label-nodes.sh and the Kueue
    Topology of the shipped NVL72 cluster use."""
    text = (DOCS / "clusters.md").read_text()
    (row,) = [line for line in text.splitlines() if line.startswith("| Kubernetes (`kubernetes/`) |")]
    (key,) = re.findall(r"level `([\w./-]+)`", row)
    generated = ROOT / "generated" / "gb200-nvl72-x4" / "kubernetes"
    assert f" {key}=nvl72-rack0" in (generated / "label-nodes.sh").read_text()
    assert f"- nodeLabel: {key}\n" in (generated / "topology.yaml").read_text()
    assert "topology.hwspec.io/nvlink-domain" not in text
