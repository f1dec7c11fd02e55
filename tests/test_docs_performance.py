"""docs/performance.md's benchmark commands run: the scale benchmark as written, the CLI-vs-floor
one in its --quick form (what the block's comment offers). The figures are judged by the
benchmarks themselves (exit 1 when a target is missed on a loaded machine); here, that they
measure what the page's tables show."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import fenced

pytestmark = pytest.mark.slow  # the benchmarks run (at small sizes)

ROOT = Path(__file__).resolve().parent.parent
SCALE, CLI_VS_FLOOR = (block.strip() for block in fenced((ROOT / "docs" / "performance.md").read_text(), "sh"))


def test_the_scale_benchmark_runs_and_reports_its_targets():
    assert SCALE == ".venv/bin/python benchmarks/scale.py"
    result = subprocess.run([sys.executable, "benchmarks/scale.py"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    targets = json.loads(result.stdout)["targets"]
    sizes = (16, 256, 2048, 16384)
    assert set(targets) == {f"seconds_{n}" for n in sizes} | {f"peak_rss_mib_{n}" for n in sizes} | {"ratio_16384_over_2048"}


def test_the_cli_vs_floor_benchmark_runs_quick():
    assert CLI_VS_FLOOR.startswith(".venv/bin/python benchmarks/cli_vs_floor.py ") and "--quick" in CLI_VS_FLOOR
    result = subprocess.run([sys.executable, "benchmarks/cli_vs_floor.py", "--quick"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert set(json.loads(result.stdout)["targets"]) == {"validate_node", "generate_check_shipped", "generate_16384",
                                                         "peak_mib_generate_16384"}


def test_the_page_states_the_guards_the_benchmark_checks():
    """The guards are set at 2026-11-29's figures (issue 46): what the page says is what exits 1."""
    module = ast.parse((ROOT / "benchmarks" / "cli_vs_floor.py").read_text())
    constants = {target.id: ast.literal_eval(node.value) for node in module.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name) and target.id in ("TARGETS", "PEAK_TARGET_MIB")}
    assert constants == {"TARGETS": {"validate_node": 5.0, "generate_check_shipped": 9.0, "generate_16384": 11.0,
                                     "generate_65536": 11.0}, "PEAK_TARGET_MIB": 150.0}
    page = " ".join((ROOT / "docs" / "performance.md").read_text().split())
    assert ("validate of a node <= 5x the floor, `generate --check` of the shipped platforms <= 9x, `generate` of 16,384 "
            "and of 65,536 nodes <= 11x each, peak memory < 150 MiB") in page
