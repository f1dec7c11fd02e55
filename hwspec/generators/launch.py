"""Launcher environment for a node: `nccl.conf`, `launch.env`, `ranks.tsv`, `bind.sh`.

All four come from one per-rank plan (local rank = GPU index by bus id, which is the CUDA
ordinal under CUDA_DEVICE_ORDER=PCI_BUS_ID) and one list of NCCL settings, so they cannot
disagree. Every value is written through the `env_value`/`shell_word` filters: a value that
would need quoting is refused, never quoted, because NCCL's conf reader and docker --env-file
take values verbatim.

Install location: the topology file is expected at `<install dir>/nccl-topo.xml`, where the
install dir is `/etc/hwspec/<platform>` (or, for a node of a cluster,
`/etc/hwspec/<cluster>/nodes/<platform>`); `nccl.conf` and `launch.env` point NCCL_TOPO_FILE there.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from hwspec.generate import GenContext, Limit, Plan, generator, refuse
from hwspec.generators.nccl import net_name
from hwspec.graph import pcie_path
from hwspec.model import Gpu, Nic, Platform, Socket

MAX_IB_HCAS = 32
"""NCCL reads at most 32 entries from NCCL_IB_HCA."""

GDR_LEVELS = ("PIX", "PXB", "PHB", "SYS")
"""NCCL path types from nearest to farthest, as NCCL_NET_GDR_LEVEL takes them."""

@dataclass(frozen=True)
class Setting:
    """One `NAME=value` line and the comment that explains it."""

    name: str
    value: str
    why: str


@dataclass(frozen=True)
class Rank:
    """What one local rank uses: its GPU, its backend NIC, its NUMA node and that node's CPUs."""

    local_rank: int
    gpu: Gpu
    nic: Nic | None
    socket: Socket | None

    @property
    def nic_name(self) -> str:
        return (net_name(self.nic) or self.nic.id) if self.nic is not None else "-"

    @property
    def nic_bus(self) -> str:
        return self.nic.bus if self.nic is not None else "-"

    @property
    def numa_node(self) -> str:
        return str(self.gpu.numa_node) if self.gpu.numa_node is not None else "-"

    @property
    def cpus(self) -> str:
        return cpu_ranges(self.socket.cpus) if self.socket is not None else "-"


def cpu_ranges(cpus: tuple[int, ...]) -> str:
    """(0, 1, 2, 5, 7, 8) -> "0-2,5,7-8", the form of sysfs cpulist and numactl."""
    ordered = sorted(set(cpus))
    chunks: list[str] = []
    start = prev = None
    for cpu in ordered + [None]:
        if start is not None and (cpu is None or cpu != prev + 1):
            chunks.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = None
        if cpu is not None:
            if start is None:
                start = cpu
            prev = cpu
    return ",".join(chunks)


def ranks(platform: Platform) -> list[Rank]:
    return [Rank(g.index, g, platform.gpu2nic.get(g.id), platform.socket_by_id.get(g.socket) if g.socket else None)
            for g in platform.gpus]


def topo_file(install_dir: str) -> str:
    return f"{install_dir}/nccl-topo.xml"


def omp_threads(platform: Platform) -> int:
    """Physical cores per rank when every rank is bound to its GPU's NUMA node: the socket's
    cores shared by the GPUs on it (the smallest share on the node); without NUMA placement,
    all cores over all GPUs."""
    per_socket: dict[str, int] = {}
    for gpu in platform.gpus:
        if gpu.socket is not None:
            per_socket[gpu.socket] = per_socket.get(gpu.socket, 0) + 1
    if platform.gpus and all(g.socket is not None for g in platform.gpus):
        return max(1, min(platform.socket_by_id[s].cores // n for s, n in per_socket.items()))
    cores = sum(s.cores for s in platform.sockets)
    return max(1, cores // max(1, len(platform.gpus)))


def path_level(graph: nx.Graph, a: str, b: str) -> str:
    """NCCL's name for the PCIe distance between two devices: PIX (one bridge), PXB (several
    bridges, not the CPU), PHB (through the CPU), SYS (across sockets)."""
    path = pcie_path(graph, a, b)
    if path is None:
        return "SYS"
    between = [graph.nodes[n]["kind"] for n in path[1:-1]]
    if "socket" in between:
        return "PHB"
    return "PIX" if len(between) <= 1 else "PXB"


def gdr_level(platform: Platform, graph: nx.Graph) -> str | None:
    """NCCL_NET_GDR_LEVEL: the farthest GPU-to-own-NIC distance on the node (each GPU's paired
    backend NIC, or its nearest GPUDirect NIC), capped at PHB; None without GPUDirect NICs."""
    capable = [n for n in platform.backend_nics if n.transport != "tcp" and n.rdma and n.gpudirect]
    if not capable or not platform.gpus:
        return None
    worst = 0
    for gpu in platform.gpus:
        paired = platform.gpu2nic.get(gpu.id)
        candidates = [paired] if paired is not None and paired in capable else capable
        best = min(GDR_LEVELS.index(path_level(graph, gpu.id, nic.id)) for nic in candidates)
        worst = max(worst, best)
    return GDR_LEVELS[min(worst, GDR_LEVELS.index("PHB"))]


def settings_limits(platform: Platform) -> list[Limit]:
    """What keeps the NCCL settings (nccl.conf, launch.env) from being written: an RDMA backend
    NIC without a device name (NCCL_IB_HCA names each), more than NCCL_IB_HCA can hold."""
    backend = platform.backend
    if not platform.gpus or backend is None or backend.transport == "tcp":
        return []
    hcas = [n for n in platform.backend_nics if n.transport != "tcp"]
    limits = [Limit(f"backend NIC {n.id} has no RDMA device name, so NCCL_IB_HCA cannot name it", (n.id,),
                    "add its device name, e.g. device: mlx5_0", reported_by="HW206") for n in hcas if not n.device]
    if len(hcas) > MAX_IB_HCAS:
        limits.append(Limit(f"{len(hcas)} backend NICs; NCCL_IB_HCA takes at most {MAX_IB_HCAS}", (hcas[MAX_IB_HCAS].id,),
                            f"keep at most {MAX_IB_HCAS} NICs in the backend role"))
    return limits


def bind_limits(platform: Platform) -> list[Limit]:
    """What keeps bind.sh from being written: a GPU with no NUMA node to bind its rank to
    (reported during validate by HW101: the GPU is outside every socket's PCIe tree)."""
    return [Limit(f"{g.id} has no NUMA node for bind.sh to bind its rank to (it reaches no CPU socket)",
                  (g.id, "pcie", "upstream"), "attach it under a socket's PCIe tree", reported_by="HW101")
            for g in platform.gpus if g.numa_node is None]


def nccl_settings(platform: Platform, graph: nx.Graph, install_dir: str, rail_optimized: bool | None = None) -> list[Setting]:
    """The NCCL_* settings of the node, in the order they are written. `rail_optimized`
    (the cluster's rail layout) overrides the platform's own declaration when given."""
    backend = platform.backend
    settings: list[Setting] = []
    rdma = backend is not None and backend.transport != "tcp"
    tcp = backend is not None and backend.transport == "tcp"
    if rdma:
        refuse(platform, "nccl.conf", settings_limits(platform))
        hcas = [n for n in platform.backend_nics if n.transport != "tcp"]
        if hcas:
            settings.append(Setting("NCCL_IB_HCA", "=" + ",".join(f"{n.device}:{n.port}" for n in hcas),
                                    "the backend RDMA NICs, by exact name ('=') and port; nothing else carries collectives"))
    if tcp:
        socket_nics = [n for n in platform.collective_nics if n.interface]
        why = "TCP backend: collectives and bootstrap run over these interfaces"
    else:
        socket_nics = [n for n in platform.host_nics if n.interface]
        why = "bootstrap and socket traffic on the ingestion/frontend interfaces, by exact name"
    if socket_nics:
        settings.append(Setting("NCCL_SOCKET_IFNAME", "=" + ",".join(n.interface for n in socket_nics), why))
    if tcp:
        settings.append(Setting("NCCL_IB_DISABLE", "1", "TCP backend: no IB/RoCE verbs"))
    if rdma:
        for name, value, why in (("NCCL_IB_GID_INDEX", backend.gid_index, "RoCE GID index of the backend network"),
                                 ("NCCL_IB_TC", backend.traffic_class, "traffic class of the backend network"),
                                 ("NCCL_IB_SL", backend.service_level, "service level of the backend network")):
            if value is not None:
                settings.append(Setting(name, str(value), why))
        level = gdr_level(platform, graph) if backend.gpudirect else None
        if level is not None:
            settings.append(Setting("NCCL_NET_GDR_LEVEL", level,
                                    "GPUDirect RDMA up to this PCIe distance between a GPU and its NIC"))
    if backend is not None:
        rails = backend.rail_optimized if rail_optimized is None else rail_optimized
        settings.append(Setting("NCCL_CROSS_NIC", "0" if rails else "1",
                                "rail-optimized fabric: keep each ring/tree on the same NIC index"
                                if rails else "no rail-optimized fabric: rings may cross NICs"))
    settings.append(Setting("NCCL_TOPO_FILE", topo_file(install_dir),
                            f"this platform's nccl-topo.xml, installed under {install_dir}/"))
    return settings


def _graph(ctx: GenContext) -> nx.Graph:
    if ctx.graph is not None:
        return ctx.graph
    from hwspec.graph import build_graph

    return build_graph(ctx.platform)


def _settings(ctx: GenContext) -> list[Setting]:
    return nccl_settings(ctx.platform, _graph(ctx), ctx.install_dir, ctx.rail_optimized)


@generator("nccl-conf")
def nccl_conf(ctx: GenContext) -> Plan:
    """/etc/nccl.conf: NAME=value lines, read by NCCL after the process environment."""
    platform: Platform = ctx.platform
    if not platform.gpus:
        return {}
    return {"nccl.conf": ctx.render("nccl.conf.j2", "hash", settings=_settings(ctx), topo_file=topo_file(ctx.install_dir))}


@generator("launch-env")
def launch_env(ctx: GenContext) -> Plan:
    """Environment for torchrun (PET_*), CUDA and NCCL, for `set -a; . ./launch.env` and
    `docker run --env-file`."""
    platform: Platform = ctx.platform
    if not platform.gpus:
        return {}
    launcher = [Setting("PET_NPROC_PER_NODE", str(len(platform.gpus)), "torchrun --nproc-per-node: one rank per GPU"),
                Setting("CUDA_DEVICE_ORDER", "PCI_BUS_ID", "CUDA ordinals follow bus ids, as local ranks do"),
                Setting("OMP_NUM_THREADS", str(omp_threads(platform)), "physical cores per rank on its NUMA node")]
    return {"launch.env": ctx.render("launch.env.j2", "hash", launcher=launcher, settings=_settings(ctx))}


@generator("ranks")
def ranks_table(ctx: GenContext) -> Plan:
    """ranks.tsv: local rank -> GPU, backend NIC, NUMA node and CPUs."""
    platform: Platform = ctx.platform
    if not platform.gpus:
        return {}
    return {"ranks.tsv": ctx.render("ranks.tsv.j2", "hash", ranks=ranks(platform))}


@generator("bind")
def bind_script(ctx: GenContext) -> Plan:
    """bind.sh: runs a rank's command under numactl on its GPU's NUMA node."""
    platform: Platform = ctx.platform
    if not platform.gpus:
        return {}
    refuse(platform, "bind.sh", bind_limits(platform))
    # rendered without the automatic header: the shebang must stay on the first line
    return {"bind.sh": ctx.render("bind.sh.j2", None, header=ctx.header("hash"), ranks=ranks(platform))}
