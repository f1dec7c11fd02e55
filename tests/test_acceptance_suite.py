"""The generated acceptance suites as they run: a node's run-node.sh with stand-in benchmarks
(and stand-ins for Open MPI's mpirun and numactl) on one NVIDIA and one AMD node, every command
line exact; a cluster's plan as run-plan.sh reads it (its awk against `hwspec.acceptance.plan`);
acceptance.sbatch and submit.sh under a real slurmctld and one real slurmd per node, where only
the benchmark programs are stand-ins; and mpijob.yaml against the MPI Operator's MPIJob schema
with check-jsonschema and Kubernetes' object rules.

Every stand-in benchmark records its arguments, host and environment, and rank 0 prints a real
nccl-tests output (tests/data/acceptance/, with its source), so each results file is checked
against that output verbatim."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, note, settings

from hwspec import pipeline
from hwspec.acceptance.plan import NCCL_TESTS, NVBANDWIDTH_TESTS, plan
from hwspec.acceptance.results import read_result
from hwspec.cpulist import parse_cpu_list
from hwspec.generate.engine import plan_for
from hwspec.hostlist import compress
from hwspec.testing import cluster_specs, dump_yaml
from hwspec.testing.clusters import check_cluster_files
from tests import slurm_daemons
from tests.consumers import ROOT, generate
from tests.scheduler_formats import MPIJOB_SCHEMA, check_mpijob

GENERATED = ROOT / "generated"
FIXTURES = ROOT / "tests" / "fixtures" / "cluster"
OUTPUT = ROOT / "tests" / "data" / "acceptance" / "nccl-tests-alltoall_perf.txt"
CLUSTERS = sorted(p.parent.parent.name for p in GENERATED.glob("*/acceptance/plan.tsv"))

STAND_IN = """#!/bin/sh
# stand-in for {name}: records how it was run, then prints a real nccl-tests output as rank 0
rank=${{OMPI_COMM_WORLD_RANK:-${{SLURM_PROCID:-0}}}}
{{
    printf 'program=%s\\n' {name}
    printf 'arg=%s\\n' "$@"
    printf 'host=%s\\n' "${{SLURMD_NODENAME:-local}}"
    env | grep -E '^(NCCL_|CUDA_|HIP_|LOCAL_RANK=|OMPI_COMM_WORLD_|OMP_NUM_THREADS=|PET_|HWSPEC_BIND=|SLURM_(PROCID|LOCALID|STEP_NODELIST|STEP_NUM_TASKS)=)' | grep -v '^[NR]CCL_TESTS_DIR=' | sort
}} > "$(mktemp "{log}/{name}.XXXXXX")"
[ "$rank" != 0 ] || cat {output}
"""

MPIRUN = """#!/bin/bash
# stand-in for Open MPI's mpirun on one node: records its arguments, then runs the program once per rank
printf '%s\\n' "$*" >> {log}/mpirun.log
while [ $# -gt 0 ]; do
    case $1 in
    -np) np=$2; shift 2 ;;
    -H|--bind-to) shift 2 ;;
    *) break ;;
    esac
done
for ((rank = 0; rank < np; rank++)); do
    OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_LOCAL_RANK=$rank OMPI_COMM_WORLD_SIZE=$np "$@" || exit $?
done
"""

NUMACTL = """#!/bin/sh
# stand-in for numactl: records the binding bind.sh asks for, then runs the command
printf '%s %s\\n' "$OMPI_COMM_WORLD_LOCAL_RANK" "$*" >> {log}/numactl.log
while [ "$1" != -- ]; do shift; done
shift
exec "$@"
"""


def write_program(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def stand_ins(tmp: Path, *extra: tuple[str, str]) -> tuple[Path, Path]:
    """A directory of stand-in benchmark programs (and `extra` (name, text) programs) and the
    directory their records go to."""
    bin_dir, log = tmp / "bin", tmp / "log"
    bin_dir.mkdir()
    log.mkdir()
    for name in (*NCCL_TESTS, "nvbandwidth"):
        write_program(bin_dir / name, STAND_IN.format(name=name, log=log, output=OUTPUT))
    for name, text in extra:
        write_program(bin_dir / name, text.format(log=log))
    return bin_dir, log


def records(log: Path) -> list[dict]:
    """Every stand-in benchmark run: program, args, host and environment."""
    found = []
    for path in sorted(log.glob("*.*")):
        if path.suffix == ".log":
            continue
        lines = path.read_text().splitlines()
        entry: dict = {"args": [], "env": {}}
        for line in lines:
            key, _, value = line.partition("=")
            if key == "arg":
                entry["args"].append(value)
            elif key in ("program", "host"):
                entry[key] = value
            else:
                entry["env"][key] = value
        found.append(entry)
    return found


def conf_lines(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


# ---------------------------------------------------------------- a node: run-node.sh


def fake_sysfs(root: Path, ranks_tsv: Path) -> Path:
    """A sysfs tree with the NUMA nodes and CPUs of the platform's ranks.tsv, for bind.sh's checks."""
    system = root / "sys" / "devices" / "system"
    for line in ranks_tsv.read_text().splitlines():
        if line.startswith(("#", "local_rank\t")):
            continue
        numa, cpus = line.split("\t")[5:7]
        (system / "node" / f"node{numa}").mkdir(parents=True, exist_ok=True)
        (system / "node" / f"node{numa}" / "cpulist").write_text(cpus + "\n")
        (system / "cpu" / f"cpu{max(parse_cpu_list(cpus))}").mkdir(parents=True, exist_ok=True)
    return root


def run_node(platform: str, tmp: Path, **env: str) -> tuple[subprocess.CompletedProcess, Path, Path, Path]:
    """generate PLATFORM, then its run-node.sh with stand-ins: (result, its files, the stand-ins, the records)."""
    files = generate(ROOT / "platforms" / f"{platform}.yaml", tmp / "out") / platform
    bin_dir, log = stand_ins(tmp, ("mpirun", MPIRUN), ("numactl", NUMACTL))
    variables = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HWSPEC_DIR": str(files), "MPIRUN": str(bin_dir / "mpirun"),
                 "HWSPEC_SYSFS_ROOT": str(fake_sysfs(tmp / "sysfs", files / "ranks.tsv")), **env}
    result = subprocess.run(["bash", str(files / "acceptance" / "run-node.sh"), str(tmp / "results")], cwd=tmp,
                            env=variables, capture_output=True, text=True, timeout=120)
    return result, files, bin_dir, log


def expected_environment(files: Path, conf: str, topo: str) -> dict[str, str]:
    """What every rank sees of the node's files: launch.env with the files' own paths."""
    env = {k: v for k, v in conf_lines(files / "launch.env").items() if k.startswith(("NCCL_", "CUDA_", "HIP_", "OMP_", "PET_"))}
    return {**env, "NCCL_TOPO_FILE": str(files / topo), "NCCL_CONF_FILE": str(files / conf), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


@pytest.mark.slow  # runs run-node.sh, a stand-in process per test and GPU
def test_run_node_runs_every_test_once_per_gpu_with_the_nodes_environment_and_binding(tmp_path):
    result, files, bin_dir, log = run_node("hgx-h100", tmp_path, NCCL_TESTS_DIR=str(tmp_path / "bin"),
                                           NVBANDWIDTH=str(tmp_path / "bin" / "nvbandwidth"))
    assert result.returncode == 0, result.stderr
    assert (log / "mpirun.log").read_text().splitlines() == [
        f"-np 8 -H localhost:8 --bind-to none {files}/bind.sh {bin_dir}/{program} -b 8 -e 16G -f 2 -g 1"
        for program in NCCL_TESTS]
    # bind.sh binds ranks 0-3 to NUMA node 0 and 4-7 to node 1 (ranks.tsv), once per test
    assert (log / "numactl.log").read_text().splitlines() == [
        f"{rank} --cpunodebind={rank // 4} --membind={rank // 4} -- {bin_dir}/{program} -b 8 -e 16G -f 2 -g 1"
        for program in NCCL_TESTS for rank in range(8)]
    runs = records(log)
    nccl = [r for r in runs if r["program"] != "nvbandwidth"]
    assert Counter(r["program"] for r in nccl) == {program: 8 for program in NCCL_TESTS}
    environment = expected_environment(files, "nccl.conf", "nccl-topo.xml")
    for run in nccl:
        assert run["args"] == ["-b", "8", "-e", "16G", "-f", "2", "-g", "1"]
        assert {k: v for k, v in run["env"].items() if not k.startswith("OMPI_")} == environment
    assert sorted(r["env"]["OMPI_COMM_WORLD_LOCAL_RANK"] for r in nccl if r["program"] == "all_reduce_perf") == list("01234567")
    copies = [(r["program"], r["args"]) for r in runs if r["program"] == "nvbandwidth"]
    assert sorted(copies) == sorted(("nvbandwidth", ["-t", test]) for test in NVBANDWIDTH_TESTS)
    names = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert names == sorted([f"{p}.txt" for p in NCCL_TESTS] + [f"nvbandwidth-{t}.txt" for t in NVBANDWIDTH_TESTS])
    for name in names:
        command, output = (tmp_path / "results" / name).read_text().split("\n", 1)
        assert output == OUTPUT.read_text(), name
        test = name.removesuffix(".txt")
        assert command == (f"# {bin_dir}/nvbandwidth -t {test.removeprefix('nvbandwidth-')}" if test.startswith("nvbandwidth-") else
                           f"# {bin_dir}/mpirun -np 8 -H localhost:8 --bind-to none {files}/bind.sh {bin_dir}/{test} -b 8 -e 16G -f 2 -g 1"), name
    # the command heading each file tells hwspec diff which collective ran
    for program in NCCL_TESTS:
        (run,) = read_result(tmp_path / "results" / f"{program}.txt").runs
        assert run.collective == program.removesuffix("_perf")
    assert result.stdout == f"Compare with the platform:\n  hwspec diff {files}/platform.yaml {tmp_path}/results/*\n"


@pytest.mark.slow  # runs run-node.sh, a stand-in process per test and GPU
def test_run_node_on_an_amd_node_runs_rccl_tests_with_rccl_conf_and_no_copy_test(tmp_path):
    result, files, bin_dir, log = run_node("mi300x-oam", tmp_path, RCCL_TESTS_DIR=str(tmp_path / "bin"))
    assert result.returncode == 0, result.stderr
    assert (log / "mpirun.log").read_text().splitlines() == [
        f"-np 8 -H localhost:8 --bind-to none {files}/bind.sh {bin_dir}/{program} -b 8 -e 16G -f 2 -g 1"
        for program in NCCL_TESTS]
    runs = records(log)
    assert {r["program"] for r in runs} == set(NCCL_TESTS)
    environment = expected_environment(files, "rccl.conf", "rccl-topo.xml")
    assert environment["HIP_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert all({k: v for k, v in r["env"].items() if not k.startswith("OMPI_")} == environment for r in runs)
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == sorted(f"{p}.txt" for p in NCCL_TESTS)
    assert "nvbandwidth is CUDA-only" in (files / "acceptance" / "run-node.sh").read_text()


@pytest.mark.slow  # runs run-node.sh
def test_a_missing_program_stops_run_node_before_anything_runs(tmp_path):
    (tmp_path / "tests").mkdir()
    result, _, _, log = run_node("hgx-h100", tmp_path, NCCL_TESTS_DIR=str(tmp_path / "tests"))
    assert result.returncode == 2
    assert ("run-node.sh: not found: all_reduce_perf all_gather_perf reduce_scatter_perf alltoall_perf sendrecv_perf: "
            "set NCCL_TESTS_DIR, NVBANDWIDTH or MPIRUN, or put them on PATH") in result.stderr
    assert not (tmp_path / "results").exists() and not (log / "mpirun.log").exists()


@pytest.mark.parametrize("script", sorted(str(p.relative_to(GENERATED)) for p in GENERATED.glob("**/acceptance/*")
                                          if p.suffix in (".sh", ".sbatch")))
def test_every_generated_acceptance_script_parses(script):
    path = GENERATED / script
    shell = "sh" if path.read_text().startswith("#!/bin/sh") else "bash"
    result = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------- a cluster: the plan as run-plan.sh reads it


def listed(files: Path, *selection: str) -> list[list[str]]:
    """`run-plan.sh list SELECTION`: the runs as the scripts see them."""
    result = subprocess.run(["bash", str(files / "acceptance" / "run-plan.sh"), "list", *selection],
                            env={"PATH": "/usr/bin:/bin", "HWSPEC_DIR": str(files)}, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return [line.split("\t") for line in result.stdout.splitlines()]


def planned(topology) -> list[list[str]]:
    """The same from `hwspec.acceptance.plan`: round, position in it, results, ranks, tests, env, hosts."""
    hosts = topology.platform.hostnames
    rows, position, current = [], 0, None
    for run_set in plan(topology).sets:
        if run_set.round != current:
            current, position = run_set.round, 0
        env = " ".join(f"{k}={v}" for k, v in run_set.env) or "-"
        for run in run_set.runs():
            rows.append([str(run_set.round), str(position), run_set.label, str(run_set.ranks_per_node),
                         ",".join(run_set.tests), env, ",".join(hosts[n] for n in run)])
            position += 1
    return rows


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_run_plan_reads_every_run_of_a_shipped_plan_as_the_planner_made_it(cluster):
    topology = pipeline.check(ROOT / "platforms" / f"{cluster}.yaml").topology
    assert listed(GENERATED / cluster) == planned(topology)


def test_run_plan_selects_a_rounds_runs_by_position():
    rows = listed(GENERATED / "gb200-nvl72-x4", "3", "34", "2")
    assert [row[:3] + row[6:] for row in rows] == [["3", "34", "r03-leaf-pair-b", "gb200-r0-t00,gb200-r1-t17"],
                                                   ["3", "35", "r03-leaf-pair-b", "gb200-r2-t00,gb200-r3-t17"]]


@settings(max_examples=max(5, settings.default.max_examples // 2))
@given(cluster_specs(backend_network=True, max_gpus=2, max_sockets=2, max_nodes=24))
def test_run_plan_expands_any_clusters_hostlists_into_the_planned_runs(tmp_path_factory, files):
    note(dump_yaml(files.cluster))
    checked = check_cluster_files(files)
    out = tmp_path_factory.mktemp("plan")
    for path, text in plan_for(checked.topology, only=["acceptance"]).items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    assert listed(out / checked.topology.name) == planned(checked.topology)


# ---------------------------------------------------------------- a cluster under a real Slurm


@pytest.fixture(scope="module")
def slurm_programs() -> dict[str, str]:
    return slurm_daemons.slurm_programs()


@pytest.fixture
def pods(tmp_path):
    """The acceptance_pods fixture cluster generated, a Slurm configuration with one slurmd per
    node, the stand-ins, and the environment a job is submitted with (HWSPEC_BIND=off: this
    machine has not the platform's NUMA nodes; HWSPEC_MPI=pmi2: Debian's Slurm has no PMIx library)."""
    files = generate(FIXTURES / "acceptance_pods.yaml", tmp_path / "out") / "acceptance-pods"
    conf = slurm_daemons.slurm_dir(tmp_path / "slurm", files,
                                   slurm_daemons.one_line_per_node((files / "slurm" / "slurm.conf").read_text()))
    bin_dir, log = stand_ins(tmp_path)
    env = {**os.environ, "SLURM_CONF": str(conf / "slurm.conf"), "HWSPEC_DIR": str(files), "HWSPEC_BIND": "off",
           "HWSPEC_MPI": "pmi2", "HWSPEC_RESULTS": str(tmp_path / "results"), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    for name in [k for k in env if k.startswith(("NCCL_", "SLURM_JOB", "CUDA_"))]:
        del env[name]
    return files, conf, env, log, tmp_path


HOSTS = ["acc0", "acc1", "acc2", "acc3"]


def check_results_and_records(files: Path, results: Path, log: Path, rounds: set[int] | None = None) -> None:
    """Every planned run of `rounds` (all when None) left each test's output where the plan says,
    verbatim, and each of its ranks ran where and how the plan says."""
    topology = pipeline.check(FIXTURES / "acceptance_pods.yaml", platform_roots=[ROOT]).topology
    acceptance = plan(topology)
    expected_files = set()
    runs = records(log)
    for run_set in acceptance.sets:
        if rounds is not None and run_set.round not in rounds:
            continue
        for run in run_set.runs():
            hosts = [HOSTS[n] for n in run]
            tests = list(NCCL_TESTS) + ([f"nvbandwidth-{t}" for t in NVBANDWIDTH_TESTS] if "nvbandwidth" in run_set.tests else [])
            expected_files |= {f"{run_set.label}/{hosts[0]}/{test}.txt" for test in tests}
            for program in NCCL_TESTS:
                ranks = [r for r in runs if r["program"] == program and r["env"]["SLURM_STEP_NODELIST"] == compress(hosts)
                         and r["env"].get("CUDA_VISIBLE_DEVICES") == (dict(run_set.env).get("CUDA_VISIBLE_DEVICES") or "0,1")]
                ranks = [r for r in ranks if r["env"].get("LOCAL_RANK") == dict(run_set.env).get("LOCAL_RANK")]
                assert sorted((r["host"], r["env"]["SLURM_PROCID"]) for r in ranks) == sorted(
                    (host, str(i * run_set.ranks_per_node + k)) for i, host in enumerate(hosts)
                    for k in range(run_set.ranks_per_node)), (run_set.label, run, program)
                for rank in ranks:
                    assert rank["args"] == ["-b", "8", "-e", "8G", "-f", "2", "-g", "1"]
                    assert rank["env"]["NCCL_IB_HCA"] == dict(run_set.env).get("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1")
                    assert rank["env"]["NCCL_CONF_FILE"] == f"{files}/nccl.conf"
                    assert rank["env"]["NCCL_TOPO_FILE"] == f"{files}/nodes/two-gpus/nccl-topo.xml"
    found = {str(p.relative_to(results)) for p in results.glob("*/*/*")}
    assert found == expected_files
    for path in found:
        text = (results / path).read_text()
        if Path(path).name.startswith("nvbandwidth-"):
            assert text == OUTPUT.read_text(), path
            continue
        command, output = text.split("\n", 1)
        assert output == OUTPUT.read_text(), path
        program = Path(path).stem
        run_set = next(s for s in acceptance.sets if path.startswith(f"{s.label}/"))
        settings = " ".join(f"{k}={v}" for k, v in run_set.env)
        assert command == f"# {settings + ' ' if settings else ''}{program} -b 8 -e 8G -f 2 -g 1", path
        (read,) = read_result(results / path).runs
        assert (read.collective, {k: read.env[k] for k in dict(run_set.env) if k.startswith("NCCL_")}) == (
            program.removesuffix("_perf"), {k: v for k, v in run_set.env if k.startswith("NCCL_")}), path
    copies = [r for r in runs if r["program"] == "nvbandwidth"]
    if rounds is None or 0 in rounds:
        assert sorted((r["host"], r["args"][1], r["env"]["HWSPEC_BIND"]) for r in copies) == sorted(
            (host, test, "off") for host in HOSTS for test in NVBANDWIDTH_TESTS)


@pytest.mark.consumer
@pytest.mark.slow
def test_acceptance_sbatch_runs_the_whole_plan_to_completion_under_slurm(slurm_programs, pods):
    """`sbatch acceptance.sbatch`, as the script's header says: 6 rounds on 4 nodes of 2 GPUs in
    two pods, every run's tests as job steps on the planned nodes with the planned ranks, GPUs,
    NICs and results files. Then, with MaxStepCount below the plan's 72 steps, the whole plan is
    refused (submit.sh's case) and one round still runs."""
    files, conf, env, log, tmp = pods
    with slurm_daemons.slurmctld(slurm_programs, conf) as scontrol, slurm_daemons.slurmd(slurm_programs, conf, *HOSTS):
        job = slurm_daemons.submit_and_wait(slurm_programs, scontrol, tmp, env, str(files / "acceptance" / "acceptance.sbatch"))
        output = (tmp / f"slurm-{job['JobId']}.out").read_text()
        assert (job["JobState"], job["ExitCode"], job["Partition"], job["NumNodes"]) == ("COMPLETED", "0:0",
                                                                                         "acceptance-pods", "4"), output
        check_results_and_records(files, tmp / "results", log)
        assert "run-plan.sh: round 5\n" in output and "round 6" not in output

        (conf / "slurm.conf").write_text((conf / "slurm.conf").read_text() + "MaxStepCount=40\n")
        scontrol("reconfigure")
        shutil.rmtree(tmp / "results")
        for path in log.iterdir():
            path.unlink()
        refused = slurm_daemons.submit_and_wait(slurm_programs, scontrol, tmp, env, str(files / "acceptance" / "acceptance.sbatch"))
        said = (tmp / f"slurm-{refused['JobId']}.out").read_text()
        assert (refused["JobState"], refused["ExitCode"]) == ("FAILED", "2:0"), said
        assert "these runs take 72 job steps, more than Slurm's MaxStepCount (40): submit the plan with submit.sh" in said
        one = slurm_daemons.submit_and_wait(slurm_programs, scontrol, tmp, env, str(files / "acceptance" / "acceptance.sbatch"), "2")
        assert (one["JobState"], one["ExitCode"]) == ("COMPLETED", "0:0")
        check_results_and_records(files, tmp / "results", log, rounds={2})


@pytest.mark.consumer
@pytest.mark.slow
def test_submit_sh_runs_each_round_part_as_a_job_after_every_job_of_the_round_before(slurm_programs, pods):
    """HWSPEC_JOB_RUNS=1: one job per run (12), each on its run's nodes only; a round's jobs start
    after every job of the round before has ended."""
    files, conf, env, log, tmp = pods
    with slurm_daemons.slurmctld(slurm_programs, conf) as scontrol, slurm_daemons.slurmd(slurm_programs, conf, *HOSTS):
        result = subprocess.run(["bash", str(files / "acceptance" / "submit.sh")], cwd=tmp, env={**env, "HWSPEC_JOB_RUNS": "1"},
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        submitted = re.findall(r"submit.sh: round (\d+), runs (\d+)-(\d+) on (\d+) nodes: job (\d+)", result.stderr)
        assert [(r, a, b, n) for r, a, b, n, _ in submitted] == [
            ("0", "0", "0", "1"), ("0", "1", "1", "1"), ("0", "2", "2", "1"), ("0", "3", "3", "1"),
            ("1", "0", "0", "2"), ("1", "1", "1", "2"), ("2", "0", "0", "2"), ("2", "1", "1", "2"),
            ("3", "0", "0", "2"), ("3", "1", "1", "2"), ("4", "0", "0", "2"), ("5", "0", "0", "2")]
        jobs = {job: (int(number), slurm_daemons.wait_for(scontrol, job, timeout=240)) for number, _, _, _, job in submitted}
    assert all(fields["JobState"] == "COMPLETED" for _, fields in jobs.values()), jobs
    ends: dict[int, list[str]] = {}
    for number, fields in jobs.values():
        ends.setdefault(number, []).append(fields["EndTime"])
    for number, fields in jobs.values():
        if number:
            assert fields["StartTime"] >= max(ends[number - 1]), (number, fields["StartTime"], ends[number - 1])
    assert [fields["NodeList"] for number, fields in jobs.values() if number == 5] == ["acc[1,3]"]
    check_results_and_records(files, tmp / "results", log)


# ---------------------------------------------------------------- a cluster on Kubernetes: mpijob.yaml


def check_jsonschema_program() -> str:
    program = shutil.which("check-jsonschema", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if program is None:
        pytest.skip("check-jsonschema is not installed (pip install -e '.[consumers]')")
    return program


@pytest.mark.consumer
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_mpijob_is_a_valid_v2beta1_mpijob_with_a_worker_per_node(cluster, tmp_path):
    manifest = GENERATED / cluster / "acceptance" / "mpijob.yaml"
    schema = tmp_path / "mpijob.schema.json"
    schema.write_text(json.dumps(MPIJOB_SCHEMA))
    checked = subprocess.run([check_jsonschema_program(), "--schemafile", str(schema), str(manifest)],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    document = check_mpijob(manifest.read_text())
    topology = pipeline.check(ROOT / "platforms" / f"{cluster}.yaml").topology
    worker = document["spec"]["mpiReplicaSpecs"]["Worker"]
    gpus = topology.platform.groups[0].gpus_per_node
    assert (worker["replicas"], document["spec"]["slotsPerWorker"]) == (topology.platform.node_count, gpus)
    (container,) = worker["template"]["spec"]["containers"]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": gpus}}
    assert container["env"] == [{"name": "HWSPEC_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    assert worker["template"]["spec"]["nodeSelector"] == {"topology.hwspec.io/cluster": cluster}
    launcher = document["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert launcher["command"] == ["/bin/bash", f"/etc/hwspec/{cluster}/acceptance/run-plan.sh", "mpirun"]


@pytest.mark.consumer
def test_the_mpijob_schema_check_refuses_a_field_the_crd_does_not_have(tmp_path):
    """The check can fail: a replica field the v2beta1 CRD lacks would be pruned by the API server."""
    manifest = tmp_path / "mpijob.yaml"
    manifest.write_text((GENERATED / "zionex-16" / "acceptance" / "mpijob.yaml").read_text()
                        .replace("      replicas: 16\n", "      replicas: 16\n      minReplicas: 1\n"))
    schema = tmp_path / "mpijob.schema.json"
    schema.write_text(json.dumps(MPIJOB_SCHEMA))
    refused = subprocess.run([check_jsonschema_program(), "--schemafile", str(schema), str(manifest)],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "minReplicas" in refused.stdout


def test_a_long_cluster_names_mpijob_keeps_every_worker_host_name_a_dns_label(tmp_path):
    name = "c" * 60
    (tmp_path / "cluster.yaml").write_text(
        f"hwspec: 1\nkind: cluster\nname: {name}\nnodes:\n"
        f"  - {{platform: {ROOT / 'platforms' / 'hgx-h100.yaml'}, count: 1000, hostname: 'h${{i}}'}}\n")
    topology = pipeline.check(tmp_path / "cluster.yaml", platform_roots=[ROOT]).topology
    document = check_mpijob(plan_for(topology, only=["acceptance"])[f"{name}/acceptance/mpijob.yaml"])
    assert document["metadata"]["name"] == "c" * 41 + "-acceptance"  # + "-worker-999": 63 characters


MPI_OPERATOR_MPIRUN = """#!/bin/bash
# stand-in for Open MPI's mpirun in an MPIJob's launcher: runs each rank on this machine as the
# worker pod it names would (hostname: the pod; the node file: the pod's own), recording the call
printf '%s\\n' "$*" >> {log}/mpirun.log
hosts=() np= node_file=
while [ $# -gt 0 ]; do
    case $1 in
    --hostfile) while read -r entry _; do hosts+=("$entry:1"); done < "$2"; shift 2 ;;
    --host) IFS=, read -r -a hosts <<< "$2"; shift 2 ;;
    -np) np=$2; shift 2 ;;
    --map-by|--bind-to) shift 2 ;;
    -x) shift 2 ;;
    *) break ;;
    esac
done
rank=0
for entry in "${{hosts[@]}}"; do
    pod=${{entry%%.*}}; pod=${{pod%%:*}}; slots=${{entry##*:}}
    for ((slot = 0; slot < slots && rank < np; slot++, rank++)); do
        args=()
        for arg in "$@"; do args+=("${{arg//$HWSPEC_NODE_FILE/{pods}/$pod}}"); done
        FAKE_POD=$pod HWSPEC_NODE_FILE={pods}/$pod OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_LOCAL_RANK=$slot \\
            "${{args[@]}}" || exit $?
    done
done
"""


@pytest.mark.slow  # runs the whole plan's script, a stand-in process per run
def test_run_plan_in_an_mpijobs_launcher_maps_plan_hosts_to_worker_pods_by_their_nodes(tmp_path):
    """mpijob.yaml's launcher runs `run-plan.sh mpirun`: it asks every worker (the MPI Operator's
    hostfile) for the node its pod is on, then runs each test with mpirun --host on the pods of the
    run's nodes. Here pod i runs on node acc(3 - i), so a plan host is never its pod's index."""
    files = generate(FIXTURES / "acceptance_pods.yaml", tmp_path / "out") / "acceptance-pods"
    pods = tmp_path / "pods"
    pods.mkdir()
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"job-worker-{i}.job-worker.default.svc slots=2\n" for i in range(4)))
    for i in range(4):
        (pods / f"job-worker-{i}").write_text(f"acc{3 - i}\n")
    bin_dir, log = stand_ins(tmp_path, ("mpirun", MPI_OPERATOR_MPIRUN.replace("{pods}", str(pods))),
                             ("hostname", '#!/bin/sh\necho "$FAKE_POD"\n'))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HWSPEC_DIR": str(files), "HWSPEC_HOSTFILE": str(hostfile),
           "HWSPEC_RESULTS": str(tmp_path / "results"), "HWSPEC_BIND": "off", "NCCL_TESTS_DIR": str(bin_dir),
           "NVBANDWIDTH": str(bin_dir / "nvbandwidth")}
    result = subprocess.run(["bash", str(files / "acceptance" / "run-plan.sh"), "mpirun"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    calls = (log / "mpirun.log").read_text().splitlines()
    pod = {f"acc{3 - i}": f"job-worker-{i}.job-worker.default.svc" for i in range(4)}
    forward = f"-x HWSPEC_DIR -x HWSPEC_NODE_FILE -x NCCL_TESTS_DIR -x NVBANDWIDTH {files}/acceptance/rank.sh"
    assert calls[0] == f"--hostfile {hostfile} --map-by ppr:1:node --bind-to none -np 4 /bin/sh -c " \
                       'printf "%s %s\\n" "$(cat "$1")" "$(hostname)" sh /tmp/hwspec-node'
    assert f"--host {pod['acc0']}:2,{pod['acc1']}:2 -np 4 --bind-to none {forward} -- all_reduce_perf -b 8 -e 8G -f 2 -g 1" in calls
    assert (f"--host {pod['acc0']}:1,{pod['acc1']}:1 -np 2 --bind-to none {forward} CUDA_VISIBLE_DEVICES=1 LOCAL_RANK=1 "
            "NCCL_IB_HCA==mlx5_1:1 -- sendrecv_perf -b 8 -e 8G -f 2 -g 1") in calls
    assert f"--host {pod['acc3']}:1 -np 1 --bind-to none {forward} HWSPEC_BIND=off -- nvbandwidth -t host_to_device_memcpy_ce" in calls
    topology = pipeline.check(FIXTURES / "acceptance_pods.yaml", platform_roots=[ROOT]).topology
    expected = {f"{s.label}/{HOSTS[run[0]]}" for s in plan(topology).sets for run in s.runs()}
    assert {str(p.relative_to(tmp_path / "results")) for p in (tmp_path / "results").glob("*/*")} == expected
    assert len(calls) == 1 + sum(s.run_count * (5 + 3 * ("nvbandwidth" in s.tests)) for s in plan(topology).sets)
