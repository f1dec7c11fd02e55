"""docs/schedulers.md's examples run as written: the generate command, the label script's dry
run, the Kueue manifests (the generated ones, valid against Kueue's v1beta2 schemas), the
partition line and the labels table. Its `sbatch` command runs in tests/test_consumer_slurm.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.scheduler_formats import check_kueue_manifests, parse_label_script

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "schedulers.md").read_text()
GENERATED = ROOT / "generated" / "gb200-nvl72"


def blocks(language: str) -> list[str]:
    """Every ```{language} block of the page, in order."""
    return re.findall(rf"```{language}\n(.*?)```", DOC, re.DOTALL)


def run_sh(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """`command` under sh with this interpreter's `hwspec` first on PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_every_shell_example_is_one_of_the_tested_commands():
    assert [b.strip() for b in blocks("sh")] == [
        "hwspec generate platforms/gb200-nvl72.yaml -o out --no-svg",
        "sbatch train.sbatch hostname",
        "KUBECTL='echo kubectl' sh out/gb200-nvl72/kubernetes/label-nodes.sh"]


@pytest.mark.slow  # runs the page's commands in a shell, each running hwspec
def test_generate_then_label_dry_run_print_one_kubectl_label_per_run_of_nodes(tmp_path):
    generate, _, dry_run = (b.strip() for b in blocks("sh"))
    (tmp_path / "platforms").symlink_to(ROOT / "platforms")
    result = run_sh(generate, tmp_path)
    assert result.returncode == 0, result.stderr
    result = run_sh(dry_run, tmp_path)
    assert result.returncode == 0, result.stderr
    nodes = " ".join(f"gb200-t{k:02}" for k in range(18))  # one rack under one leaf: one call
    assert result.stdout.splitlines() == [
        f"kubectl label node --overwrite {nodes} topology.hwspec.io/cluster=gb200-nvl72 "
        "network.topology.nvidia.com/tier-0=pod0 network.topology.nvidia.com/accelerator=nvl72-rack0"]


def test_kueue_example_is_the_generated_manifest_and_passes_the_v1beta2_schemas():
    (example,) = blocks("yaml")
    generated = (GENERATED / "kubernetes" / "topology.yaml").read_text()
    assert list(yaml.safe_load_all(example)) == list(yaml.safe_load_all(generated))
    check_kueue_manifests(example)


def test_partition_example_is_the_generated_partition_line():
    (partition,) = blocks("text")
    assert partition.strip() in (GENERATED / "slurm" / "slurm.conf").read_text().splitlines()
    assert "#SBATCH --partition=gb200-nvl72\n" in (GENERATED / "train.sbatch").read_text()


def test_labels_table_lists_every_key_the_generated_files_use():
    table = re.findall(r"^\| `([^`]+)` \|", DOC, re.MULTILINE)
    used: set[str] = {"kubernetes.io/hostname"}
    for labels_file in ROOT.glob("generated/*/kubernetes/label-nodes.sh"):
        used.update(key for _, labels in parse_label_script(labels_file.read_text()) for key in labels)
    assert sorted(table) == sorted(used)
