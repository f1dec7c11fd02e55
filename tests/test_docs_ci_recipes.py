"""docs/ci-recipes.md's local commands: the lint command is what CI runs (checked against .ci/run,
not run here: CI runs the linter and the type checker itself); the fast test loop selects what
it says (collected, not run: it is this suite)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.test_docs import fenced

ROOT = Path(__file__).resolve().parent.parent


def test_the_local_lint_command_is_what_ci_runs():
    (command,) = [b for b in fenced((ROOT / "docs" / "ci-recipes.md").read_text(), "sh") if "ruff" in b]
    install, *checks = command.strip().split(" && ")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install == ".venv/bin/pip install -q -e '.[lint]'"
    assert checks == [".venv/bin/ruff check src tests benchmarks", ".venv/bin/mypy"]
    assert all(check in ci for check in checks)
    assert ".venv/bin/pip install -q -e '.[test,lint,consumers]'" in ci  # CI installs the lint extra and more


@pytest.mark.slow  # collects part of the suite in a second pytest
def test_the_fast_loop_leaves_out_the_slow_and_consumer_tests():
    """The page's fast loop is the README's test command with the `slow` and `consumer` marks
    (registered in pyproject.toml) left out: collected here, it keeps the fast tests and leaves
    out the wheel's (slow) and pre-commit's (consumer)."""
    (command,) = [b.strip() for b in fenced((ROOT / "docs" / "ci-recipes.md").read_text(), "sh") if "pytest" in b]
    words = shlex.split(command)
    assert words[:5] == [".venv/bin/python", "-m", "pytest", "-q", "-m"] and words[5:] == ["not slow and not consumer"]
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert {m.split(":")[0] for m in options["markers"]} >= {"slow", "consumer"}
    assert "-n auto" in options["addopts"]

    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", words[5],
                             "tests/test_wheel.py", "tests/test_ci.py", "tests/test_docs_ci_recipes.py"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    fast = {line.split("::")[1] for line in result.stdout.splitlines() if "::" in line}
    assert {"test_the_local_lint_command_is_what_ci_runs", "test_the_hooks_are_the_two_the_page_configures"} <= fast
    # this test, the wheel's and the hooks' runs are slow; pre-commit's own run is a consumer
    assert not any(word in name for name in fast for word in ("fast_loop", "wheel", "hooks_entries", "pre_commit_runs_the_hooks")), fast
