"""docs/site-rules.md's examples run as written: the `rules:` override on a platform that needs
it, and the site rule, both from Python and through `hwspec validate --rules`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.model.load import load_platform
from hwspec.pipeline import check
from hwspec.rules import load_rules, run_rules
from hwspec.topology import topology_of
from tests.test_docs import commands_and_outputs, fenced, hwspec_on_path, printed, run_shown

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "site-rules.md").read_text()
TWO_GPU_NODE = ROOT / "tests" / "fixtures" / "spec" / "minimal_node.yaml"


def site_rule_source() -> str:
    """The page's node rule (its first Python example)."""
    return fenced(PAGE, "python")[0]


def cluster_rule_source() -> str:
    """The page's cluster rule (its second Python example)."""
    return fenced(PAGE, "python")[1]


def test_the_site_rule_finds_nothing_on_zionex_and_the_gpu_count_on_a_two_gpu_node(tmp_path):
    (tmp_path / "eight_gpus.py").write_text(site_rule_source())
    rules = load_rules([tmp_path])
    assert [(r.id, r.name) for r in rules] == [("SITE001", "eight-gpus")]
    assert run_rules(topology_of(load_platform(ROOT / "platforms" / "zionex.yaml")), rules) == []
    (finding,) = run_rules(topology_of(load_platform(TWO_GPU_NODE)), rules)
    assert (finding.code, finding.message) == ("SITE001", "2 GPUs, expected 8")


@pytest.mark.slow  # runs the page's command in a shell, running hwspec
def test_the_site_rule_example_runs_as_the_page_shows(tmp_path):
    """In a directory holding the page's rule as site_rules/eight_gpus.py and a two-GPU node."""
    (tmp_path / "site_rules").mkdir()
    (tmp_path / "site_rules" / "eight_gpus.py").write_text(site_rule_source())
    (tmp_path / "node.yaml").write_text(TWO_GPU_NODE.read_text())
    ((command, shown),) = commands_and_outputs(PAGE)
    result = run_shown(command, tmp_path, hwspec_on_path(tmp_path))
    assert (result.returncode, printed(result)) == (1, shown)


@pytest.mark.slow  # runs the page's commands in a shell, each running hwspec
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


def test_the_cluster_rule_finds_the_node_type_with_fewer_nics_than_gpus(tmp_path):
    """zion has four backend NICs for eight GPUs; zionex one per GPU."""
    (tmp_path / "nic_per_gpu.py").write_text(cluster_rule_source())
    rules = load_rules([tmp_path])
    assert [(r.id, r.scope) for r in rules] == [("SITE002", "cluster")]
    assert run_rules(check(ROOT / "platforms" / "zionex-16.yaml").topology, rules, scope="cluster") == []
    (finding,) = run_rules(check(ROOT / "platforms" / "zion-16.yaml").topology, rules, scope="cluster")
    assert (finding.code, finding.message, finding.line) == ("SITE002", "zion: 4 backend NICs for 8 GPUs", 13)


TYPE_ERRORS = {
    # a node rule reading what only a cluster has
    "groups_on_a_node.py": (lambda source: source.replace("len(ctx.platform.gpus) != 8", "len(ctx.platform.groups) != 8"),
                            'error: "Platform" has no attribute "groups"  [attr-defined]'),
    # a cluster rule registered without scope="cluster": the decorator's node overload refuses it
    "cluster_rule_as_node_rule.py": (lambda source: source.replace(', scope="cluster")', ")"),
                                     'error: Value of type variable "NodeCheck" of function cannot be '
                                     '"Callable[[ClusterContext], Iterator[Finding]]"  [type-var]'),
}


@pytest.mark.slow
def test_the_page_s_rules_pass_mypy_strict_and_a_type_error_in_them_does_not(tmp_path):
    """The examples as written type-check under `mypy --strict` against the installed hwspec
    (its own `py.typed`); each deliberately broken copy fails with the error mypy should give."""
    pytest.importorskip("mypy", reason="mypy is in the lint extra: pip install -e '.[lint]' (.ci/run installs it)")
    files = {"eight_gpus.py": site_rule_source(), "nic_per_gpu.py": cluster_rule_source()}
    files["groups_on_a_node.py"] = TYPE_ERRORS["groups_on_a_node.py"][0](site_rule_source())
    files["cluster_rule_as_node_rule.py"] = TYPE_ERRORS["cluster_rule_as_node_rule.py"][0](cluster_rule_source())
    assert all(files[name] != source for name, source in (("groups_on_a_node.py", site_rule_source()),
                                                          ("cluster_rule_as_node_rule.py", cluster_rule_source())))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")  # this checkout's settings are for src/hwspec, not for a site
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", "--cache-dir",
                             str(tmp_path / "cache"), "--hide-error-context", "--no-pretty", *files],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    errors = sorted(line.split(":", 1)[0] + ":" + line.split(": ", 1)[1] for line in result.stdout.splitlines()
                    if ": error: " in line)
    assert errors == sorted(f"{name}:{message}" for name, (_, message) in TYPE_ERRORS.items()), result.stdout + result.stderr


# ---------------------------------------------------------------- the generated query reference


def test_the_query_reference_has_a_row_for_every_public_query_of_both_topologies():
    """Generated from the classes: every public name of `Topology` and `ClusterTopology` (and the
    `platform` each is annotated with) has its row, in the class's section."""
    from hwspec.cli import docsgen
    from hwspec.topology.cluster import ClusterTopology
    from hwspec.topology.node import Topology

    page = docsgen.query_reference()
    for cls in (Topology, ClusterTopology):
        part = page.split(f"### {cls.__name__} {{", 1)[1].split("\n### ", 1)[0]
        rows = re.findall(r"^\| `(\w+)", part, re.MULTILINE)
        assert sorted(rows) == sorted({name for name in dir(cls) if not name.startswith("_")} | {"platform"})
    assert "| `nics_of(gpu_id: str)` | `tuple[str, ...]` | The backend NICs that name GPU `gpu_id`" in page
    assert "#### Topology: NICs\n\n| query | returns | what |\n|---|---|---|\n| `nics_of(gpu_id: str)` |" in page
    assert "| `leaf_group_of(node: int)` | `int` | Index into `leaf_groups`" in page


def test_the_page_has_no_hand_written_query_table_only_the_generated_one():
    from hwspec.cli import docsgen

    assert PAGE.count(docsgen.QUERY_REFERENCE_MARKER) == 1
    assert docsgen.GENERATED_SECTIONS["site-rules.md"] == {docsgen.QUERY_REFERENCE_MARKER: docsgen.query_reference}
    assert "| query on `ctx.topology` |" not in PAGE and "| on `ctx.topology` |" not in PAGE
