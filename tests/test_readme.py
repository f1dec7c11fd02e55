"""The README's examples run as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def python_blocks(section: str) -> list[str]:
    """The ```python blocks of the README section headed `## {section}`."""
    body = README.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, re.DOTALL)


# ---------------------------------------------------------------- every YAML and shell example, and the code list


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
              "hwspec import tests/data/live/", ".venv/bin/pip install -q -e '.[lint]'")  # tests/test_live.py runs the 'From a live machine' sample block
    assert all(any(b.startswith(prefix) for prefix in tested) for b in blocks("sh")), blocks("sh")


def test_every_yaml_example_is_plain_yaml_the_loader_reads():
    """Every ```yaml block (fragments included) reads through hwspec's own YAML loader: no
    syntax error, tag, duplicate key or non-string key."""
    from hwspec.source.loader import load_yaml_text

    for block in blocks("yaml"):
        text = block if not block.startswith("- ") else "steps:\n" + "".join("  " + l for l in block.splitlines(True))
        assert load_yaml_text(text, "README.md").data, block


def test_yaml_environment_example_validates_clean_on_a_platform(tmp_path):
    fixture = (ROOT / "tests" / "fixtures" / "rules" / "base_2gpu.yaml").read_text()
    (tmp_path / "p.yaml").write_text(fixture + yaml_block("environment:"))
    result = _hwspec("validate", "p.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, ""), result.stdout


def test_yaml_outline_names_only_real_sections():
    from hwspec.source.loader import load_yaml_text
    from hwspec.spec.models import NodeSpec

    outline = load_yaml_text(yaml_block("sockets:            #"), "README.md").data
    assert outline and set(outline) <= set(NodeSpec.model_fields)


def test_yaml_repeat_example_replaces_zionex_gpus_and_validates_clean(tmp_path):
    example = yaml_block("gpus:\n  - repeat")
    text = (ROOT / "platforms" / "zionex.yaml").read_text()
    start = text.index("\ngpus:\n") + 1
    end = re.search(r"\n[a-z_]+:", text[start + 5:]).start() + start + 5 + 1
    (tmp_path / "zionex.yaml").write_text(text[:start] + example + text[end:])
    result = _hwspec("validate", "zionex.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, ""), result.stdout


def test_yaml_cluster_example_validates_clean(tmp_path):
    shutil.copy(ROOT / "platforms" / "zionex.yaml", tmp_path / "zionex.yaml")
    (tmp_path / "zionex-16.yaml").write_text(yaml_block("hwspec: 1\nkind: cluster"))
    result = _hwspec("validate", "zionex-16.yaml", cwd=tmp_path)
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


def test_the_readme_table_of_codes_is_the_registry():
    """The table is `markdown_table()`, rendered from `Code`: regenerate it from there."""
    from hwspec.diagnostics.codes import markdown_table

    lead = "these codes are reported; `hwspec explain E105` says more:\n\n"
    table = README.split(lead, 1)[1].split("\n\n", 1)[0] + "\n"  # up to the first blank line
    assert table == markdown_table()


def test_every_code_is_explained_and_listed_in_the_readme(capsys):
    from hwspec.cli.commands import main
    from hwspec.diagnostics.codes import Code

    listed = re.findall(r"^\| (E[0-9]{3}) \| (.*) \| (.*) \|$", README, re.MULTILINE)
    assert listed == [(code.value, code.summary, code.doc) for code in Code]
    for code in Code:
        assert main(["explain", code.lower()]) == 0
        assert capsys.readouterr().out == f"{code.value} {code.summary}\n\n{code.doc}\n"


def test_the_python_api_example_runs_in_a_fresh_interpreter():
    """The `### Using hwspec from Python` block, run as a user would: `import hwspec` alone."""
    (example,) = python_blocks("What is where")
    result = subprocess.run([sys.executable, "-c", example], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
