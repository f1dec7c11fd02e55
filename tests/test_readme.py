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

from hwspec.model.load import load_platform
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


# ---------------------------------------------------------------- every YAML and shell example


def blocks(language: str) -> list[str]:
    """Every ```{language} block of the README, in order."""
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def _hwspec(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "hwspec", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def yaml_block(starts: str) -> str:
    """The one ```yaml block of the README that starts with `starts`."""
    (found,) = [b for b in blocks("yaml") if b.startswith(starts)]
    return found


def sh_block(starts: str) -> str:
    """The one ```sh block of the README that starts with `starts`, stripped."""
    (found,) = [b.strip() for b in blocks("sh") if b.startswith(starts)]
    return found


def test_every_shell_example_has_its_test():
    tested = ("python3 -m venv .venv && .venv/bin/pip install -q -e . &&", "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'",
              ".venv/bin/python benchmarks/scale.py", ".venv/bin/python benchmarks/cli_vs_floor.py", "HWSPEC_HYPOTHESIS_PROFILE=deep",
              "hwspec import tests/data/live/", ".venv/bin/pip install -q -e '.[lint]'",
              ".venv/bin/pip install -q -e '.[docs]'")  # tests/test_live.py runs the 'From a live machine' sample block
    assert all(any(b.startswith(prefix) for prefix in tested) for b in blocks("sh")), blocks("sh")


def test_shell_cli_vs_floor_benchmark_runs_quick(tmp_path):
    """Its --quick form (what the block's comment offers); the figures are judged by the benchmark
    itself (exit 1 when a target is missed on a loaded machine), here only that it measures."""
    import json

    command = sh_block(".venv/bin/python benchmarks/cli_vs_floor.py")
    assert "--quick" in command
    result = subprocess.run([sys.executable, "benchmarks/cli_vs_floor.py", "--quick"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert set(json.loads(result.stdout)["targets"]) == {"validate_node", "generate_check_shipped", "generate_16384"}


def test_every_yaml_example_is_plain_yaml_the_loader_reads():
    """Every ```yaml block (fragments included) reads through hwspec's own YAML loader: no
    syntax error, tag, duplicate key or non-string key."""
    from hwspec.source.loader import load_yaml_text

    for block in blocks("yaml"):
        text = block if not block.startswith("- ") else "steps:\n" + "".join("  " + l for l in block.splitlines(True))
        assert load_yaml_text(text, "README.md").data, block






def test_yaml_rules_example_is_accepted_as_written(tmp_path):
    """`severity: off` unquoted is YAML's false: accepted as off (it was refused with E110)."""
    fixture = (ROOT / "tests" / "fixtures" / "rules" / "switch_oversubscribed.yaml").read_text()
    (tmp_path / "p.yaml").write_text(fixture + yaml_block("rules:"))
    result = _hwspec("validate", "p.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, ""), result.stdout


def test_shell_quick_start_generate_runs_as_written(tmp_path):
    """The quick start's first command, on a copy of the repository (fresh .venv, real pip)."""
    command = sh_block("python3 -m venv .venv && .venv/bin/pip install -q -e . &&")
    assert command == "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/hwspec generate"
    work = tmp_path / "repo"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "generated", ".hypothesis", "__pycache__",
                                                             "*.egg-info", "build", "dist"))
    result = subprocess.run(["bash", "-c", command], cwd=work, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    check = subprocess.run([str(work / ".venv" / "bin" / "hwspec"), "generate", "--check", "-o", str(ROOT / "generated")],
                           cwd=work, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout[-3000:]


def test_shell_quick_start_test_command_is_what_ci_runs():
    """The second quick-start command runs this suite, so it is checked, not run: CI runs it."""
    command = sh_block("python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    create, install, run = command.split(" && ")
    assert create in ci and run in ci
    assert install == ".venv/bin/pip install -q -e '.[test]'"
    assert ".venv/bin/pip install -q -e '.[test,lint,consumers]'" in ci  # CI installs the test extra and more


def test_shell_lint_command_is_what_ci_runs():
    """The CI section's local lint command runs the linter and type checker as CI does (CI runs them)."""
    install, *checks = sh_block(".venv/bin/pip install -q -e '.[lint]'").split(" && ")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install == ".venv/bin/pip install -q -e '.[lint]'"
    assert checks == [".venv/bin/ruff check src tests benchmarks", ".venv/bin/mypy"]
    assert all(check in ci for check in checks)


def test_shell_benchmark_command_runs(tmp_path):
    command = sh_block(".venv/bin/python benchmarks/scale.py")
    assert command == ".venv/bin/python benchmarks/scale.py"
    result = subprocess.run([sys.executable, "benchmarks/scale.py"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    import json

    targets = json.loads(result.stdout)["targets"]
    assert set(targets) == {"seconds_2048", "seconds_16384", "peak_rss_mib", "ratio_16384_over_2048"}


def test_shell_deep_profile_command_names_a_registered_profile_and_real_files():
    """Running it is what it is for (minutes); here: the profile exists and the files are there."""
    command = sh_block("HWSPEC_HYPOTHESIS_PROFILE=deep")
    assert command.startswith("HWSPEC_HYPOTHESIS_PROFILE=deep .venv/bin/python -m pytest ")
    from hypothesis import settings

    assert settings.get_profile("deep").max_examples == 400
    for pattern in command.split("-m pytest ", 1)[1].split():
        assert list(ROOT.glob(pattern)), pattern


@pytest.mark.consumer
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
                    reason="mkdocs and its Material theme are not installed (pip install -e '.[docs]')")
def test_shell_docs_build_command_is_what_ci_runs_and_builds_the_site(tmp_path):
    """The Documentation section's command installs the `docs` extra and builds strict, as CI does."""
    install, build = sh_block(".venv/bin/pip install -q -e '.[docs]'").split(" && ")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install in ci
    assert f"NO_MKDOCS_2_WARNING=1 {build}".replace("--site-dir site", '--site-dir "$site_dir"') in ci
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
