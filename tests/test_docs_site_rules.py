"""docs/site-rules.md's examples run as written: the `rules:` override on a platform that needs
it, and the site rule, both from Python and through `hwspec validate --rules`."""

from __future__ import annotations

import re
from pathlib import Path

from hwspec.model.load import load_platform
from hwspec.rules import load_rules, run_rules
from tests.test_docs import commands_and_outputs, fenced, hwspec_on_path, printed, run_shown

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "site-rules.md").read_text()
TWO_GPU_NODE = ROOT / "tests" / "fixtures" / "spec" / "minimal_node.yaml"


def site_rule_source() -> str:
    (source,) = fenced(PAGE, "python")
    return source


def test_the_site_rule_finds_nothing_on_zionex_and_the_gpu_count_on_a_two_gpu_node(tmp_path):
    (tmp_path / "eight_gpus.py").write_text(site_rule_source())
    rules = load_rules([tmp_path])
    assert [(r.id, r.name) for r in rules] == [("SITE001", "eight-gpus")]
    assert run_rules(load_platform(ROOT / "platforms" / "zionex.yaml").topology, rules) == []
    (finding,) = run_rules(load_platform(TWO_GPU_NODE).topology, rules)
    assert (finding.code, finding.message) == ("SITE001", "2 GPUs, expected 8")


def test_the_site_rule_example_runs_as_the_page_shows(tmp_path):
    """In a directory holding the page's rule as site_rules/eight_gpus.py and a two-GPU node."""
    (tmp_path / "site_rules").mkdir()
    (tmp_path / "site_rules" / "eight_gpus.py").write_text(site_rule_source())
    (tmp_path / "node.yaml").write_text(TWO_GPU_NODE.read_text())
    ((command, shown),) = commands_and_outputs(PAGE)
    result = run_shown(command, tmp_path, hwspec_on_path(tmp_path))
    assert (result.returncode, printed(result)) == (1, shown)


def test_the_rules_override_is_accepted_as_written(tmp_path):
    """`severity: off` unquoted is YAML's false: accepted as off, and it silences the platform's HW103."""
    (override,) = fenced(PAGE, "yaml")
    fixture = (ROOT / "tests" / "fixtures" / "rules" / "switch_oversubscribed.yaml").read_text()
    (tmp_path / "p.yaml").write_text(fixture)
    env = hwspec_on_path(tmp_path)
    before = run_shown("hwspec validate p.yaml", tmp_path, env)
    assert re.search(r"warning\[HW103 ", before.stdout), before.stdout
    (tmp_path / "p.yaml").write_text(fixture + override)
    after = run_shown("hwspec validate p.yaml", tmp_path, env)
    assert (after.returncode, after.stdout) == (0, ""), after.stdout
