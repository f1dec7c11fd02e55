"""Launcher environment: nccl.conf, launch.env, ranks.tsv and bind.sh for ZionEX and Zion,
their formats as bash, docker --env-file, NCCL's conf reader and sh read them, and the refusal
of values that would need quoting."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

from hwspec.diagnostics import HwspecError
from hwspec.generate.engine import GenerationError, UnsafeValue, env_value, plan_for, shell_word, xml_attr
from hwspec.generate.launch import cpu_ranges, gdr_level, nccl_settings, omp_threads
from hwspec.model.load import load_platform
from hwspec.pipeline import check
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
CONF_LINE = re.compile(r"^[A-Z0-9_]+=[^ \t'\"]*$")
LAUNCH_FILES = ("nccl.conf", "launch.env", "ranks.tsv", "bind.sh")


@cache
def _checked(name: str):
    checked = check(ROOT / "platforms" / f"{name}.yaml")
    assert not checked.failed(), checked.diagnostics
    return checked


@cache
def plan(name: str) -> dict[str, str]:
    checked = _checked(name)
    files = plan_for(checked.topology, only=["nccl-conf", "launch-env", "ranks", "bind"])
    return {key.split("/", 1)[1]: text for key, text in files.items()}


def settings(text: str) -> dict[str, str]:
    """NAME=value lines split on the first '=' (what NCCL's conf reader and docker do)."""
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


# ------------------------------------------------------------------ nccl.conf


@pytest.mark.parametrize("name", ["zionex", "zion"])
def test_nccl_conf_lines_are_name_value_or_comments(name):
    lines = plan(name)["nccl.conf"].splitlines()
    assert lines and all(line.startswith("#") or CONF_LINE.match(line) for line in lines), lines
    assert any("/etc/hwspec/" + name + "/nccl-topo.xml" in line for line in lines if line.startswith("#"))


def test_zionex_nccl_conf():
    conf = settings(plan("zionex")["nccl.conf"])
    cross_nic = "0" if _checked("zionex").platform.backend.rail_optimized else "1"
    assert conf == {
        "NCCL_IB_HCA": "=" + ",".join(f"mlx5_{i}:1" for i in range(8)),
        "NCCL_SOCKET_IFNAME": "=eth10,eth20,eth30,eth40",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "106",
        "NCCL_NET_GDR_LEVEL": "PIX",
        "NCCL_CROSS_NIC": cross_nic,
        "NCCL_TOPO_FILE": "/etc/hwspec/zionex/nccl-topo.xml",
    }
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1" in plan("zionex")["nccl.conf"]


def test_zion_nccl_conf_leaves_cross_nic_to_nccl_as_the_platform_states_no_rail_layout():
    assert settings(plan("zion")["nccl.conf"]) == {
        "NCCL_SOCKET_IFNAME": "=eth0,eth1,eth2,eth3",
        "NCCL_IB_DISABLE": "1",
        "NCCL_TOPO_FILE": "/etc/hwspec/zion/nccl-topo.xml",
    }


def test_a_socket_nic_without_an_interface_leaves_nccl_socket_ifname_to_nccl_instead_of_a_partial_exact_list():
    """An exact-name list of the other NICs would keep NCCL off the unnamed one: not set, and said why."""
    platform = _checked("zion").platform
    unnamed = dataclasses.replace(platform.nics[0], interface=None)
    changed = dataclasses.replace(platform, nics=(unnamed, *platform.nics[1:]))
    written = [(s.name, s.value, s.why) for s in nccl_settings(topology_of(changed), "/etc/hwspec/x")
               if s.name == "NCCL_SOCKET_IFNAME"]
    assert written == [("NCCL_SOCKET_IFNAME", None, "NCCL_SOCKET_IFNAME is not set: the platform does not name the "
                         "network interfaces of its tcp backend NICs, so NCCL picks its interfaces itself (HW603 lists them)")]


def test_cross_nic_follows_rail_optimization():
    platform = _checked("zionex").platform
    for rail, expected in ((True, "0"), (False, "1")):
        changed = dataclasses.replace(platform, backend=dataclasses.replace(platform.backend, rail_optimized=rail))
        values = {s.name: s.value for s in nccl_settings(topology_of(changed), "/etc/hwspec/x")}
        assert values["NCCL_CROSS_NIC"] == expected


# ------------------------------------------------------------------ launch.env


@pytest.mark.parametrize("name", ["zionex", "zion"])
def test_launch_env_reads_the_same_in_bash_and_as_a_docker_env_file(name, tmp_path):
    text = plan(name)["launch.env"]
    for line in text.splitlines():
        # docker --env-file: no leading blanks, '#' comments, every other line NAME=value
        assert line.startswith("#") or CONF_LINE.match(line), line
    docker = settings(text)
    (tmp_path / "launch.env").write_text(text)
    result = subprocess.run(["bash", "-c", "set -a; . ./launch.env; set +a; env -0"], cwd=tmp_path,
                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, capture_output=True, check=True)
    bash = dict(item.split("=", 1) for item in result.stdout.decode().split("\0") if "=" in item)
    assert {key: bash.get(key) for key in docker} == docker
    assert docker["PET_NPROC_PER_NODE"] == "8"
    assert docker["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert docker["OMP_NUM_THREADS"] == "14"
    nccl = {k: v for k, v in docker.items() if k.startswith("NCCL_")}
    assert nccl == settings(plan(name)["nccl.conf"])


def test_omp_threads_is_cores_per_gpu_on_its_numa_node():
    # ZionEX: 28 cores and 2 GPUs per socket; Zion: the same on the 4 sockets that have GPUs
    assert omp_threads(_checked("zionex").topology) == 14
    assert omp_threads(_checked("zion").topology) == 14


# ------------------------------------------------------------------ ranks.tsv


def test_zionex_ranks_table():
    lines = plan("zionex")["ranks.tsv"].splitlines()
    comments = [line for line in lines if line.startswith("#")]
    assert lines[:len(comments)] == comments and len(comments) >= 3
    rows = [line.split("\t") for line in lines[len(comments):]]
    assert rows[0] == ["local_rank", "gpu", "gpu_bus_id", "nic", "nic_bus_id", "numa_node", "cpus"]
    assert rows[1] == ["0", "gpu0", "0000:14:00.0", "mlx5_0", "0000:16:00.0", "0", "0-27,112-139"]
    assert rows[4] == ["3", "gpu3", "0000:5c:00.0", "mlx5_3", "0000:5e:00.0", "1", "28-55,140-167"]
    assert [row[0] for row in rows[1:]] == [str(i) for i in range(8)]
    assert all(len(row) == 7 for row in rows)


def test_zion_ranks_table_has_no_backend_nic():
    lines = [line for line in plan("zion")["ranks.tsv"].splitlines() if not line.startswith("#")]
    assert lines[1].split("\t") == ["0", "gpu0", "0000:14:00.0", "-", "-", "0", "0-27,224-251"]
    assert lines[8].split("\t")[5] == "6"


def test_cpu_ranges():
    assert cpu_ranges((0, 1, 2, 5, 7, 8)) == "0-2,5,7-8"
    assert cpu_ranges((3,)) == "3"
    assert cpu_ranges(()) == ""


# ------------------------------------------------------------------ bind.sh

SH = shutil.which("sh") or "/bin/sh"


def _bind(tmp_path: Path, name: str = "zionex") -> Path:
    script = tmp_path / "bind.sh"
    script.write_text(plan(name)["bind.sh"])
    script.chmod(0o755)
    return script


def _fake_numactl(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "numactl"
    fake.write_text('#!/bin/sh\necho "numactl $* CUDA_DEVICE_ORDER=$CUDA_DEVICE_ORDER"\n')
    fake.chmod(0o755)
    return bin_dir


def _sysfs(tmp_path: Path, nodes: dict[int, str], cpus: int) -> Path:
    """A sysfs tree with `nodes` (NUMA node -> its online CPU list) and CPUs 0..cpus-1, for
    bind.sh's HWSPEC_SYSFS_ROOT."""
    root = tmp_path / "sysfs"
    system = root / "sys" / "devices" / "system"
    (system / "node").mkdir(parents=True)
    for node, cpulist in nodes.items():
        (system / "node" / f"node{node}").mkdir()
        (system / "node" / f"node{node}" / "cpulist").write_text(cpulist + "\n")
    (system / "node" / "online").write_text("0\n")  # not a node directory
    for cpu in range(cpus):
        (system / "cpu" / f"cpu{cpu}").mkdir(parents=True)
    return root


def _zionex_sysfs(tmp_path: Path) -> Path:
    """A machine that matches zionex: 4 NUMA nodes, 224 CPUs."""
    return _sysfs(tmp_path, {n: f"{28 * n}-{28 * n + 27},{112 + 28 * n}-{139 + 28 * n}" for n in range(4)}, 224)


def _run(script: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SH, str(script), *args], env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("name", ["zionex", "zion"])
def test_bind_sh_is_valid_posix_sh(name, tmp_path):
    text = plan(name)["bind.sh"]
    assert text.startswith("#!/bin/sh\n# Generated by hwspec ")
    subprocess.run([SH, "-n", str(_bind(tmp_path, name))], check=True)


def test_bind_sh_execs_numactl_on_the_ranks_numa_node(tmp_path):
    script, bin_dir = _bind(tmp_path), _fake_numactl(tmp_path)
    path = f"{bin_dir}:/usr/bin:/bin"
    sysfs = {"HWSPEC_SYSFS_ROOT": str(_zionex_sysfs(tmp_path))}
    result = _run(script, {"PATH": path, "LOCAL_RANK": "3", **sysfs}, "cmd")
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "numactl --cpunodebind=1 --membind=1 -- cmd CUDA_DEVICE_ORDER=PCI_BUS_ID\n", "")
    # launchers other than torchrun: Slurm, then Open MPI
    result = _run(script, {"PATH": path, "SLURM_LOCALID": "6", "OMPI_COMM_WORLD_LOCAL_RANK": "0", **sysfs}, "cmd", "a b")
    assert result.stdout == "numactl --cpunodebind=3 --membind=3 -- cmd a b CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
    result = _run(script, {"PATH": path, "OMPI_COMM_WORLD_LOCAL_RANK": "0", **sysfs}, "cmd")
    assert result.stdout.startswith("numactl --cpunodebind=0 --membind=0 -- cmd")


def test_bind_sh_fails_loudly(tmp_path):
    script, bin_dir = _bind(tmp_path), _fake_numactl(tmp_path)
    path = f"{bin_dir}:/usr/bin:/bin"
    result = _run(script, {"PATH": path, "LOCAL_RANK": "8"}, "cmd")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "bind.sh: local rank '8' does not exist on zionex (local ranks 0-7)\n"
    result = _run(script, {"PATH": path}, "cmd")
    assert result.returncode == 2 and result.stderr.startswith("bind.sh: no local rank: set LOCAL_RANK")
    # no numactl on PATH: refuse rather than run unbound, unless asked
    result = _run(script, {"PATH": str(tmp_path / "empty"), "LOCAL_RANK": "3"}, "cmd")
    assert result.returncode == 127
    assert result.stderr.startswith("bind.sh: numactl not found on PATH")
    result = _run(script, {"PATH": "/usr/bin:/bin", "LOCAL_RANK": "3", "HWSPEC_BIND": "off"}, "echo", "unbound")
    assert (result.returncode, result.stdout) == (0, "unbound\n")


def test_bind_sh_names_the_numa_node_this_machine_lacks_instead_of_running_numactl(tmp_path):
    """A machine with one NUMA node: rank 0 binds (node 0), rank 4 stops with the platform fact
    the machine lacks, and numactl is not run (it would say only 'node argument 2 is out of range')."""
    script, bin_dir = _bind(tmp_path), _fake_numactl(tmp_path)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HWSPEC_SYSFS_ROOT": str(_sysfs(tmp_path, {0: "0-27,112-139"}, 224))}
    assert _run(script, {**env, "LOCAL_RANK": "0"}, "cmd").stdout.startswith("numactl --cpunodebind=0 --membind=0 -- cmd")
    result = _run(script, {**env, "LOCAL_RANK": "4"}, "cmd")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("bind.sh: zionex puts local rank 4 on NUMA node 2, which this machine does not have (its NUMA nodes: 0): "
                             "run on a machine that matches zionex, or set HWSPEC_BIND=off to run unbound\n")
    bare = _sysfs(tmp_path / "bare", {}, 0)
    result = _run(script, {**env, "LOCAL_RANK": "0", "HWSPEC_SYSFS_ROOT": str(bare)}, "cmd")
    assert result.returncode == 2 and "which this machine does not have (its NUMA nodes: none)" in result.stderr


def test_bind_sh_names_the_cpus_this_machine_lacks(tmp_path):
    """The rank's NUMA node is there but has no online CPUs (a memory-only node), or the machine
    has fewer CPUs than the platform gives the node: one line each, numactl not run."""
    script, bin_dir = _bind(tmp_path), _fake_numactl(tmp_path)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LOCAL_RANK": "2"}
    memory_only = _sysfs(tmp_path / "a", {0: "0-27", 1: ""}, 224)
    result = _run(script, {**env, "HWSPEC_SYSFS_ROOT": str(memory_only)}, "cmd")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("bind.sh: zionex gives NUMA node 1 CPUs 28-55,140-167, and on this machine that node has no online CPUs: "
                             "run on a machine that matches zionex, or set HWSPEC_BIND=off to run unbound\n")
    fewer_cpus = _sysfs(tmp_path / "b", {0: "0-27", 1: "28-55"}, 112)  # a smaller machine: CPUs 0-111 only
    result = _run(script, {**env, "HWSPEC_SYSFS_ROOT": str(fewer_cpus)}, "cmd")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("bind.sh: zionex gives NUMA node 1 CPUs 28-55,140-167, and this machine has no CPU 167: "
                             "run on a machine that matches zionex, or set HWSPEC_BIND=off to run unbound\n")


# ------------------------------------------------------------------ GPUDirect level

NODE = """\
hwspec: 1
kind: node
name: {name}
sockets:
  - id: cpu0
    part: xeon-platinum-8380h
    numa_node: 0
    memory: {{capacity: 256 GiB, bandwidth: 80 GB/s}}
pcie:
  - {{id: sw0, upstream: cpu0, bus: "0000:11:00.0", link: {{gen: 4, width: 16}}, max_oversubscription: 8}}
  - {{id: sw1, upstream: sw0, bus: "0000:12:00.0", link: {{gen: 4, width: 16}}, max_oversubscription: 8}}
gpus:
  - {{id: gpu0, part: a100-sxm4-40gb, pcie: {{upstream: sw0, bus: "0000:14:00.0"}}}}
nics:
  - id: nic0
    part: connectx-6-200g
    role: backend
    transport: rocev2
    gpu: gpu0
    device: {device}
    interface: {interface}
    pcie: {{upstream: {nic_upstream}, bus: "0000:16:00.0"}}
  - id: fe0
    part: ethernet-100g
    role: ingestion
    transport: tcp
    interface: eth0
    pcie: {{upstream: cpu0, bus: "0000:30:00.0"}}
backend: {{transport: rocev2, nic_per_gpu: true, gpudirect: true}}
"""


def node(tmp_path: Path, name: str = "tiny", device: str = "mlx5_0", interface: str = "eth1", nic_upstream: str = "sw0") -> Path:
    path = tmp_path / f"{name if re.fullmatch(r'[a-z0-9_-]+', name) else 'adversarial'}.yaml"
    path.write_text(NODE.format(name=json.dumps(name), device=json.dumps(device), interface=json.dumps(interface),
                                nic_upstream=nic_upstream), encoding="utf-8")
    return path


@pytest.mark.parametrize("upstream, level", [("sw0", "PIX"), ("sw1", "PXB"), ("cpu0", "PHB")])
def test_gdr_level_follows_the_pcie_distance_between_gpu_and_nic(tmp_path, upstream, level):
    platform = load_platform(node(tmp_path, nic_upstream=upstream))
    topology = topology_of(platform)
    assert topology.pcie_path_type("gpu0", "nic0") == level
    assert gdr_level(topology) == level
    assert {s.name: s.value for s in nccl_settings(topology, "/etc/hwspec/x")}["NCCL_NET_GDR_LEVEL"] == level


def test_gdr_level_across_sockets_is_capped_at_phb():
    checked = _checked("zionex")
    topology = checked.topology
    assert topology.pcie_path_type("gpu0", "nic2") == "SYS"
    assert topology.pcie_path_type("gpu0", "fe0") == "PHB"
    assert topology.pcie_path_type("gpu0", "nic1") == "PIX"
    assert gdr_level(topology) == "PIX"


def test_no_gdr_level_without_gpudirect():
    checked = _checked("zionex")
    platform = dataclasses.replace(checked.platform, backend=dataclasses.replace(checked.platform.backend, gpudirect=False))
    assert "NCCL_NET_GDR_LEVEL" not in {s.name for s in nccl_settings(topology_of(platform), "/etc/hwspec/x")}


# ------------------------------------------------------------------ values that would need quoting

ADVERSARIAL = ['eth0"', "eth0'", "eth<0>", "e\nX=1", "$(reboot)", "eth 0", "`id`", "eth0;ls"]


@pytest.mark.parametrize("value", ADVERSARIAL)
@pytest.mark.parametrize("field", ["interface", "device", "name"])
def test_adversarial_names_are_refused_when_the_platform_is_loaded(tmp_path, field, value):
    with pytest.raises(HwspecError) as caught:
        load_platform(node(tmp_path, **{field: value}))
    messages = [d.message for d in caught.value.diagnostics]
    where = {"interface": "nics[0].interface: ", "device": "nics[0].device: ", "name": "name: "}[field]
    what = "an id" if field == "name" else "a device or interface name"
    assert len(messages) == 1 and messages[0].startswith(where) and f"is not {what}" in messages[0], messages


@pytest.mark.parametrize("value", ADVERSARIAL + ["a=b c", "~root", "*", "x|y", "a&b", "\t"])
def test_env_and_shell_filters_refuse_unsafe_values(value):
    with pytest.raises(UnsafeValue):
        env_value(value)
    with pytest.raises(UnsafeValue):
        shell_word(value)


def test_filters_pass_safe_values_and_xml_attr_escapes():
    assert env_value("=mlx5_0:1,mlx5_1:1") == "=mlx5_0:1,mlx5_1:1"
    assert shell_word("0000:14:00.0") == "0000:14:00.0"
    assert xml_attr('a"b<c>&d\ne') == '"a&quot;b&lt;c&gt;&amp;d&#10;e"'


def test_a_hostile_value_that_bypassed_validation_stops_generation():
    checked = _checked("zionex")
    platform = checked.platform
    nics = tuple(dataclasses.replace(n, interface="eth10;reboot") if n.id == "fe0" else n for n in platform.nics)
    hostile = dataclasses.replace(platform, nics=nics)
    for only in (["nccl-conf"], ["launch-env"]):
        with pytest.raises(GenerationError, match=r"refusing to write '=eth10;reboot,eth20,eth30,eth40'"):
            plan_for(topology_of(hostile), only=only)
    # the XML escapes it instead (and the compatibility check still judges the result)
    assert "eth10;reboot" in plan_for(topology_of(hostile), only=["nccl-topo"])["zionex/nccl-topo.xml"]
