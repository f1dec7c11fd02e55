"""Accepted input never breaks a consumer of what hwspec writes (issue 36, class 7): names that
become one Kubernetes object are a located finding, and the Prometheus exposition is UTF-8
whatever bytes the node's name or the spec's path hold."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.diagnostics.report import prometheus_label
from hwspec.formats.limits import GenerationError
from hwspec.generate.engine import plan_for
from hwspec.generate.registry import builtin_generators
from hwspec.rules import load_rules
from tests.cli import run_hwspec

ROOT = Path(__file__).resolve().parent.parent
MINIMAL = ROOT / "tests" / "fixtures" / "spec" / "minimal_node.yaml"


def _cluster(tmp_path: Path, first: str, second: str) -> Path:
    """A cluster of two node platforms (minimal_node copies) named `first` and `second`."""
    for file, name in (("a.yaml", first), ("b.yaml", second)):
        (tmp_path / file).write_text(MINIMAL.read_text().replace("\nname: minimal\n", f"\nname: {name}\n", 1))
    path = tmp_path / "cluster.yaml"
    path.write_text("hwspec: 1\nkind: cluster\nname: mixed\nnodes:\n"
                    '  - {platform: a.yaml, count: 2, hostname: "a${i}"}\n'
                    '  - {platform: b.yaml, count: 3, hostname: "b${i}"}\n')
    return path


@pytest.mark.parametrize(("first", "second"), [("zion_ex", "zion-ex"), ("n" * 63 + "a", "n" * 63 + "b")],
                         ids=["underscore-and-dash", "same-first-63-characters"])
def test_node_platforms_that_are_one_kubernetes_name_are_a_located_hw813(tmp_path, first, second):
    path = _cluster(tmp_path, first, second)
    checked = pipeline.check(path, load_rules(pipeline.rule_directories()))
    found = [(d.code, d.line, d.col, d.message) for d in checked.diagnostics if d.severity.label == "error"]
    name = re.sub("_", "-", first)[:63]
    assert found == [("HW813", 6, 16, f"nodes[1] ({second}) and nodes[0] ({first}) are both '{name}' as a Kubernetes name: "
                                       "their NPD DaemonSets and platform labels would be one")]


def test_node_platforms_with_distinct_kubernetes_names_pass_hw813(tmp_path):
    checked = pipeline.check(_cluster(tmp_path, "zion_ex", "zion-ex2"), load_rules(pipeline.rule_directories()))
    assert [d for d in checked.diagnostics if d.code == "HW813"] == []


def test_a_label_value_that_is_not_utf8_is_written_visibly():
    # as `visible` shows it (its backslash doubled), then escaped as the format escapes
    assert prometheus_label(os.fsdecode(b"n\xff\\\"x")) == '"n\\\\xff\\\\\\\\\\"x"'
    assert prometheus_label("nod\u00e9\\\n") == '"nod\u00e9\\\\\\n"'  # UTF-8 text as it is: only the 3 escapes


@pytest.mark.slow  # a hwspec process (its bytes on stdout)
def test_the_exposition_of_a_non_utf8_node_and_spec_path_is_utf8(tmp_path):
    spec = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"spec\xfe.yaml")))
    spec.write_bytes((ROOT / "tests/data/sysfs/good-node.yaml").read_bytes())
    result = subprocess.run([sys.executable, "-m", "hwspec", "diff", str(spec), "--sysfs-root",
                             str(ROOT / "tests/data/sysfs/good"), "--format", "prometheus", "--node", os.fsdecode(b"n\xff")],
                            capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=60)
    text = result.stdout.decode("utf-8")  # raises on a byte promtool would refuse
    assert f'hwspec_check_ok{{node="n\\\\xff",spec="{tmp_path}/spec\\\\xfe.yaml"}} 1\n' in text
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        return  # the exposition's own parser checks it where installed (pip install -e '.[consumers]')
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    assert samples[0].labels == {"node": "n\\xff", "spec": f"{tmp_path}/spec\\xfe.yaml"}


# ---------------------------------------------------------------- validate clean means every command succeeds

HUNDRED = ROOT / "tests" / "fixtures" / "many_nics" / "hundred_long_interfaces.yaml"
WORKLOAD = ROOT / "workloads" / "model-a.yaml"


def _hwspec(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return run_hwspec(*args, cwd=cwd)


def test_an_interface_list_past_nccls_value_limit_is_a_located_hw902_at_validate():
    """It validated clean and generate stopped with E901 (nccl.conf line past 1023 characters)."""
    checked = pipeline.check(HUNDRED, load_rules(pipeline.rule_directories()))
    assert [(d.code, d.line, d.col, d.message) for d in checked.diagnostics if d.severity.label == "error"] == [
        ("HW902", 92, 16, "NCCL_SOCKET_IFNAME would list 100 interfaces in 1600 characters; NCCL reads at most 1023 "
                          "of a value, and the list passes them at host63")]


def test_an_interface_list_the_platform_sets_itself_validates_and_generates(tmp_path):
    path = tmp_path / "node.yaml"
    path.write_text(HUNDRED.read_text() + "\nenvironment:\n  NCCL_SOCKET_IFNAME: ingest\n")
    assert _hwspec("validate", path).returncode == 0
    result = _hwspec("generate", "--no-svg", "-o", tmp_path / "out", path)
    assert result.returncode == 0, result.stderr
    assert "NCCL_SOCKET_IFNAME=ingest\n" in (tmp_path / "out" / "hundred-long-interfaces" / "nccl.conf").read_text()


@pytest.mark.parametrize("batch", ["per_gpu: 1" + "0" * 300, "global: 1000000001"])
def test_a_batch_past_the_bound_is_a_located_error_at_validate(tmp_path, batch):
    """A batch of 10^300 validated clean, and compare ended in a traceback (NaN ms)."""
    path = tmp_path / "workload.yaml"
    path.write_text(WORKLOAD.read_text().replace("  per_gpu: 512\n", f"  {batch}\n", 1))
    result = _hwspec("validate", path)
    assert result.returncode == 1
    assert result.stdout.startswith(f"{path}:15:{len(batch.split(':')[0]) + 5}: error[E110]: batch.{batch.split(':')[0]}: "
                                    "Input should be less than or equal to 1000000000, got ")


def test_the_largest_batch_validate_accepts_is_estimated_and_compared(tmp_path):
    path = tmp_path / "workload.yaml"
    path.write_text(WORKLOAD.read_text().replace("  per_gpu: 512\n", "  per_gpu: 1000000000\n", 1))
    assert _hwspec("validate", path).returncode == 0
    for command in (("estimate", "platforms/zionex.yaml", path), ("compare", "platforms/zionex.yaml", "platforms/zion.yaml", path)):
        result = _hwspec(*command)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
        assert " inf " not in result.stdout and "nan" not in result.stdout.lower()


# ---------------------------------------------------------------- writers check what they write, whatever ran before

CLUSTER_WRITERS = {"hostfile": "hostfile", "slurm": "slurm", "scheduler-topology": "kubernetes and slurm topology",
                   "acceptance": "acceptance"}
"""The cluster generators that write host names and addresses, and the output their refusal names."""


def _unchecked_cluster(tmp_path: Path, node: str) -> Path:
    """A cluster of two minimal nodes whose `node` entry (hostname and address) no rule checked."""
    (tmp_path / "a.yaml").write_text(MINIMAL.read_text())
    path = tmp_path / "cluster.yaml"
    path.write_text(f"hwspec: 1\nkind: cluster\nname: unchecked\nnodes:\n  - {{platform: a.yaml, count: 2, {node}}}\n")
    return path


@pytest.mark.parametrize("generator", CLUSTER_WRITERS)
@pytest.mark.parametrize(("node", "refusal"), [
    ('hostname: "--all${i}"', "nodes[0]: hostname '--all0' is not a host name (lower-case letters, digits and '-', "
                              "starting and ending with a letter or digit, at most 63): it starts with '-'"),
    ('hostname: "n${i}", address: "10.0.0.${i},10.9.9.9"', "nodes[0]: address '10.0.0.0,10.9.9.9' is not an IP address"),
], ids=["option-host-name", "address-list"])
def test_a_writer_refuses_a_host_it_would_write_when_no_rule_ran(tmp_path, generator, node, refusal):
    """Through the library with the rules skipped, `kubectl label --all0 ...` and `NodeAddr=a,b` are refused by the writers."""
    path = _unchecked_cluster(tmp_path, node)
    checked = pipeline.check(path, [])
    assert checked.diagnostics == []
    with pytest.raises(GenerationError) as raised:
        plan_for(checked.topology, only=[generator])
    assert str(raised.value) == f"{path}: {CLUSTER_WRITERS[generator]}: {refusal}"


def test_no_cluster_generator_writes_a_host_name_no_rule_checked(tmp_path):
    checked = pipeline.check(_unchecked_cluster(tmp_path, 'hostname: "--allq${i}"'), [])
    for name in (g.name for g in builtin_generators() if g.scope == "cluster"):
        try:
            plan = plan_for(checked.topology, only=[name])
        except GenerationError:
            continue
        written = [path for path, text in plan.items() if "--allq" in text and not path.endswith("cluster.dot")]
        assert written == [], name  # cluster.dot names hosts in a quoted label only
