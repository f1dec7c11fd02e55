"""The README's examples run as written."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


# ---------------------------------------------------------------- every shell example, and the README's size


def blocks(language: str) -> list[str]:
    """Every ```{language} block of the README, in order."""
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def sh_block(starts: str) -> str:
    """The one ```sh block of the README that starts with `starts`, stripped."""
    (found,) = [b.strip() for b in blocks("sh") if b.startswith(starts)]
    return found


def test_every_shell_example_has_its_test():
    tested = ("python3 -m venv .venv && .venv/bin/pip install -q -e . &&", "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'",
              ".venv/bin/pip install -q -e '.[docs]'")
    assert all(any(b.startswith(prefix) for prefix in tested) for b in blocks("sh")), blocks("sh")


def test_the_readme_is_at_most_200_lines_and_shows_no_yaml_to_keep_in_step():
    """The README introduces, installs, starts and links; the documentation is docs/ (whose
    examples tests/test_docs.py runs)."""
    assert len(README.splitlines()) <= 200
    assert blocks("yaml") == [] and blocks("python") == []


@pytest.mark.slow  # a virtual environment and pip
def test_shell_quick_start_generate_runs_as_written(tmp_path):
    """The quick start's first command, on a copy of the repository (fresh .venv, real pip)."""
    command = sh_block("python3 -m venv .venv && .venv/bin/pip install -q -e . &&")
    assert command == "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/hwspec generate"
    work = tmp_path / "repo"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv*", ".git", "site", ".*_cache", "generated", ".hypothesis", "__pycache__",
                                                             "*.egg-info", "build", "dist"))
    result = subprocess.run(["bash", "-c", command], cwd=work, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    check = subprocess.run([str(work / ".venv" / "bin" / "hwspec"), "generate", "--check", "-o", str(ROOT / "generated")],
                           cwd=work, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout[-3000:]
    # The install section's activation, then the tutorial's first step in an empty directory, as
    # a new shell with only the system's PATH runs them.
    for page in (README, (ROOT / "docs" / "index.md").read_text(), (ROOT / "docs" / "tutorial.md").read_text()):
        assert "`. .venv/bin/activate`" in page
    (tmp_path / "empty").mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    tutorial = subprocess.run(["bash", "-c", f". .venv/bin/activate && cd {tmp_path / 'empty'} && command -v hwspec && "
                               "hwspec schema -o hwspec.schema.json"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert (tutorial.returncode, tutorial.stdout) == (0, f"{work}/.venv/bin/hwspec\n"), tutorial.stderr
    assert (tmp_path / "empty" / "hwspec.schema.json").stat().st_size > 100_000


def test_shell_quick_start_test_command_is_what_ci_runs():
    """The second quick-start command runs this suite, so it is checked, not run: CI runs it."""
    command = sh_block("python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    create, install, run = command.split(" && ")
    assert create in ci and run in ci
    assert install == ".venv/bin/pip install -q -e '.[test]'"
    assert ".venv/bin/pip install -q -e '.[test,lint,consumers]'" in ci  # CI installs the test extra and more


@pytest.mark.consumer
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
                    reason="mkdocs and its Material theme are not installed (pip install -e '.[docs]')")
def test_shell_docs_build_command_is_what_ci_runs_and_builds_the_site(tmp_path):
    """The Documentation section's command installs the `docs` extra and builds strict, as CI does
    (from a virtual environment of its own, .venv-docs, with nothing else in it)."""
    install, build = sh_block(".venv/bin/pip install -q -e '.[docs]'").split(" && ")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "python3 -m venv .venv-docs" in ci
    assert install.replace(".venv/", ".venv-docs/") in ci
    assert f"NO_MKDOCS_2_WARNING=1 {build}".replace("--site-dir site", '--site-dir "$site_dir"').replace(".venv/", ".venv-docs/") in ci
    assert [line for line in ci if line.startswith(".venv-docs/bin/pip")] == [install.replace(".venv/", ".venv-docs/")]
    built = subprocess.run([sys.executable, "-m", "mkdocs", *build.split()[1:-1], str(tmp_path / "site")], cwd=ROOT,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "site" / "commands" / "index.html").exists()


def test_every_relative_link_names_a_file_of_the_repository():
    """The README's links into docs/ work on GitHub: each names a file that exists."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(relative) >= 10
    assert [link for link in relative if not (ROOT / link).is_file()] == []
