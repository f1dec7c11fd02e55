"""Acceptance suites: the files that run nccl-tests (rccl-tests on AMD nodes) and nvbandwidth on
machines, to check at bring-up and after repair that they reach their bandwidth.

- A node platform: `acceptance/run-node.sh`, every test on that node with its generated
  environment (launch.env, nccl.conf or rccl.conf, bind.sh's per-rank binding).
- Both: `acceptance/expected.json`, what the runs should show (`hwspec.acceptance.expected`,
  `hwspec expect --format json`).
- A cluster: `acceptance/plan.tsv` (`hwspec.acceptance.plan`: rounds of runs that share no
  link, one line per set of runs that differ only in their hosts), `run-plan.sh` (runs the plan
  with srun or Open MPI's mpirun), `rank.sh` (one rank, with its node's files), `acceptance.sbatch`
  (a Slurm job over the plan), `submit.sh` (one job per round part: a plan of any size stays
  within Slurm's MaxStepCount) and `mpijob.yaml` (a Kubeflow MPI Operator MPIJob running the plan).

Every value written into a script or the plan passes `shell_word`/`env_value`, which refuse what
they would have to quote; host names and addresses are checked again (`host_limits`: HW805's
syntax; a library caller may generate without the rules) and refused otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hwspec.acceptance.expected import document as expected_document
from hwspec.acceptance.plan import (
    GIB,
    NCCL_TESTS,
    NVBANDWIDTH_TESTS,
    AcceptancePlan,
    RunSet,
    max_message_bytes,
    plan,
    size_text,
    uniform_gpus,
)
from hwspec.cpulist import format_cpu_list
from hwspec.formats.limits import cluster_limits, host_limits, k8s_name
from hwspec.formats.nccl_tree import collective_library, missing_bus_ids
from hwspec.generate.domains import LABEL_CLUSTER, YAML_DUMPER
from hwspec.generate.engine import ClusterGenContext, GenContext, Plan, env_value, generator, refuse, shell_word
from hwspec.generate.roofline import dump
from hwspec.model.cluster import Cluster
from hwspec.topology import ClusterTopology, topology_of

ROUND_MINUTES = 15
"""Wall time a round may take (`#SBATCH --time` is rounds x this): five nccl-tests sweeps from 8 B
to 16 GiB and three nvbandwidth tests take a few minutes on a healthy node; a bound, not a figure."""
JOB_RUNS = 256
"""Runs one job of submit.sh starts at most (HWSPEC_JOB_RUNS overrides it): its batch script
starts that many run loops at once, and takes at most 8 steps a run, 2,048 a job, far below
Slurm's MaxStepCount (40,000 by default)."""
MAX_STEP_COUNT = 40000
"""Slurm's default MaxStepCount (slurm.conf(5)): steps one job may start."""
IMAGE = "site.invalid/hwspec/acceptance:replace-me"
"""The MPIJob's container image: a placeholder under the reserved .invalid domain (RFC 2606), so
that a manifest applied unchanged fails to pull at once instead of running something else."""
NODE_FILE = "/tmp/hwspec-node"
"""Where an MPIJob worker writes its Kubernetes node name (the downward API's spec.nodeName)."""
RESULTS_MOUNT = "/results"


def nccl_args(max_bytes: int) -> list[str]:
    """The nccl-tests arguments of every run: one GPU per process (`-g 1`), sizes 8 B to
    `max_bytes` doubling (`-b 8 -e SIZE -f 2`)."""
    return ["-b", "8", "-e", size_text(max_bytes), "-f", "2", "-g", "1"]


# ---------------------------------------------------------------- a node


@generator("acceptance-node")
def acceptance_node(ctx: GenContext) -> Plan:
    """`acceptance/run-node.sh`: the node's acceptance tests (the module's docstring)."""
    platform = ctx.platform
    if not platform.gpus:
        return {}
    library = collective_library(platform)
    max_bytes = max_message_bytes([platform])
    hbm = min((g.hbm_capacity for g in platform.gpus if g.hbm_capacity is not None), default=None)
    hbm_text = None if hbm is None else f"HBM {hbm / GIB:.4g} GiB"
    values = {
        "header": ctx.header("hash"), "install_dir": ctx.install_dir,
        "library": library, "conf": f"{library}.conf",
        "topo": None if missing_bus_ids(ctx.topology) else f"{library}-topo.xml",
        "gpus": len(platform.gpus), "programs": NCCL_TESTS, "nccl_args": nccl_args(max_bytes),
        "hbm": hbm_text, "nvbandwidth": NVBANDWIDTH_TESTS if library == "nccl" else (),
        "suite": f"{library}-tests", "tests_var": f"{library.upper()}_TESTS_DIR",
    }
    return {"acceptance/run-node.sh": ctx.render("acceptance/run-node.sh.j2", None, **values),
            "acceptance/expected.json": expected_json(ctx)}


def expected_json(ctx: GenContext | ClusterGenContext) -> str:
    """`acceptance/expected.json`: the platform's figures, with the provenance header as `_generated`."""
    return dump_rows({"_generated": ctx.header_lines(), **expected_document(ctx.topology)})


_ROW = "\x00row{}"


def dump_rows(document: dict[str, Any]) -> str:
    """`roofline.dump`'s JSON with every list of numbers or names (a run's column of figures) and
    every copy (an nvbandwidth test's `figures`) on one line: sizes and GPU pairs read as rows,
    the file stays a fraction of the size, and json's C encoder writes the rows (its indenting
    encoder is Python)."""
    rows: list[str] = []

    def row(value: Any) -> str:
        rows.append(json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(", ", ": ")))
        return _ROW.format(len(rows) - 1)

    def skeleton(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: skeleton(v, k) for k, v in value.items()}
        if isinstance(value, list):
            if key == "figures":  # an nvbandwidth test's copies: one per line
                return [row(v) for v in value]
            if all(not isinstance(v, (dict, list)) for v in value):
                return row(value)
            return [skeleton(v) for v in value]
        return value

    text = dump(skeleton(document))
    return re.sub(r'"\\u0000row(\d+)"', lambda m: rows[int(m.group(1))], text)


# ---------------------------------------------------------------- a cluster


def host_list(topology: ClusterTopology, run_set: RunSet) -> str:
    """The run set's hosts as a Slurm hostlist that expands to them in node order (a comma list
    where no hostlist does)."""
    text = topology.spans_in_order(run_set.spans)
    if text is None:
        text = ",".join(name for span in run_set.spans for name in topology.platform.hostnames[span.start:span.stop])
    return text


def plan_rows(topology: ClusterTopology, acceptance: AcceptancePlan) -> list[list[str]]:
    """plan.tsv's rows, every cell checked for the scripts (`shell_word`, `env_value`)."""
    rows = []
    for s in acceptance.sets:
        env = " ".join(f"{shell_word(name)}={env_value(value)}" for name, value in s.env) or "-"
        rows.append([str(s.round), s.scope, shell_word(s.label), str(s.run_count), str(s.size), s.layout,
                     str(s.ranks_per_node), format_cpu_list(s.gpus), ",".join(map(shell_word, s.nics)) or "-",
                     ",".join(s.tests), env, host_list(topology, s)])
    return rows


PLAN_COLUMNS = ("round", "scope", "results", "runs", "nodes", "layout", "ranks", "gpus", "nics", "tests", "env", "hosts")


@generator("acceptance", scope="cluster")
def acceptance_cluster(ctx: ClusterGenContext) -> Plan:
    """`acceptance/plan.tsv`, `run-plan.sh`, `rank.sh`, `acceptance.sbatch`, `submit.sh` and
    `mpijob.yaml` (the module's docstring)."""
    cluster = ctx.platform
    refuse(cluster, "acceptance", [*cluster_limits(cluster), *host_limits(cluster)])
    gpus = uniform_gpus(cluster)
    if not gpus:
        return {}
    acceptance = plan(ctx.topology)
    steps = sum(s.run_count * (len(NCCL_TESTS) + (len(NVBANDWIDTH_TESTS) if "nvbandwidth" in s.tests else 0))
                for s in acceptance.sets)
    values: dict[str, Any] = {
        "header": ctx.header("hash"), "cluster": cluster, "install_dir": ctx.install_dir, "gpus": gpus,
        "acceptance": acceptance, "programs": NCCL_TESTS, "nvbandwidth": NVBANDWIDTH_TESTS,
        "nccl_args": nccl_args(acceptance.max_bytes), "steps": steps, "max_steps": MAX_STEP_COUNT,
        "job_runs": JOB_RUNS, "round_minutes": ROUND_MINUTES, "node_file": NODE_FILE,
        "all_hosts": ctx.topology.hostlist(), "platforms": _platform_files(cluster),
        "time": _duration(acceptance.rounds * ROUND_MINUTES), "round_time": _duration(ROUND_MINUTES),
    }
    tsv = ctx.render("acceptance/plan.tsv.j2", "hash", columns=PLAN_COLUMNS, rows=plan_rows(ctx.topology, acceptance),
                     **values)
    return {
        "acceptance/plan.tsv": tsv,
        "acceptance/run-plan.sh": ctx.render("acceptance/run-plan.sh.j2", None, **values),
        "acceptance/rank.sh": ctx.render("acceptance/rank.sh.j2", None, **values),
        "acceptance/acceptance.sbatch": ctx.render("acceptance/acceptance.sbatch.j2", None, **values),
        "acceptance/submit.sh": ctx.render("acceptance/submit.sh.j2", None, **values),
        "acceptance/mpijob.yaml": mpijob(ctx, acceptance, gpus, collective_library(cluster.groups[0].platform)),
        "acceptance/expected.json": expected_json(ctx),
    }


def _platform_files(cluster: Cluster) -> list[tuple[str, str]]:
    """(node platform, its topology file name or "") for rank.sh's table."""
    rows = []
    for platform in cluster.node_platforms:
        library = collective_library(platform)
        rows.append((platform.name, "" if missing_bus_ids(topology_of(platform)) else f"{library}-topo.xml"))
    return rows


def _duration(minutes: int) -> str:
    """Slurm's `--time` as hours:minutes:seconds."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def mpijob_name(cluster: Cluster) -> str:
    """The MPIJob's name: the cluster's Kubernetes name and `-acceptance`, cut so that every worker
    pod's host name (`<name>-worker-<index>`) is a DNS label of at most 63 characters."""
    suffix = "-acceptance"
    room = 63 - len(suffix) - len(f"-worker-{cluster.node_count - 1}")
    return k8s_name(cluster.name)[:room].rstrip("-") + suffix


def mpijob(ctx: ClusterGenContext, acceptance: AcceptancePlan, gpus: int, library: str) -> str:
    """The MPIJob (Kubeflow MPI Operator, kubeflow.org/v2beta1): a launcher running
    `run-plan.sh mpirun` and one worker per node, each requesting all its node's GPUs (so no two
    share a node) on the cluster's nodes (label-nodes.sh's cluster label). A worker writes its
    node's name (downward API) to NODE_FILE before its sshd starts; the launcher maps plan hosts
    to worker pods with it. The generated files are mounted from the nodes' install directory."""
    import yaml

    cluster = ctx.platform
    install = shell_word(ctx.install_dir)
    resource = "amd.com/gpu" if library == "rccl" else "nvidia.com/gpu"

    def hwspec_volume() -> dict[str, Any]:  # a new dict each time: a shared one would be dumped as a YAML alias
        return {"name": "hwspec", "hostPath": {"path": install, "type": "Directory"}}

    def hwspec_mount() -> dict[str, Any]:
        return {"name": "hwspec", "mountPath": install, "readOnly": True}

    launcher = {
        "name": "launcher", "image": IMAGE,
        "command": ["/bin/bash", f"{install}/acceptance/run-plan.sh", "mpirun"],
        "env": [{"name": "HWSPEC_DIR", "value": install}, {"name": "HWSPEC_RESULTS", "value": RESULTS_MOUNT},
                {"name": "OMPI_ALLOW_RUN_AS_ROOT", "value": "1"}, {"name": "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "value": "1"}],
        "volumeMounts": [hwspec_mount(), {"name": "results", "mountPath": RESULTS_MOUNT}],
    }
    worker = {
        "name": "worker", "image": IMAGE,
        "command": ["/bin/sh", "-c", f"printf '%s\\n' \"$HWSPEC_NODE\" > {NODE_FILE} && exec /usr/sbin/sshd -De"],
        "env": [{"name": "HWSPEC_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "resources": {"limits": {resource: gpus}},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        "volumeMounts": [hwspec_mount(), {"name": "shm", "mountPath": "/dev/shm"}],
    }
    labels = {LABEL_CLUSTER: k8s_name(cluster.name)}
    document = {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": mpijob_name(cluster), "labels": labels},
        "spec": {
            "slotsPerWorker": gpus, "mpiImplementation": "OpenMPI",
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"metadata": {"labels": dict(labels)}, "spec": {
                    "containers": [launcher],
                    "volumes": [hwspec_volume(), {"name": "results", "emptyDir": {}}]}}},
                "Worker": {"replicas": cluster.node_count, "template": {"metadata": {"labels": dict(labels)}, "spec": {
                    "nodeSelector": dict(labels), "containers": [worker],
                    "volumes": [hwspec_volume(), {"name": "shm", "emptyDir": {"medium": "Memory"}}]}}},
            },
        },
    }
    note = (f"# The acceptance plan of {shell_word(cluster.name)} (plan.tsv) as a Kubeflow MPI Operator MPIJob "
            "(kubeflow.org/v2beta1, MPI Operator 0.4 or later):\n"
            f"#   kubectl apply -f mpijob.yaml, after label-nodes.sh; one worker per node ({cluster.node_count}), each with "
            f"the node's {gpus} GPUs.\n"
            f"# Before applying: set both images to one with {'rccl-tests' if library == 'rccl' else 'nccl-tests'} "
            "(built with MPI=1)"
            + (", nvbandwidth" if library == "nccl" else "") + ", Open MPI, sshd, bash and awk\n"
            f"# ({IMAGE} never resolves), give the workers the site's RDMA devices (the resource its\n"
            "# RDMA device plugin names, or hostNetwork), and put a PersistentVolumeClaim in place of the\n"
            f"# results emptyDir to keep {RESULTS_MOUNT}. The nodes must hold the generated files in {install}.\n")
    return (ctx.header("hash") + note
            + yaml.dump(document, Dumper=YAML_DUMPER, sort_keys=False, default_flow_style=False, width=1000))
