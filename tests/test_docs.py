"""The documentation site (docs/, mkdocs.yml): its generated references cover every field, rule
and code, and every ```yaml and ```sh example under docs/ runs as written."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.cli import docsgen
from tests.cli import run_hwspec

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TESTED_BY = re.compile(r"<!-- tested by: (\S+)::(\w+) -->")


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def fenced(text: str, language: str) -> list[str]:
    """Every ```{language} block of `text`, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def commands_and_outputs(text: str) -> list[tuple[str, str | None]]:
    """Every ```sh block of `text` with the ```text block right after it (what it prints), or None."""
    pairs = re.findall(r"^```sh\n(.*?)^```\n(?:\n```text\n(.*?)^```)?", text, re.DOTALL | re.MULTILINE)
    return [(command.strip(), output if output else None) for command, output in pairs]


def hwspec_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose `hwspec` is this checkout's, run by this interpreter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "hwspec"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m hwspec "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT / "src")}


def run_shown(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def printed(result: subprocess.CompletedProcess) -> str:
    """What a terminal shows: the output, then hwspec's summary line (stderr)."""
    return result.stdout + result.stderr


# ---------------------------------------------------------------- generated references


def test_the_field_reference_has_a_row_for_every_field_of_every_spec_model():
    page = docsgen.field_reference()
    definitions = docsgen._raw_definitions()
    for model, schema in definitions.items():
        section = page.split(f"\n### {model}\n", 1)[1].split("\n### ", 1)[0]
        rows = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
        assert rows == list(schema.get("properties", {})), model
    assert len(definitions) >= 40  # 44 when this was written: the walk reaches every model
    assert "| `capacity` | size, e.g. `40 GiB` or `unknown` |" in page  # a unit, and the spec word
    assert "| `gpus` | list of [GpuSpec](#gpuspec) |  | GPUs: part, baseboard slot, place in the PCIe tree. |" in page
    assert "generated/&lt;name&gt;/" not in page and "generated/&lt;name>/" in page  # not an HTML tag


def test_the_rule_reference_has_every_builtin_rule_with_its_severity_and_whole_docstring():
    rules = docsgen.builtin_rules()
    page = docsgen.rule_reference(rules)
    assert len(rules) >= 50
    for r in rules:
        assert f"| [{r.id}](#{r.id.lower()}) | `{r.name}` | {r.severity.label} | {r.scope} |" in page
        assert f"\n## {r.id} {r.name} {{ #{r.id.lower()} }}\n" in page
        assert docsgen.plain(r.doc) in page
    assert "any \\*_FILE, \\*_PATH" in page  # NCCL_* style names are not emphasis


def test_the_code_reference_has_every_code_as_hwspec_explain_prints_it():
    from hwspec.diagnostics.codes import Code

    page = docsgen.code_reference()
    for code in Code:
        assert f"\n## {code.value} {docsgen.plain(code.summary)} {{ #{code.value.lower()} }}\n\n{docsgen.plain(code.doc)}\n" in page


def test_plain_text_keeps_code_spans_and_shows_stars_and_angle_brackets():
    assert docsgen.plain("any *_FILE in `NCCL_*` under generated/<name>/") == "any \\*_FILE in `NCCL_*` under generated/&lt;name>/"
    assert docsgen.cell("a | b\n  c") == "a \\| b c"


def test_the_pages_show_exactly_the_diagrams_the_hook_draws_and_without_dot_placeholders():
    """Every `images/diagrams/...svg` a page shows is one diagram_images draws (from the shipped
    platforms and the tutorial's node), and every one it draws is shown; none is committed.
    Without graphviz each is the placeholder, so that the site still builds."""
    images = docsgen.diagram_images(ROOT, DOCS, None)
    shown = {path for page in pages() for path in re.findall(r"\]\((images/diagrams/[\w./-]+\.svg)\)", page.read_text())}
    assert shown == set(images) == {
        "images/diagrams/gb200-tray/topology.svg", "images/diagrams/aws-p5-48xlarge/topology.svg",
        "images/diagrams/aws-p5-48xlarge/topology-fabric.svg", "images/diagrams/gb200-nvl72/cluster.svg",
        "images/diagrams/my-node/topology.svg"}
    assert set(images.values()) == {docsgen.PLACEHOLDER_SVG}
    assert not (DOCS / "images").exists()


@pytest.mark.slow  # renders every site diagram with graphviz's dot
@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed (apt-get install graphviz)")
def test_the_site_diagrams_are_what_hwspec_generate_renders(tmp_path):
    images = docsgen.diagram_images(ROOT, DOCS, shutil.which("dot"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-m", "hwspec", "generate", "-o", str(tmp_path), "platforms/aws-p5-48xlarge.yaml"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    for name in ("topology.svg", "topology-fabric.svg"):
        assert images[f"images/diagrams/aws-p5-48xlarge/{name}"] == (tmp_path / "aws-p5-48xlarge" / name).read_text()


def test_the_hook_adds_exactly_the_generated_pages_to_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for path in docsgen.GENERATED_PAGES:
        assert f": {path}\n" in nav
        assert not (DOCS / path).exists(), f"{path} is generated at build time: do not commit it"


# ---------------------------------------------------------------- every example runs


def test_every_yaml_example_loads_and_every_full_platform_in_one_validates_clean(tmp_path):
    """Fragments read through hwspec's loader; a block that is a whole file (`hwspec: 1`) validates
    clean beside a copy of platforms/ (so that a cluster's `platform:` resolves). Kubernetes
    manifests (`apiVersion:` first) are checked against their schemas by their pages' own tests;
    here every document of one has its apiVersion and kind. Another tool's file is preceded by a
    `<!-- tested by: FILE::TEST -->` line naming the test that checks it with that tool."""
    import yaml

    from hwspec.source.loader import load_yaml_text

    shutil.copytree(ROOT / "platforms", tmp_path / "platforms")
    checked = 0
    for page in pages():
        text = page.read_text()
        for block in fenced(text, "yaml"):
            marker = TESTED_BY.search(text[:text.index("```yaml\n" + block)].rstrip().rsplit("\n", 1)[-1])
            if marker:  # another tool's file (a workflow, a pre-commit config): the test named checks it
                test_file, test_name = marker.groups()
                assert f"\ndef {test_name}(" in (ROOT / test_file).read_text(), (page, test_file, test_name)
                continue
            if block.lstrip().startswith("apiVersion:"):
                documents = [d for d in yaml.safe_load_all(block) if d is not None]
                assert documents and all({"apiVersion", "kind"} <= set(d) for d in documents), (page, block)
                continue
            data = load_yaml_text(block, str(page)).data
            assert data, (page, block)
            if isinstance(data, dict) and "hwspec" in data:
                target = tmp_path / "platforms" / f"docs-example-{checked}.yaml"
                target.write_text(block)
                result = run_hwspec("validate", target.name, cwd=target.parent)
                assert (result.returncode, result.stdout) == (0, ""), (page, result.stdout)
                checked += 1
    assert checked >= 1


def test_every_shell_and_python_example_names_the_test_that_runs_it():
    """A ```sh or ```python block runs in the test named by the last `<!-- tested by: FILE::TEST -->`
    comment above it on its page (an HTML comment: the site does not show it); that test exists."""
    for page in pages():
        text = page.read_text()
        for block in re.finditer(r"^```(sh|python)\n", text, re.MULTILINE):
            markers = TESTED_BY.findall(text[:block.start()])
            assert markers, f"{page.relative_to(ROOT)}: a ```{block.group(1)} block with no '<!-- tested by: FILE::TEST -->' above it"
            test_file, test_name = markers[-1]
            assert f"\ndef {test_name}(" in (ROOT / test_file).read_text(), (page, test_file, test_name)


TUTORIAL_EDITS = [
    ("    memory: {capacity: 256 GiB, bandwidth: 80 GB/s}\n", "    memory: {capacity: 256 GiB, bandwidth: 80 GB}\n"),
    ('    pcie: {upstream: sw0, bus: "0000:${0x16+g*8:02x}:00.0"}\n', '    pcie: {upstream: cpu0, bus: "0000:${0x16+g*8:02x}:00.0"}\n'),
]
"""The tutorial's two mistakes, as (line in node.yaml, the line the page shows instead)."""


@pytest.mark.slow  # runs the tutorial's commands as a shell does, each running hwspec
def test_the_tutorial_runs_as_written(tmp_path):
    """In an empty directory: node.yaml is the page's node; both mistakes are made after the first
    `validate`, the unit is put back after `explain`, the NICs after the validation that reports
    them; every command prints what the page shows (topology.svg only where graphviz's dot is
    installed) and exits 1 exactly where that shows errors."""
    text = (DOCS / "tutorial.md").read_text()
    node, *fragments = fenced(text, "yaml")
    assert node.startswith("# yaml-language-server: $schema=hwspec.schema.json\n")
    assert [new for _old, new in TUTORIAL_EDITS] == fragments
    work = tmp_path / "work"
    work.mkdir()
    (work / "node.yaml").write_text(node)
    env = hwspec_on_path(tmp_path)
    steps = commands_and_outputs(text)
    assert [command for command, _ in steps] == [
        "hwspec schema -o hwspec.schema.json", "hwspec validate node.yaml", "hwspec validate node.yaml",
        "hwspec explain E110", "hwspec validate node.yaml", "hwspec validate node.yaml", "hwspec generate node.yaml",
        "ls generated/my-node", "grep -v '^#' generated/my-node/nccl.conf"]
    edits_after = {1: TUTORIAL_EDITS, 3: TUTORIAL_EDITS[:1], 4: TUTORIAL_EDITS[1:]}
    for index, (command, shown) in enumerate(steps):
        result = run_shown(command, work, env)
        expected = shown or ""
        if shutil.which("dot") is None:
            expected = expected.replace(", 1 SVG diagram(s) rendered", "").replace("topology.svg\n", "")
        assert printed(result) == expected, (command, printed(result))
        assert result.returncode == (1 if "error(s)" in expected and "0 error(s)" not in expected else 0), command
        node_file = work / "node.yaml"
        for old, new in edits_after.get(index, []):
            current = node_file.read_text()
            node_file.write_text(current.replace(old, new) if index == 1 else current.replace(new, old))
    assert (work / "hwspec.schema.json").stat().st_size > 100_000


@pytest.mark.slow  # runs the page's commands in a shell, each running hwspec
def test_the_clouds_recipe_commands_print_what_it_shows(tmp_path):
    env = hwspec_on_path(tmp_path)
    steps = commands_and_outputs((DOCS / "recipes" / "clouds.md").read_text())
    assert len(steps) == 4
    for command, shown in steps:
        result = run_shown(command, ROOT, env)
        assert (result.returncode, printed(result)) == (0, shown), command


def test_the_clouds_recipe_table_is_the_shipped_platforms():
    from hwspec.model.load import load_platform

    text = (DOCS / "recipes" / "clouds.md").read_text()
    rows = re.findall(r"^\| `(platforms/[\w.-]+)` \| `(\w+)` \| (\d+) \| (\d+) Gb/s \| (\d+) \| (written|not written)", text, re.MULTILINE)
    assert len(rows) == 3
    for path, transport, nics, speed, gpus, topo in rows:
        platform = load_platform(ROOT / path)
        backend = platform.backend_nics
        assert (platform.backend.transport, len(backend), {n.speed * 8 / 1e9 for n in backend}, len(platform.gpus)) == (
            transport, int(nics), {float(speed)}, int(gpus)), path
        assert (ROOT / "generated" / platform.name / "nccl-topo.xml").exists() == (topo == "written"), path


def test_the_index_install_command_is_the_readme_quick_start():
    """test_readme.py runs the README's quick start; the index shows the same command."""
    (command,) = fenced((DOCS / "index.md").read_text(), "sh")
    assert f"```sh\n{command}```" in (ROOT / "README.md").read_text()


# ---------------------------------------------------------------- the site builds


def _distribution(requirement: str) -> str:
    """A requirement's distribution name, normalized (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement).group()).lower()


RENDER_WITH_OTHER_EXTRAS_BLOCKED = r"""
import importlib.abc, json, sys
from pathlib import Path
blocked = set(json.loads(sys.argv[1]))

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ImportError(f"{name} comes with another extra than docs")

sys.meta_path.insert(0, Refuse())
from hwspec.cli.docsgen import GENERATED_PAGES, GENERATED_SECTIONS, diagram_images
for render in [*GENERATED_PAGES.values(), *(r for section in GENERATED_SECTIONS.values() for r in section.values())]:
    render()
diagram_images(Path.cwd(), Path.cwd() / "docs", None)
"""


@pytest.mark.slow  # a process that renders every generated page
def test_what_the_site_s_hooks_render_needs_only_hwspec_s_dependencies_and_the_docs_extra():
    """The README builds the site from a virtual environment with `.[docs]` alone (CI builds it
    from .venv-docs, so): rendered with every package only another extra installs refused, the
    generated pages still render (internals.md documents hwspec.testing, so hypothesis is in docs)."""
    import importlib.metadata
    import json
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {_distribution(r) for r in project["dependencies"] + project["optional-dependencies"]["docs"]}
    others = {_distribution(r) for extra in project["optional-dependencies"].values() for r in extra} - needed
    blocked = sorted(module for module, distributions in importlib.metadata.packages_distributions().items()
                     if any(_distribution(d) in others for d in distributions) and module.isidentifier())
    assert "pytest" in blocked  # the test extra's own
    result = subprocess.run([sys.executable, "-c", RENDER_WITH_OTHER_EXTRAS_BLOCKED, json.dumps(blocked)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.consumer
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
                    reason="mkdocs and its Material theme are not installed (pip install -e '.[docs]')")
def test_mkdocs_builds_the_site_strict_with_the_generated_references(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    rules = (site / "reference" / "rules" / "index.html").read_text()
    assert 'id="hw202"' in rules and "backend-nic-locality" in rules
    assert 'id="e110"' in (site / "reference" / "codes" / "index.html").read_text()
    assert 'id="socketspec"' in (site / "reference" / "fields" / "index.html").read_text()
    assert (site / "tutorial" / "index.html").exists()
