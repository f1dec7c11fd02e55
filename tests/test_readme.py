"""The README's examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from hwspec.load import load_platform
from hwspec.rules import load_rules, run_rules

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def python_blocks(section: str) -> list[str]:
    """The ```python blocks of the README section headed `## {section}`."""
    body = README.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, re.DOTALL)


def test_the_rules_section_site_rule_works(tmp_path):
    (rule_source,) = python_blocks("Rules")
    (tmp_path / "site.py").write_text(rule_source)
    rules = load_rules([tmp_path])
    assert [(r.id, r.name) for r in rules] == [("SITE001", "eight-gpus")]
    zionex = load_platform(ROOT / "platforms" / "zionex.yaml")
    assert run_rules(zionex.topology, rules) == []
    small = load_platform(ROOT / "tests" / "fixtures" / "spec" / "minimal_node.yaml")
    (finding,) = run_rules(small.topology, rules)
    assert (finding.code, finding.message) == ("SITE001", "2 GPUs, expected 8")


def test_the_property_testing_example_passes_and_catches_a_mistyped_threshold(tmp_path):
    rule_source, test_source = python_blocks("Property-based testing")
    (tmp_path / "site_rules").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "site_rules" / "switches.py").write_text(rule_source)
    (tmp_path / "tests" / "test_site.py").write_text(test_source)
    (tmp_path / "tests" / "conftest.py").write_text(
        "from hypothesis import Phase, settings\n"
        "settings.register_profile('quick', max_examples=60, derandomize=True, database=None, deadline=None,\n"
        "                          phases=[Phase.explicit, Phase.generate])  # no shrinking: failing is enough here\n"
        "settings.load_profile('quick')\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_site.py",
               "-o", "addopts=", "-W", "ignore::DeprecationWarning"]
    env = {**os.environ, "COLUMNS": "200"}  # pytest shortens its summary lines to the terminal width
    passed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert passed.returncode == 0, passed.stdout[-2000:]
    (tmp_path / "site_rules" / "switches.py").write_text(rule_source.replace("> 4:", "> 5:"))
    failed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert failed.returncode == 1, failed.stdout[-2000:]
    assert "FAILED tests/test_site.py::test_gpus_per_switch_fires_exactly_on_crowded_switches" in failed.stdout
    assert "AssertionError" in failed.stdout, failed.stdout[-2000:]
