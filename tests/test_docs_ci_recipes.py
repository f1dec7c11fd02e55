"""docs/ci-recipes.md's local command is what CI runs: it is checked against .ci/run, not run
here (CI runs the linter and the type checker itself)."""

from __future__ import annotations

from pathlib import Path

from tests.test_docs import fenced

ROOT = Path(__file__).resolve().parent.parent


def test_the_local_lint_command_is_what_ci_runs():
    (command,) = fenced((ROOT / "docs" / "ci-recipes.md").read_text(), "sh")
    install, *checks = command.strip().split(" && ")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install == ".venv/bin/pip install -q -e '.[lint]'"
    assert checks == [".venv/bin/ruff check src tests benchmarks", ".venv/bin/mypy"]
    assert all(check in ci for check in checks)
    assert ".venv/bin/pip install -q -e '.[test,lint,consumers]'" in ci  # CI installs the lint extra and more
