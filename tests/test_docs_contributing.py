"""docs/contributing.md runs as written: its site generator, through `--generators DIR` and
through an installed package's entry point, type-checked by mypy; its layers are the order
tests/test_layers.py pins; the commands it gives are the ones CI runs, the stale-file tests ask
for and the benchmarks document (those are checked, not run here: CI runs them)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.test_docs import commands_and_outputs, fenced, hwspec_on_path, printed, run_shown
from tests.test_layers import LAYERS

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "contributing.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def shown(starts: str) -> list[tuple[str, str | None]]:
    """The page's ```sh blocks whose command starts with `starts`, with what each prints."""
    return [(command, output) for command, output in commands_and_outputs(PAGE) if command.startswith(starts)]


def lines(starts: str) -> list[str]:
    """The lines of the page's one ```sh block that starts with `starts`."""
    ((command, _),) = shown(starts)
    return command.splitlines()


def section(title: str) -> str:
    return PAGE.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def generator_source() -> str:
    """The page's generator (its one Python example)."""
    (source,) = fenced(PAGE, "python")
    return source


def tutorial_node() -> str:
    """The tutorial's node.yaml (its first ```yaml block), which the page runs the generator on."""
    return fenced((ROOT / "docs" / "tutorial.md").read_text(), "yaml")[0]


def with_tools(env: dict[str, str]) -> dict[str, str]:
    """`env` with this interpreter's scripts (mypy, pip) on PATH, as in an activated .venv."""
    return {**env, "PATH": f"{env['PATH']}{os.pathsep}{Path(sys.executable).parent}"}


# ---------------------------------------------------------------- the generator, run as the page says


def test_the_site_generator_writes_its_file_beside_hwspec_s_own(tmp_path):
    (tmp_path / "site_generators").mkdir()
    (tmp_path / "site_generators" / "inventory.py").write_text(generator_source())
    (tmp_path / "node.yaml").write_text(tutorial_node())
    env = hwspec_on_path(tmp_path)
    ((generate, generated),) = shown("hwspec generate")
    ((cat, inventory),) = shown("cat ")
    result = run_shown(generate, tmp_path, env)
    assert (result.returncode, printed(result)) == (0, generated)
    assert (tmp_path / "out" / "my-node" / "nccl-topo.xml").is_file()  # beside hwspec's own
    result = run_shown(cat, tmp_path, env)
    assert (result.returncode, printed(result)) == (0, inventory)


WRONG_CONTEXT = ['error: Value of type variable "NodeGenerator" of function cannot be '
                 '"Callable[[ClusterGenContext], dict[str, str]]"  [type-var]',
                 'error: "ClusterTopology" has no attribute "nics_of"  [attr-defined]',
                 'error: "Cluster" has no attribute "gpus"  [attr-defined]']
"""What mypy says of the page's generator taking a cluster's context: the decorator refuses it,
and what it reads is not a cluster's."""


@pytest.mark.slow  # mypy reads hwspec and its dependencies: about a minute
def test_the_site_generator_passes_mypy_strict_and_a_wrong_context_does_not(tmp_path):
    """The page's command in a directory of its own (no mypy settings), against the installed
    hwspec and its `py.typed`; then a copy that takes a cluster's context as a node generator."""
    pytest.importorskip("mypy", reason="mypy is in the lint extra: pip install -e '.[lint]' (.ci/run installs it)")
    (tmp_path / "site_generators").mkdir()
    (tmp_path / "site_generators" / "inventory.py").write_text(generator_source())
    env = with_tools(hwspec_on_path(tmp_path))
    ((command, output),) = shown("mypy ")
    result = run_shown(command, tmp_path, env)
    assert (result.returncode, printed(result)) == (0, output)
    wrong = generator_source().replace("GenContext", "ClusterGenContext")
    assert wrong != generator_source()
    (tmp_path / "site_generators" / "inventory.py").write_text(wrong)
    result = run_shown(command + " --hide-error-context --no-pretty", tmp_path, env)
    assert result.returncode == 1
    assert [line.split(": ", 1)[1] for line in result.stdout.splitlines() if ": error: " in line] == WRONG_CONTEXT


@pytest.mark.slow  # builds and installs a package with pip
def test_the_package_s_entry_point_adds_its_generator_to_generate(tmp_path):
    """The page's package (its pyproject.toml, the generator in acme_hwspec/generators.py)
    installed with the page's `pip install` (its build backend from pip's index, as for any
    install), into a directory of its own (`--target`, `--no-deps`: this environment stays as it
    is) that the `hwspec` run then has on its path."""
    (toml,) = fenced(PAGE, "toml")
    package = tmp_path / "acme-hwspec"
    (package / "acme_hwspec").mkdir(parents=True)
    (package / "pyproject.toml").write_text(toml)
    (package / "acme_hwspec" / "__init__.py").write_text("")
    (package / "acme_hwspec" / "generators.py").write_text(generator_source())
    ((command, _),) = shown("pip install")
    assert command == "pip install ./acme-hwspec"
    target = tmp_path / "site-packages"
    install = subprocess.run([sys.executable, "-m", *command.split(), "-q", "--no-deps", "--target",
                              str(target)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    assert (target / "acme_hwspec-1.0.dist-info" / "entry_points.txt").is_file()
    (tmp_path / "node.yaml").write_text(tutorial_node())
    env = {**hwspec_on_path(tmp_path), "PYTHONPATH": os.pathsep.join([str(target), str(ROOT / "src")])}
    listed = run_shown("hwspec generators", tmp_path, env)
    assert ("inventory           node     acme_hwspec.generators, entry point acme: inventory.tsv: each GPU with the "
            "backend NICs that serve it.") in listed.stdout.splitlines()
    result = run_shown("hwspec generate --no-svg -o out node.yaml", tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "my-node" / "inventory.tsv").read_text().endswith("gpu0\tnic0\ngpu1\tnic1\n")


# ---------------------------------------------------------------- what the page says of the code base


def test_the_layers_table_is_the_order_tests_layers_pins():
    rows = re.findall(r"^\| `(\w+)` \|", section("The layers"), re.MULTILINE)
    assert rows == [name for layer in LAYERS[1:-1] for name in layer]  # without the leaf helpers and __main__


def test_the_setup_installs_every_tool_the_checks_run():
    assert lines("python3 -m venv") == ["python3 -m venv .venv && .venv/bin/pip install -q -e '.[test,lint,docs]'"]
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra, tools in {"test": ("pytest", "pytest-xdist", "hypothesis"), "lint": ("ruff", "mypy"), "docs": ("mkdocs",)}.items():
        names = {re.split(r"[<>=!~ \[]", requirement, maxsplit=1)[0] for requirement in extras[extra]}
        assert set(tools) <= names, extra


def test_the_fast_loop_leaves_out_the_two_markers_the_suite_declares():
    assert lines(".venv/bin/python -m pytest") == [".venv/bin/python -m pytest -q -m 'not slow and not consumer'"]
    markers = dict(marker.split(": ", 1) for marker in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"])
    assert sorted(markers) == ["consumer", "slow"]
    assert "-m 'not slow and not consumer'" in markers["slow"]


def test_the_lint_types_and_docs_commands_are_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    ruff, mypy, mkdocs = lines(".venv/bin/ruff")
    assert ruff in ci and mypy in ci
    assert mkdocs.replace("/tmp/hwspec-site", '"$site_dir"') in ci
    venv = "python3 -m venv .venv-docs && .venv-docs/bin/pip install -q -e '.[docs]'"
    assert " ".join(section("Before every commit").split()).count(venv) == 1
    assert venv.split(" && ") == [line for line in ci if line.startswith(("python3 -m venv .venv-docs", ".venv-docs/bin/pip"))]


def test_the_regenerate_commands_are_what_the_stale_file_tests_ask_for():
    asked = set()
    for test in (ROOT / "tests").glob("test_*.py"):
        asked.update(re.findall(r"run '((?:hwspec|python -m) [^']+)'", test.read_text()))
    for line in lines(".venv/bin/hwspec generate"):
        assert line.removeprefix(".venv/bin/") in asked, line


def test_the_benchmark_commands_are_the_ones_the_scripts_document():
    for line in lines(".venv/bin/python benchmarks/"):
        script = ROOT / line.split()[1]
        doc = ast.get_docstring(ast.parse(script.read_text())) or ""
        assert line in doc or line.removeprefix(".venv/bin/") in doc, line
        usage = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert usage.returncode == 0 and all(option in usage.stdout for option in line.split()[2:] if option.startswith("--"))
