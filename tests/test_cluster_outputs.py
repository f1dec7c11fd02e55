"""Cluster outputs: Slurm files in Slurm's documented syntax, the launch scripts, the cluster
roofline and TorchRec views, and output that does not grow per node."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.generate import engine as generate
from hwspec.topology.hostlist import expand
from tests.scheduler_formats import parse_label_script

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"

# gres.conf(5): "NodeName=... Name=gpu Type=... File=... Cores=... Links=...", whitespace-separated
GRES_KEYS = {"AutoDetect", "Count", "Cores", "File", "Flags", "Links", "MultipleFiles", "Name", "NodeName", "Type"}
CORE_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
# topology.conf(5), topology/tree: "SwitchName=... (Nodes=...|Switches=...) [LinkSpeed=...]"
TOPOLOGY_KEYS = {"SwitchName", "Nodes", "Switches", "LinkSpeed"}


def slurm_lines(path: Path) -> list[dict[str, str]]:
    """Parse a Slurm config file into one dict per non-comment line, as slurmd reads it."""
    entries = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pairs = line.split()
        entry = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            assert sep and value, f"{path.name}: '{pair}' is not key=value in: {line}"
            assert key not in entry, f"{path.name}: {key} twice in: {line}"
            entry[key] = value
        entries.append(entry)
    return entries


@pytest.mark.parametrize("cluster", ["zionex-16", "zion-16"])
def test_gres_conf_follows_slurm_syntax(cluster):
    entries = slurm_lines(GENERATED / cluster / "slurm" / "gres.conf")
    assert entries[0] == {"AutoDetect": "off"}
    gpus = entries[1:]
    assert len(gpus) == 8
    hosts = expand(gpus[0]["NodeName"])
    assert hosts == [f"{cluster.split('-')[0]}{i:02}" for i in range(16)]
    for index, entry in enumerate(gpus):
        assert set(entry) <= GRES_KEYS
        assert entry["Name"] == "gpu" and entry["File"] == f"/dev/nvidia{index}"
        assert CORE_LIST.match(entry["Cores"]), entry["Cores"]
        links = [int(x) for x in entry["Links"].split(",")]
        assert len(links) == 8 and links[index] == -1 and links.count(-1) == 1
    matrix = [[int(x) for x in e["Links"].split(",")] for e in gpus]
    assert all(matrix[a][b] == matrix[b][a] for a in range(8) for b in range(8))


def test_gres_cores_and_links_come_from_numa_and_nvlink():
    gpus = slurm_lines(GENERATED / "zionex-16" / "slurm" / "gres.conf")[1:]
    assert [e["Cores"] for e in gpus] == ["0-27", "0-27", "28-55", "28-55", "56-83", "56-83", "84-111", "84-111"]
    assert gpus[0]["Links"] == "-1,2,2,2,0,2,2,2"  # 2 links to 6 peers, none to gpu4
    zion = slurm_lines(GENERATED / "zion-16" / "slurm" / "gres.conf")[1:]
    assert zion[0]["Links"] == "-1,1,1,2,2,0,0,0"  # the DGX-1V hybrid cube mesh


@pytest.mark.parametrize("cluster", ["zionex-16", "zion-16"])
def test_topology_conf_follows_slurm_tree_syntax(cluster):
    entries = slurm_lines(GENERATED / cluster / "slurm" / "topology.conf")
    names = [e["SwitchName"] for e in entries]
    assert len(names) == len(set(names))
    placed: list[str] = []
    for entry in entries:
        assert set(entry) <= TOPOLOGY_KEYS and ("Nodes" in entry) != ("Switches" in entry)
        if "Nodes" in entry:
            placed.extend(expand(entry["Nodes"]))
        else:
            assert set(expand(entry["Switches"])) <= set(names)
    assert sorted(placed) == sorted(line.split()[0] for line in (GENERATED / cluster / "hostfile").read_text().splitlines()
                                    if not line.startswith("#"))


def test_rail_optimized_clos_topology_conf_has_pods_under_one_spine(tmp_path):
    checked = _synthetic(tmp_path, nodes=100, topology="rail-optimized")
    plan = generate.plan_for(checked.topology)
    text = plan["synthetic/slurm/topology.conf"]
    lines = [line for line in text.splitlines() if line.startswith("SwitchName")]
    assert lines[0] == "SwitchName=pod0 Nodes=zx[000-031]"
    assert lines[3] == "SwitchName=pod3 Nodes=zx[096-099]"
    assert lines[-1] == "SwitchName=spine Switches=pod[0-3]"


def _synthetic(tmp_path: Path, nodes: int, topology: str) -> pipeline.Checked:
    node = (ROOT / "platforms" / "zionex.yaml").read_text().replace("rail_optimized: false", "rail_optimized: true")
    (tmp_path / "zionex.yaml").write_text(node)
    (tmp_path / "synthetic.yaml").write_text(f"""hwspec: 1
kind: cluster
name: synthetic
nodes:
  - {{platform: zionex.yaml, count: {nodes}, hostname: "zx${{i:03}}"}}
backend:
  transport: rocev2
  speed: 200 Gb/s
  topology: {topology}
  leaf: {{ports: 64, uplinks: 32}}
  spine: {{ports: 1024}}
""")
    checked = pipeline.check(tmp_path / "synthetic.yaml")
    assert not checked.failed(), [d.format() for d in checked.diagnostics]
    return checked


def test_node_files_are_generated_once_per_node_platform_in_the_clusters_context():
    cluster = GENERATED / "zionex-16"
    node_dirs = sorted(p.name for p in (cluster / "nodes").iterdir())
    assert node_dirs == ["zionex"]
    conf = (cluster / "nodes" / "zionex" / "nccl.conf").read_text()
    assert "NCCL_TOPO_FILE=/etc/hwspec/zionex-16/nodes/zionex/nccl-topo.xml\n" in conf
    assert (cluster / "nodes" / "zionex" / "nccl-topo.xml").read_text().split("\n", 1)[1] == \
        (GENERATED / "zionex" / "nccl-topo.xml").read_text().split("\n", 1)[1]


def test_cluster_nccl_conf_takes_cross_nic_from_the_rail_layout(tmp_path):
    rails = generate.plan_for(*_topology_only(_synthetic(tmp_path, nodes=64, topology="rail-optimized")))
    assert "NCCL_CROSS_NIC=0\n" in rails["synthetic/nccl.conf"]
    assert "NCCL_CROSS_NIC=0\n" in rails["synthetic/nodes/zionex/nccl.conf"]
    star = (GENERATED / "zionex-16" / "nccl.conf").read_text()
    assert "NCCL_CROSS_NIC=1\n" in star


def _topology_only(checked: pipeline.Checked):
    return (checked.topology,)


def test_cluster_env_parses_the_same_in_bash_and_as_an_env_file():
    path = GENERATED / "zionex-16" / "cluster.env"
    plain = dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))
    out = subprocess.run(["bash", "-c", f"env -i bash -c 'set -a; . {path}; env'"], capture_output=True, text=True, check=True)
    from_bash = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert {k: from_bash[k] for k in plain} == plain
    assert plain["PET_NNODES"] == "16" and plain["PET_NPROC_PER_NODE"] == "8" and plain["PET_RDZV_BACKEND"] == "c10d"


@pytest.mark.parametrize("script, shell", [("node-launch.sh", "sh"), ("train.sbatch", "bash")])
def test_launch_scripts_parse(script, shell):
    subprocess.run([shell, "-n", str(GENERATED / "zionex-16" / script)], check=True)


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_sbatch_runs_torchrun_through_node_launch_and_bind_on_every_node(tmp_path):
    """Installs the generated cluster files into a directory, fakes srun/scontrol/hostname/
    torchrun, and checks the chain sbatch -> srun -> node-launch.sh -> torchrun -> bind.sh."""
    install = tmp_path / "etc" / "zionex-16"
    shutil.copytree(GENERATED / "zionex-16", install)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    _fake(bin_dir, "scontrol", 'printf "zionex03\\nzionex04\\n"\n')
    _fake(bin_dir, "srun", f'echo "srun $*" >> {log}\nshift 2\nexec "$@"\n')
    _fake(bin_dir, "hostname", 'echo zionex03\n')
    _fake(bin_dir, "torchrun", f'echo "torchrun $* NNODES=$PET_NNODES NPROC=$PET_NPROC_PER_NODE '
                               f'RDZV=$PET_RDZV_ENDPOINT CROSS=$NCCL_CROSS_NIC HCA=$NCCL_IB_HCA" >> {log}\n')
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HWSPEC_DIR": str(install), "SLURM_JOB_NODELIST": "zionex[03-04]",
           "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_ID": "42"}
    subprocess.run(["bash", str(install / "train.sbatch"), "python3", "train.py"], env=env, check=True)
    srun, torchrun = log.read_text().splitlines()
    assert srun == f"srun --ntasks-per-node=1 --kill-on-bad-exit=1 {install}/node-launch.sh python3 train.py"
    assert torchrun == (f"torchrun --no-python {install}/nodes/zionex/bind.sh python3 train.py NNODES=2 NPROC=8 "
                        f"RDZV=10.16.0.4:29500 CROSS=1 HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1")


def test_node_launch_refuses_a_host_that_is_not_in_the_cluster(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(bin_dir, "hostname", "echo stranger\n")
    result = subprocess.run(["sh", str(GENERATED / "zionex-16" / "node-launch.sh"), "true"], capture_output=True, text=True,
                            env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HWSPEC_DIR": str(GENERATED / "zionex-16")})
    assert result.returncode == 2
    assert result.stderr == (f"node-launch.sh: host 'stranger' is not in {GENERATED / 'zionex-16'}/hosts.tsv "
                             "(set HWSPEC_NODE to this node's name there)\n")


def test_cluster_roofline_aggregates_and_hierarchical_bounds():
    doc = json.loads((GENERATED / "zionex-16" / "roofline.json").read_text())
    aggregate, network, collectives = doc["aggregate"], doc["network"], doc["collectives"]
    assert (aggregate["nodes"], aggregate["gpus"]) == (16, 128)
    assert aggregate["compute"]["bf16"]["dense_flop_per_s"] == pytest.approx(128 * 312e12)
    assert aggregate["hbm_capacity_bytes"] == 128 * 40 * 2**30
    assert aggregate["ddr_capacity_bytes"] == 16 * 1536 * 2**30
    assert network["per_gpu_injection_bytes_per_s"] == 25e9 and network["bisection_bytes_per_s"] == 64 * 25e9
    # AllReduce: intra reduce-scatter, inter all-reduce of S/8, intra all-gather, pipelined: the slower phase
    per_byte = max(2 * 7 / (8 * 300e9), 2 * 15 / (16 * 8 * 25e9))
    assert collectives["all_reduce"]["algbw_bytes_per_s"] == pytest.approx(1 / per_byte)
    assert collectives["all_reduce"]["busbw_bytes_per_s"] == pytest.approx(2 * 127 / 128 / per_byte)
    # AlltoAll: 120 of every 127 bytes a GPU sends leave its node, through its 25 GB/s NIC
    assert collectives["all_to_all"]["algbw_bytes_per_s"] == pytest.approx(128 * 25e9 / 120)
    assert collectives["all_to_all"]["inter_node_share"] == pytest.approx(120 / 127)


def test_zion_cluster_is_bound_by_its_shared_tcp_nics():
    zion = json.loads((GENERATED / "zion-16" / "roofline.json").read_text())
    zionex = json.loads((GENERATED / "zionex-16" / "roofline.json").read_text())
    assert zion["network"]["per_gpu_injection_bytes_per_s"] == 4 * 12.5e9 / 8
    assert zionex["collectives"]["all_to_all"]["algbw_bytes_per_s"] / zion["collectives"]["all_to_all"]["algbw_bytes_per_s"] \
        == pytest.approx(4)


def test_cluster_torchrec_kwargs_carry_world_and_local_world_size():
    view = json.loads((GENERATED / "zionex-16" / "torchrec-topology.json").read_text())
    kwargs = view["topology_kwargs"]
    assert (kwargs["world_size"], kwargs["local_world_size"]) == (128, 8)
    assert kwargs["inter_host_bw"] == 25e9 / 1000 and kwargs["hbm_cap"] == 40 * 2**30


def test_large_clusters_are_summarised_in_the_diagram(tmp_path):
    checked = _synthetic(tmp_path, nodes=100, topology="clos")
    dot = generate.plan_for(checked.topology)["synthetic/cluster.dot"]
    assert "zx000" not in dot.replace("zx[000-099]", "")
    assert '"group0" [shape=box3d' in dot and "spines [" in dot
    assert "label=" not in "".join(line for line in dot.splitlines() if " -- " in line)  # what edges carry: the table
    assert '<td align="left">leaf to spines</td>' in dot


def test_a_small_clusters_hosts_are_one_box_per_leaf_group_and_its_edges_carry_no_labels():
    small = (GENERATED / "zionex-16" / "cluster.dot").read_text()  # 16 nodes on one switch
    assert '"hosts0" [shape=box, style=filled, fillcolor="#dbe9f6", label="zionex[00-15]\\n16 x zionex, 8 GPUs each"];' in small
    assert [line.strip() for line in small.splitlines() if " -- " in line and "invis" not in line] == ['"hosts0" -- "switch0" [class="fabric"];']
    assert '<tr><td align="left">host to leaf</td><td align="left">8 x 200 Gb/s</td></tr>' in small


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed (CI installs it)")
def test_cluster_diagram_renders():
    result = subprocess.run(["dot", "-Tsvg", str(GENERATED / "zionex-16" / "cluster.dot")], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr == "" and result.stdout.startswith("<?xml")


def test_output_does_not_grow_per_node_except_per_node_files(tmp_path):
    sizes = {}
    for nodes in (64, 512):
        work = tmp_path / str(nodes)
        work.mkdir()
        checked = _synthetic(work, nodes=nodes, topology="rail-optimized")
        plan = generate.plan_for(checked.topology)
        sizes[nodes] = {path.split("/", 1)[1]: len(text) for path, text in plan.items()}
    # acceptance/plan.tsv grows per leaf group, as topology.conf does: its second leaf-pair round's
    # hostlists leave out each group's first and last node
    per_node = {"hostfile", "hosts.tsv", "slurm/topology.conf", "slurm/topology.yaml", "kubernetes/label-nodes.sh",
                "acceptance/plan.tsv"}
    for path, size in sizes[512].items():
        if path in per_node:
            assert size > sizes[64][path]
        else:
            assert size <= sizes[64][path] + 64, path  # only digits of counts may grow, nothing per node


def test_label_nodes_calls_kubectl_once_per_hundred_nodes_of_a_run():
    from hwspec.generate.domains import label_lines

    names = [f"h{k:03}" for k in range(250)]
    lines = label_lines(names, [(range(0, 230), {"a/b": "x"}), (range(230, 250), {"a/b": "y"})])
    assert [line.split()[1] for line in lines] == ["h000", "h100", "h200", "h230"]
    assert [len(line.split()) - 2 for line in lines] == [100, 100, 30, 20]
    assert lines[2] == "label " + " ".join(names[200:230]) + " a/b=x"
    assert parse_label_script("\n".join(lines)) == [(name, {"a/b": "x" if k < 230 else "y"}) for k, name in enumerate(names)]


@pytest.mark.slow  # runs the scale benchmark
def test_scale_benchmark_runs_at_small_sizes():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--sizes", "16", "256"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr + out.stdout
    report = json.loads(out.stdout)
    assert [r["nodes"] for r in report["results"]] == [16, 256]
    assert all(r["seconds_total"] > 0 and r["peak_rss_mib"] > 0 for r in report["results"])


def test_roofline_command_prints_the_cluster_table(capsys, monkeypatch):
    from hwspec.cli.commands import main

    monkeypatch.chdir(ROOT)
    assert main(["roofline", "platforms/zionex-16.yaml"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "zionex-16: 16x ZionEX (128 A100) on a dedicated 200 Gb/s RoCE backend"
    assert "  bf16                39.94          79.87" in out
    assert "  all_reduce       1.984  211.7 GB/s  106.7 GB/s  Ring" in out
    assert main(["roofline", "platforms/zionex-16.yaml", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["aggregate"]["gpus"] == 128


def test_slurm_leaves_cores_and_threads_to_slurmd_on_nodes_of_an_unknown_cpu_part(tmp_path):
    """A CPU part hwspec does not know has no core count: the node line leaves Sockets,
    CoresPerSocket and ThreadsPerCore out and gres.conf gives no Cores= (slurmd detects them),
    instead of failing on the unknown count."""
    fixtures = ROOT / "tests" / "fixtures" / "cluster"
    shutil.copy(fixtures / "interleaved_cpus.yaml", tmp_path)
    node = (fixtures / "interleaved_cpus_node.yaml").read_text()
    (tmp_path / "interleaved_cpus_node.yaml").write_text(node.replace("part: xeon-platinum-8380h", "part: unknown"))
    checked = pipeline.check(tmp_path / "interleaved_cpus.yaml")
    plan = generate.plan_for(checked.topology, only=["slurm"])
    nodes = [line for line in plan["interleaved_cpus/slurm/slurm.conf"].splitlines() if line.startswith("NodeName")]
    gres = [line for line in plan["interleaved_cpus/slurm/gres.conf"].splitlines() if line.startswith("NodeName")]
    assert nodes == ["NodeName=node[0-1] NodeAddr=127.0.0.[1-2] RealMemory=508559 Gres=gpu:a100-sxm4-40gb:2 State=UNKNOWN"]
    assert gres == ["NodeName=node[0-1] Name=gpu Type=a100-sxm4-40gb File=/dev/nvidia0 Links=-1,12",
                    "NodeName=node[0-1] Name=gpu Type=a100-sxm4-40gb File=/dev/nvidia1 Links=12,-1"]
