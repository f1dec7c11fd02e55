"""Property tests of the input side: generated platforms are valid, single faults are caught by
their rule at their line, and YAML -> model -> YAML -> model is the identity.

The strategies are hwspec's public ones (`hwspec.testing`); the number of examples follows the
hypothesis profile (tests/conftest.py: "ci" by default, HWSPEC_HYPOTHESIS_PROFILE=deep for more).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from hwspec import pipeline
from hwspec.cli.commands import main
from hwspec.rules import load_rules
from hwspec.source.expand import expand
from hwspec.source.loader import load_yaml_text
from hwspec.spec.models import NodeSpec
from hwspec.testing import (
    CLUSTER_FAULT_RULES,
    FAULT_RULES,
    NVLINK_PATTERNS,
    check_cluster_files,
    check_node_text,
    dump_yaml,
    faulty_cluster_specs,
    faulty_node_specs,
    load_node_text,
    node_platforms,
    node_specs,
    node_yaml,
)
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = settings.default.max_examples
"""The profile's example count; cheap properties run a multiple of it, costly ones a fraction."""


def formatted(diagnostics) -> str:
    return "\n".join(d.format() for d in diagnostics)


# ------------------------------------------------------------------ the module itself


def test_importing_without_hypothesis_says_how_to_install():
    code = "import sys; sys.modules['hypothesis'] = None; import hwspec.testing"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode != 0
    assert "ImportError" in result.stderr and "pip install 'hwspec[test]'" in result.stderr, result.stderr


def test_faults_cover_at_least_ten_rules_that_exist():
    ids = {r.id for r in load_rules(pipeline.rule_directories())}
    assert len(FAULT_RULES) >= 10 and set(FAULT_RULES) <= ids
    assert set(CLUSTER_FAULT_RULES) <= ids


@pytest.mark.parametrize("kwargs, message", [({"nvlink": ["mesh"]}, "nvlink"),
                                             ({"min_gpus": 3, "max_gpus": 2}, "min_gpus"),
                                             ({"nvlink": ["hybrid-cube-mesh"], "max_gpus": 4}, "carries NVLink")])
def test_bad_strategy_arguments_are_refused(kwargs, message):
    @given(node_specs(**kwargs))
    def draw(spec):
        pass

    with pytest.raises(ValueError, match=message):
        draw()


def test_unknown_fault_rules_are_refused():
    with pytest.raises(ValueError, match="no faults for HW999"):
        faulty_node_specs(rules=["HW999"])


# ------------------------------------------------------------------ valid platforms


@settings(max_examples=EXAMPLES * 4)
@given(node_yaml())
def test_generated_platforms_have_no_findings(text):
    note(text)
    assert check_node_text(text) == [], formatted(check_node_text(text))


@pytest.mark.parametrize("pattern", NVLINK_PATTERNS)
@settings(max_examples=max(3, EXAMPLES // 4))
@given(data=st.data())
def test_every_nvlink_pattern_is_valid(pattern, data):
    """Each pattern on its own, so the rare ones (hybrid cube mesh needs 8 GPUs) are covered."""
    text = data.draw(node_yaml(nvlink=[pattern], max_gpus=8, max_sockets=4))
    note(text)
    assert check_node_text(text) == [], formatted(check_node_text(text))


@settings(max_examples=max(5, EXAMPLES // 2))
@given(data=st.data())
def test_sockets_grouped_into_numa_nodes_change_no_finding_and_no_number(data):
    """Grouping sockets as NUMA nodes of one physical socket (CPU lists kept) changes nothing
    but the count of physical sockets."""
    from hwspec.generate.launch import omp_threads
    from hwspec.perf import roofline
    from hwspec.testing import dump_yaml, group_numa_nodes, load_node_text

    spec = data.draw(node_specs(max_gpus=8, max_sockets=4))
    grouped = data.draw(group_numa_nodes(spec))
    note(dump_yaml(grouped))
    assert check_node_text(dump_yaml(grouped)) == [], formatted(check_node_text(dump_yaml(grouped)))
    plain, split = load_node_text(dump_yaml(spec)), load_node_text(dump_yaml(grouped))
    assert [(s.id, s.numa_node, s.cpus) for s in split.sockets] == [(s.id, s.numa_node, s.cpus) for s in plain.sockets]
    assert len(split.packages) == len(grouped["sockets"])
    assert omp_threads(topology_of(split)) == omp_threads(topology_of(plain))
    before, after = roofline.roofline(topology_of(plain)), roofline.roofline(topology_of(split))
    assert before["gpu_groups"] == after["gpu_groups"]


@settings(max_examples=max(5, EXAMPLES // 2))
@given(data=st.data())
def test_described_nvswitch_chips_carry_each_gpus_links(data):
    from hwspec.testing import load_node_text

    text = data.draw(node_yaml(nvlink=["nvswitch"], max_gpus=8, max_sockets=2))
    note(text)
    assert check_node_text(text) == [], formatted(check_node_text(text))
    platform = load_node_text(text)
    switches = platform.baseboard.nvswitches if platform.baseboard else ()
    for gpu in platform.gpus:
        links = sum(s.links_per_gpu for s in switches) if switches else gpu.fabric_links
        assert topology_of(platform).nvlink_links(gpu.id) == links <= gpu.fabric_links
    assert topology_of(platform).nvlink_connected


@settings(max_examples=max(5, EXAMPLES // 2))
@given(data=st.data())
def test_virtually_presented_links_change_no_finding_and_no_number(data):
    """A VM's virtual links (`link` Gen1 x1 or width 0, the trained link as `link.physical`)
    are judged by no rule and change no roofline figure: only NCCL's topology file shows them."""
    from hwspec.perf import roofline
    from hwspec.testing import dump_yaml, load_node_text, present_virtually

    spec = data.draw(node_specs(max_gpus=8, max_sockets=4))
    virtual = data.draw(present_virtually(spec))
    note(dump_yaml(virtual))
    assert check_node_text(dump_yaml(virtual)) == [], formatted(check_node_text(dump_yaml(virtual)))
    plain, shown = load_node_text(dump_yaml(spec)), load_node_text(dump_yaml(virtual))
    assert [d.physical for d in (*shown.bridges, *shown.gpus, *shown.nics)] == \
        [d.physical for d in (*plain.bridges, *plain.gpus, *plain.nics)]
    assert roofline.roofline(topology_of(shown)) == roofline.roofline(topology_of(plain))


@settings(max_examples=max(5, EXAMPLES // 2))
@given(node_yaml(max_gpus=8, max_sockets=4))
def test_generated_files_validate_through_the_pipeline_and_the_cli(text):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "node.yaml"
        path.write_text(text, encoding="utf-8")
        checked = pipeline.check(path)
        assert checked.platform is not None and checked.diagnostics == [], formatted(checked.diagnostics)
        assert main(["validate", "--werror", str(path)]) == 0


@settings(max_examples=EXAMPLES * 2)
@given(node_platforms())
def test_resolved_platforms_are_whole(platform):
    """What the model promises: GPUs and NICs numbered by bus id, everything placed on a NUMA node,
    each GPU's backend NIC (when it has one) beside it."""
    assert [g.index for g in platform.gpus] == list(range(len(platform.gpus)))
    assert [g.bus for g in platform.gpus] == sorted(g.bus for g in platform.gpus)
    assert all(d.socket is not None and d.numa_node is not None for d in (*platform.gpus, *platform.nics))
    for nic in platform.backend_nics:
        assert all(nic.upstream == platform.gpu_by_id[gpu_id].upstream for gpu_id in nic.gpus)


# ------------------------------------------------------------------ faults


def assert_caught(fault, text: str, diagnostics, file: str) -> None:
    """`fault.rule` reports on the line where the value at `fault.path` starts in `text`."""
    line = load_yaml_text(text, file).value_position(fault.path).line
    hits = [d for d in diagnostics if d.code == fault.rule and Path(d.file).name == Path(file).name]
    assert hits, f"{fault.rule} did not report: {fault.description}\nfindings:\n{formatted(diagnostics)}"
    assert any(d.line == line for d in hits), (
        f"{fault.rule} reported {fault.description} at line(s) {[d.line for d in hits]}, not at line {line} "
        f"({'.'.join(map(str, fault.path))})\n{formatted(hits)}")


@pytest.mark.parametrize("rule", FAULT_RULES)
@settings(max_examples=max(4, EXAMPLES // 2))
@given(data=st.data())
def test_single_faults_are_caught_by_their_rule_at_their_line(rule, data):
    fault, spec = data.draw(faulty_node_specs(rules=[rule], max_sockets=4, max_gpus=8))
    text = dump_yaml(spec)
    note(f"{fault}\n{text}")
    assert_caught(fault, text, check_node_text(text), "node.yaml")


@pytest.mark.parametrize("rule", CLUSTER_FAULT_RULES)
@settings(max_examples=max(3, EXAMPLES // 4))
@given(data=st.data())
def test_cluster_faults_are_caught_by_their_rule_at_their_line(rule, data):
    fault, files = data.draw(faulty_cluster_specs(rules=[rule], max_sockets=2, max_gpus=4, max_nodes=8))
    text = dump_yaml(files.cluster)
    note(f"{fault}\n{text}")
    assert_caught(fault, text, check_cluster_files(files).diagnostics, files.cluster_file)


# ------------------------------------------------------------------ round trip


def comparable(platform):
    """The platform without where its part assumptions are written (`part` moves in a dump)."""
    return dataclasses.replace(platform, assumptions=tuple(dataclasses.replace(a, location=None)
                                                           for a in platform.assumptions))


def spec_model(text: str, file: str = "node.yaml") -> NodeSpec:
    return NodeSpec.model_validate(expand(load_yaml_text(text, file)).data)


def round_trip(text: str) -> tuple[NodeSpec, NodeSpec, str]:
    first = spec_model(text)
    dumped = dump_yaml(first.model_dump(mode="json", exclude_defaults=True))
    return first, spec_model(dumped), dumped


@settings(max_examples=EXAMPLES * 2)
@given(node_yaml())
def test_yaml_model_yaml_model_is_the_identity(text):
    first, second, dumped = round_trip(text)
    note(dumped)
    assert second == first
    # the dump is a fixpoint, and the resolved platforms agree too
    assert dump_yaml(second.model_dump(mode="json", exclude_defaults=True)) == dumped
    assert comparable(load_node_text(dumped)) == comparable(load_node_text(text))


@pytest.mark.parametrize("path", ["platforms/zionex.yaml", "platforms/zion.yaml", "platforms/gb200-tray.yaml",
                                  "tests/fixtures/spec/minimal_node.yaml"])
def test_round_trip_of_written_platforms(path):
    """Repeat blocks, `${...}` and annotated values expand away; the model survives the dump."""
    first, second, _ = round_trip((ROOT / path).read_text(encoding="utf-8"))
    assert second == first
