"""The parts catalogue page (reference/parts.md, rendered by hwspec.cli.docsgen.parts_reference at
site build time): every built-in part is on it with its figures and their sources, and its
example of a site part validates as the page says."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from hwspec.cli import docsgen
from tests.cli import run_hwspec

ROOT = Path(__file__).resolve().parent.parent
PARTS_DIR = ROOT / "src" / "hwspec" / "data" / "parts"
SECTIONS = ("cpus", "gpus", "nics", "pcie_switches")


def shipped_parts() -> dict[str, list[str]]:
    """Every part name in the package's parts files, by section, read with plain YAML (not hwspec's loader)."""
    names: dict[str, list[str]] = {section: [] for section in SECTIONS}
    for path in sorted(PARTS_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for section in SECTIONS:
            names[section] += list(data.get(section) or {})
    return names


def part_section(page: str, name: str) -> str:
    return page.split(f"\n### {name} {{ #{name} }}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]


def test_every_part_in_the_package_has_a_row_in_its_kinds_table_and_a_section_of_its_own():
    page = docsgen.parts_reference()
    parts = shipped_parts()
    assert sum(len(names) for names in parts.values()) >= 60  # 68 when this was written
    headings = {"cpus": "CPUs", "gpus": "GPUs", "nics": "NICs", "pcie_switches": "PCIe switches"}
    for section, names in parts.items():
        table = page.split(f"\n## {headings[section]}\n", 1)[1].split("\n## ", 1)[0]
        assert sorted(re.findall(r"^\| \[`([\w.-]+)`\]", table, re.MULTILINE)) == sorted(names), section
        for name in names:
            assert f"\n### {name} {{ #{name} }}\n" in page, name
    for name in ("epyc-7r13", "aws-efa-v2-100g", "broadcom-pex890xx"):  # the names the issue looked for
        assert f"[`{name}`](#{name})" in page


def test_a_parts_figures_show_their_units_meaning_and_source():
    page = docsgen.parts_reference()
    efa = part_section(page, "aws-efa-v2-100g")
    assert "NIC: **Elastic Fabric Adapter (EFA v2)**, `nics` in `data/parts/nics-cloud.yaml`." in efa
    assert "| `speed` | 100 Gb/s | Per port, per direction. |  |" in efa
    assert "| `pcie` | Gen4 x8 |" in efa
    assert "Assumed: device id 0xefa1 is the second-generation EFA" in efa
    h100 = part_section(page, "h100-sxm5-80gb")
    assert "| `hbm.capacity` | 80 GiB | size | 5 HBM3 stacks x 16 GiB; NVIDIA markets it as 80 GB |" in h100
    assert "| `compute.bf16` | 989.5 TFLOPS | Dense peak per dtype. | datasheet: BF16 Tensor Core 1,979 teraFLOPS" in h100
    # a block's source is given once, on its first row
    assert "| `fabric.kind` | nvlink4 |  | `fabric`: datasheet: NVLink 900 GB/s" in h100
    assert "| `fabric.links` | 18 | Links the part has. |  |" in h100
    switch = part_section(page, "broadcom-pex890xx")
    assert "| `gen` | 5 | The PCIe generation the switch's ports support at most. |" in switch


def test_the_site_part_example_validates_in_a_parts_directory_beside_the_platform(tmp_path):
    """The page's parts file, in platforms/parts/, and a shipped platform whose sockets name the
    new part as the page's fragment does: validate is clean, and reports a broken figure in
    the parts file at its line."""
    page = docsgen.parts_reference()
    example, fragment = re.findall(r"^```yaml\n(.*?)^```", page.split("\n## Adding a site part\n", 1)[1],
                                   re.DOTALL | re.MULTILINE)
    assert (example, fragment) == (docsgen.SITE_PART_EXAMPLE, docsgen.SITE_PART_PLATFORM)
    platforms = tmp_path / "platforms"
    (platforms / "parts").mkdir(parents=True)
    (platforms / "parts" / "site-cpus.yaml").write_text(example)
    node = (ROOT / "platforms" / "hgx-h100.yaml").read_text().replace("part: xeon-platinum-8480p", "part: xeon-platinum-8275cl")
    assert fragment in node
    (platforms / "node.yaml").write_text(node)

    def validate() -> subprocess.CompletedProcess:
        return run_hwspec("validate", "node.yaml", cwd=platforms)

    result = validate()
    assert (result.returncode, result.stdout) == (0, ""), result.stdout
    (platforms / "parts" / "site-cpus.yaml").write_text(example.replace("cores: 24", "cores: many"))
    result = validate()
    assert result.returncode != 0
    line = example.splitlines().index("    cores: 24") + 1
    assert f"parts/site-cpus.yaml:{line}:" in result.stdout, result.stdout
