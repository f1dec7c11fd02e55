"""Property tests of what hwspec generates from a node platform: the plan is deterministic and
blind to the order of list entries whose order means nothing; the NCCL topology holds every GPU
and backend NIC once with symmetric NVLink counts; env files read the same in bash as line by
line; roofline numbers are consistent and monotone in the hardware.

Most properties bound nodes to 8 GPUs (what these files are for in practice, and cheaper); the
NCCL topology property runs over the full range, where nodes beyond NCCL's 256 elements get the
smaller forms of the file.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

import yaml
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from hwspec.formats.nccl_topology import NVSWITCH_SENTINEL, check_nccl_xml, check_rccl_xml
from hwspec.formats.nccl_tree import collective_library, net_name
from hwspec.generate.engine import plan_for
from hwspec.perf import roofline as rf
from hwspec.perf.torchrec import torchrec_topology
from hwspec.testing import check_node_text, dump_yaml, load_node_text, node_platforms, node_specs
from hwspec.topology import topology_of

EXAMPLES = settings.default.max_examples
SMALL = {"max_gpus": 8, "max_sockets": 4}


def plan_of(spec: dict, only: tuple[str, ...] = ()) -> dict[str, str]:
    platform = load_node_text(dump_yaml(spec))
    return plan_for(topology_of(platform), only=only)


def only(platform, *generators: str) -> dict[str, str]:
    """The files of some generators, by file name."""
    plan = plan_for(topology_of(platform), only=generators)
    return {key.split("/", 1)[1]: text for key, text in plan.items()}


# ------------------------------------------------------------------ determinism


def _flip(pair: list, flip: bool) -> list:
    return list(reversed(pair)) if flip else list(pair)


def _reorder(items: list, data: st.DataObject, label: str) -> list:
    """`items` reversed and/or rotated: enough to expose any dependence on order, and a failure
    shrinks in a couple of steps (arbitrary permutations take minutes to shrink here)."""
    if len(items) < 2:
        return list(items)
    items = _flip(items, data.draw(st.booleans(), label=f"reverse {label}"))
    turn = data.draw(st.integers(0, len(items) - 1), label=f"rotate {label}")
    return items[turn:] + items[:turn]


def reordered(spec: dict, data: st.DataObject) -> dict:
    """`spec` with every list whose order means nothing reordered: sockets, bridges, GPUs, NICs,
    SSDs, explicit NVLink pairs (and the two GPUs of each), excluded slot pairs, wired ports."""
    spec = copy.deepcopy(spec)
    for section in ("sockets", "pcie", "gpus", "nics", "ssds"):
        if section in spec:
            spec[section] = _reorder(spec[section], data, section)
    nvlink = spec.get("nvlink") or {}
    if isinstance(nvlink.get("topology"), list):
        pairs = _reorder(nvlink["topology"], data, "nvlink pairs")
        nvlink["topology"] = [{**p, "gpus": _flip(p["gpus"], data.draw(st.booleans()))} for p in pairs]
    if "exclude" in nvlink:
        nvlink["exclude"] = [_flip(p, data.draw(st.booleans())) for p in _reorder(nvlink["exclude"], data, "exclude")]
    board = spec.get("baseboard") or {}
    if isinstance(board.get("wiring"), list):
        board["wiring"] = [_flip(p, data.draw(st.booleans())) for p in _reorder(board["wiring"], data, "wiring")]
    return spec


@settings(max_examples=max(5, EXAMPLES // 2))
@given(spec=node_specs(**SMALL), data=st.data())
def test_plan_is_deterministic_and_blind_to_list_order(spec, data):
    plan = plan_of(spec)
    assert plan_of(spec) == plan
    shuffled = reordered(spec, data)
    note(dump_yaml(shuffled))
    again = plan_of(shuffled)
    assert sorted(again) == sorted(plan)
    for path in plan:
        assert again[path] == plan[path], f"{path} depends on the order of list entries"


# ------------------------------------------------------------------ NCCL topology


NO_NVLINKS = "NVLinks left out to stay within NCCL's 256 elements"
SKELETON = "a skeleton to stay within NCCL's 256 elements"


@settings(max_examples=EXAMPLES)
@given(node_platforms())
def test_nccl_topology_holds_every_gpu_and_backend_nic_once(platform):
    check_nccl_topology(platform)


@settings(max_examples=max(5, EXAMPLES // 2))
@given(node_platforms(gpu_parts=["mi300x-oam-192gb"], max_gpus=8, max_sockets=4))
def test_rccl_topology_of_amd_nodes_holds_every_gpu_and_its_xgmi_links(platform):
    """Any drawn MI300X node: RCCL's file (never NCCL's), each GPU once, xGMI counts symmetric
    and adding up to each GPU's links."""
    assert collective_library(platform) == "rccl"
    assert "nccl-topo.xml" not in only(platform, "nccl-topo")
    check_nccl_topology(platform)


@settings(max_examples=max(5, EXAMPLES // 2))
@given(node_platforms(min_gpus=12, max_gpus=13, nvlink=["fully-connected"], nic_modes=["per-gpu"]))
def test_nccl_topology_of_nodes_at_nccls_element_limit(platform):
    """12-13 fully connected GPUs with their NICs: at NCCL's 256 elements, both sides of it."""
    check_nccl_topology(platform)


def check_nccl_topology(platform) -> None:
    """In every form: each GPU and NIC by bus id; unless a skeleton, each GPU once with ranks
    0..n-1 and each backend NIC once; in the complete form, symmetric NVLink counts that add up
    to each GPU's links."""
    library = collective_library(platform)  # AMD GPUs: RCCL's file, <xgmi> links
    text = only(platform, f"{library}-topo")[f"{library}-topo.xml"]
    assert (check_rccl_xml if library == "rccl" else check_nccl_xml)(text) == []
    root = ElementTree.fromstring(text)
    form = "skeleton" if SKELETON in text else "without NVLinks" if NO_NVLINKS in text else "complete"
    event(f"{library}-topo.xml {form}")
    busids = Counter(pci.get("busid") for pci in root.iter("pci"))
    assert all(busids[d.bus] == 1 for d in (*platform.gpus, *platform.nics)), busids
    if form == "skeleton":
        assert root.findall(".//gpu") == [] and root.findall(".//net") == []
        return

    gpus: dict[str, ElementTree.Element] = {}
    for pci in root.iter("pci"):
        for gpu in pci.findall("gpu"):
            assert pci.get("busid") not in gpus
            gpus[pci.get("busid")] = gpu
    assert sorted(gpus) == sorted(g.bus for g in platform.gpus)
    n = len(platform.gpus)
    assert sorted(int(g.get("rank")) for g in gpus.values()) == list(range(n))
    for gpu in platform.gpus:
        assert gpus[gpu.bus].get("rank") == gpus[gpu.bus].get("dev") == str(gpu.index)

    links = {bus: Counter() for bus in gpus}
    for bus, gpu in gpus.items():
        for nvlink in gpu.findall("xgmi" if library == "rccl" else "nvlink"):
            links[bus][nvlink.get("target")] += int(nvlink.get("count"))
    for a, peers in links.items():
        for b, count in peers.items():
            assert b in gpus or b == NVSWITCH_SENTINEL, f"{a} links to {b}, which is no GPU"
            if b in gpus:
                assert links[b][a] == count, f"{a} -> {b}: {count} links, {b} -> {a}: {links[b][a]}"
    for gpu in platform.gpus:
        assert sum(links[gpu.bus].values()) == (0 if form == "without NVLinks" else topology_of(platform).nvlink_links(gpu.id))

    nets = list(root.iter("net"))
    assert sorted(int(net.get("dev")) for net in nets) == list(range(len(nets)))
    names = Counter(net.get("name") for net in nets)
    for nic in platform.backend_nics:
        assert names[net_name(nic)] == 1, f"{nic.id} ({net_name(nic)}) appears {names[net_name(nic)]} times"


TOO_BIG_FOR_NCCL = """\
# 13 A100 fully connected (1 link per pair, 12 of 12 links), one NIC per GPU, each GPU on its own
# switch and root port, three ingestion NICs: every rule passes, but the NCCL topology would have
# 258 elements and NCCL 2.21+ reads at most 256, so nccl-topo leaves the NVLinks to NCCL.
hwspec: 1
kind: node
name: thirteen
sockets:
  - {id: cpu0, part: xeon-platinum-8380h, numa_node: 0, memory: {capacity: 256 GiB, bandwidth: 80 GB/s}}
pcie:
  - repeat: {i: 0..12}
    id: rp${i}
    kind: root-port
    upstream: cpu0
    bus: "0000:${i*8+0x10:02x}:00.0"
    link: {gen: 4, width: 16}
  - repeat: {i: 0..12}
    id: sw${i}
    upstream: rp${i}
    bus: "0000:${i*8+0x11:02x}:00.0"
    link: {gen: 4, width: 16}
baseboard: {slots: 13, ports_per_slot: 12, wiring: fully-connected}
gpus:
  - repeat: {i: 0..12}
    id: gpu${i}
    part: a100-sxm4-40gb
    slot: ${i}
    pcie: {upstream: "sw${i}", bus: "0000:${i*8+0x12:02x}:00.0"}
nvlink: {topology: fully-connected}
nics:
  - repeat: {i: 0..12}
    id: nic${i}
    part: connectx-6-200g
    role: backend
    transport: rocev2
    gpu: gpu${i}
    device: mlx5_${i}
    interface: eth${i}
    pcie: {upstream: "sw${i}", bus: "0000:${i*8+0x13:02x}:00.0"}
  - repeat: {i: 0..2}
    id: fe${i}
    part: ethernet-100g
    role: ingestion
    transport: tcp
    interface: ens${i}
    pcie: {upstream: cpu0, bus: "0000:${i+0xa0:02x}:00.0"}
backend: {transport: rocev2, nic_per_gpu: true, gpudirect: true}
"""


def test_a_node_beyond_nccls_element_limit_gets_its_topology_without_nvlinks():
    """Found by the generator properties over 9-16 GPUs: the complete file would exceed NCCL's
    256 elements. The generator then leaves the NVLinks to NCCL's NVML detection."""
    assert check_node_text(TOO_BIG_FOR_NCCL, file="thirteen.yaml") == []
    platform = load_node_text(TOO_BIG_FOR_NCCL, "thirteen.yaml")
    text = plan_for(topology_of(platform), only=["nccl-topo"])[f"{platform.name}/nccl-topo.xml"]
    assert check_nccl_xml(text) == []
    assert "<nvlink" not in text and "NVLinks left out to stay within NCCL's 256 elements" in text
    root = ElementTree.fromstring(text)
    assert len(root.findall(".//gpu")) == 13 and len(root.findall(".//net")) == 16


def test_a_node_too_large_even_without_nvlinks_gets_a_skeleton():
    spec = yaml.safe_load(TOO_BIG_FOR_NCCL)
    for nic in spec["nics"]:
        if nic["id"].startswith("fe"):
            nic["repeat"] = {"i": "0..59"}
            nic["interface"] = "ens${i}"
            nic["pcie"] = {"upstream": "cpu0", "bus": "0000:${i+0xa0:02x}:00.0"}
    text_spec = yaml.safe_dump(spec, sort_keys=False)
    platform = load_node_text(text_spec, "big.yaml")
    text = plan_for(topology_of(platform), only=["nccl-topo"])[f"{platform.name}/nccl-topo.xml"]
    assert check_nccl_xml(text) == []
    assert "a skeleton to stay within NCCL's 256 elements" in text
    root = ElementTree.fromstring(text)
    assert root.findall(".//gpu") == [] and root.findall(".//net") == []
    busids = {pci.get("busid") for pci in root.iter("pci")}
    assert {g.bus for g in platform.gpus} | {n.bus for n in platform.nics} <= busids


# ------------------------------------------------------------------ env files


def plain_parse(text: str) -> dict[str, str]:
    """KEY=value lines split at the first '=' (NCCL's conf reader, docker --env-file)."""
    return dict(line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))


def bash_parse(path: Path, keys) -> dict[str, str]:
    """What `set -a; . file` exports, for `keys`; bash must not complain."""
    script = 'set -a; . "$1" || exit 9; set +a; env -0'
    result = subprocess.run(["env", "-i", BASH, "--noprofile", "--norc", "-c", script, "bash", str(path)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    env = dict(item.split("=", 1) for item in result.stdout.split("\0") if "=" in item)
    return {key: env[key] for key in keys if key in env}


BASH = shutil.which("bash") or "/bin/bash"


@settings(max_examples=EXAMPLES)
@given(node_platforms(**SMALL))
def test_env_files_read_the_same_in_bash_and_line_by_line(platform):
    files = only(platform, "nccl-conf", "launch-env")
    conf_name = f"{collective_library(platform)}.conf"  # rccl.conf for AMD GPUs
    assert conf_name in files and "launch.env" in files
    with tempfile.TemporaryDirectory() as directory:
        for name in (conf_name, "launch.env"):
            plain = plain_parse(files[name])
            assert plain and all(key.isidentifier() and key.isupper() for key in plain), plain
            path = Path(directory) / name
            path.write_text(files[name], encoding="utf-8")
            assert bash_parse(path, plain) == plain
    conf, env = plain_parse(files[conf_name]), plain_parse(files["launch.env"])
    assert {k: v for k, v in env.items() if k.startswith("NCCL_")} == conf
    assert env["PET_NPROC_PER_NODE"] == str(len(platform.gpus))


# ------------------------------------------------------------------ roofline


@settings(max_examples=EXAMPLES * 2)
@given(node_platforms())
def test_roofline_ridge_points_are_peak_over_bandwidth(platform):
    doc = rf.roofline(topology_of(platform))
    json.dumps(doc, allow_nan=False)  # finite numbers only
    for group in doc["gpu_groups"]:
        # a ridge for exactly the tiers with a bandwidth (a zero one has none)
        bandwidths = {name: tier["bandwidth_bytes_per_s"] for name, tier in group["tiers"].items()
                      if tier and tier["bandwidth_bytes_per_s"] > 0}
        for dtype, compute in group["compute"].items():
            for kind in ("dense", "sparse"):
                if f"{kind}_flop_per_s" not in compute:
                    continue
                peak, ridges = compute[f"{kind}_flop_per_s"], compute[f"{kind}_ridge_flop_per_byte"]
                assert set(ridges) == set(bandwidths), dtype
                for tier, ridge in ridges.items():
                    assert math.isclose(ridge, peak / bandwidths[tier], rel_tol=1e-12), (dtype, kind, tier)
            if "sparse_flop_per_s" in compute:
                assert compute["sparse_flop_per_s"] == 2 * compute["dense_flop_per_s"]
    bounds = doc["intra_node_collectives"]
    if len(platform.gpus) < 2:
        assert bounds is None
    else:
        for name in rf.COLLECTIVES:
            entry = bounds[name]
            assert math.isclose(entry["algbw_bytes_per_s"] * entry["busbw_factor"], entry["busbw_bytes_per_s"])
            if entry["algorithm"] != "NVLS":  # in-switch reduction beats the link bound; the others are the link bound
                assert math.isclose(entry["busbw_bytes_per_s"], bounds["busbw_bound_bytes_per_s"])


def bounds(spec: dict) -> dict[str, float]:
    """The figures a faster NIC or more NVLinks may only raise, for one node spec."""
    platform = load_node_text(dump_yaml(spec))
    doc = rf.roofline(topology_of(platform))
    collectives = doc["intra_node_collectives"] or {}
    figures = {"busbw": collectives.get("busbw_bound_bytes_per_s", 0.0)}
    for tier in ("nvlink", "backend_nic"):
        values = [(group["tiers"][tier] or {}).get("bandwidth_bytes_per_s", 0.0) for group in doc["gpu_groups"]]
        figures[tier] = min(values)
    kwargs = (torchrec_topology(topology_of(platform), doc) or {}).get("topology_kwargs", {})
    figures["intra_host_bw"] = kwargs.get("intra_host_bw", 0.0)
    figures["inter_host_bw"] = kwargs.get("inter_host_bw", 0.0)
    return figures


def at_least(better: dict[str, float], worse: dict[str, float]) -> None:
    for key in better:
        assert better[key] >= worse[key] * (1 - 1e-12), f"{key}: {better[key]} < {worse[key]}"


@settings(max_examples=EXAMPLES)
@given(node_specs(min_gpus=2, nvlink=["fully-connected", "ring", "nvswitch", "hybrid-cube-mesh",
                                      "fully-connected-minus-matching"], **SMALL))
def test_more_nvlinks_never_lower_a_bound(spec):
    without = copy.deepcopy(spec)
    del without["nvlink"]
    with_links = bounds(spec)
    at_least(with_links, bounds(without))
    nvlink = spec["nvlink"]
    if nvlink["topology"] == "fully-connected":
        more = copy.deepcopy(spec)
        more["nvlink"]["links_per_pair"] = nvlink.get("links_per_pair", 1) + 1
        at_least(bounds(more), with_links)


def with_backend_nic(spec: dict, part: str) -> dict:
    spec = copy.deepcopy(spec)
    for nic in spec["nics"]:
        if nic["role"] == "backend":
            nic["part"] = part
            nic["transport"] = "rocev2"
            nic.setdefault("interface", f"eth{nic['id'][3:]}")
    spec["backend"]["transport"] = "rocev2"
    return spec


@settings(max_examples=EXAMPLES)
@given(node_specs(nic_modes=["per-gpu", "shared"], **SMALL))
def test_a_faster_backend_nic_never_lowers_a_bound(spec):
    at_least(bounds(with_backend_nic(spec, "connectx-6-200g")), bounds(with_backend_nic(spec, "connectx-5-100g")))


@settings(max_examples=max(5, EXAMPLES // 2))
@given(data=st.data())
def test_environment_settings_land_in_the_files_they_belong_to(data):
    """NCCL_* entries are in nccl.conf (rccl.conf for AMD GPUs) and launch.env, exactly once and
    with the written value; other entries only in launch.env; the platform stays valid."""
    from hwspec.testing import dump_yaml, load_node_text, node_specs, with_environment

    spec = data.draw(node_specs(max_gpus=4, max_sockets=2).flatmap(with_environment))
    text = dump_yaml(spec)
    note(text)
    assert check_node_text(text) == []
    platform = load_node_text(text)
    plan = plan_for(topology_of(platform), only=["nccl-conf", "launch-env"])
    conf_name = f"{collective_library(platform)}.conf"  # rccl.conf for AMD GPUs
    conf, env = plan[f"{platform.name}/{conf_name}"], plan[f"{platform.name}/launch.env"]
    for name, value in platform.environment.items():
        line = f"{name}={value}"
        assert env.splitlines().count(line) == 1
        assert conf.splitlines().count(line) == (1 if name.startswith("NCCL_") else 0)
        assert sum(l.startswith(name + "=") for l in env.splitlines()) == 1
