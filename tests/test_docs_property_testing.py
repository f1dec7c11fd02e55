"""docs/property-testing.md's examples run as written: the site rule and its property test pass,
and fail on the rule with its threshold mistyped; the deep-profile command names a registered
profile and real files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import fenced

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "property-testing.md").read_text()


@pytest.mark.slow  # two pytest runs of a property test
def test_the_site_rule_property_test_passes_and_catches_a_mistyped_threshold(tmp_path):
    rule_source, test_source = fenced(PAGE, "python")
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


def test_the_deep_profile_command_names_a_registered_profile_and_real_files():
    """Running it is what it is for (minutes); here: the profile exists and the files are there."""
    from hypothesis import settings

    (command,) = (block.strip() for block in fenced(PAGE, "sh"))
    assert command.startswith("HWSPEC_HYPOTHESIS_PROFILE=deep .venv/bin/python -m pytest ")
    assert settings.get_profile("deep").max_examples == 400
    for pattern in command.split("-m pytest ", 1)[1].split():
        assert list(ROOT.glob(pattern)), pattern
