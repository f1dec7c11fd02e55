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

import re
from collections.abc import Iterable
from dataclasses import dataclass

from hwspec.cpulist import format_cpu_list as cpu_ranges
from hwspec.formats.environment import environment_limits
from hwspec.formats.limits import NCCL_CONF_MAX, bind_limits, settings_limits
from hwspec.formats.nccl_env import is_nccl
from hwspec.formats.nccl_tree import collective_library, missing_bus_ids, net_name
from hwspec.formats.transports import TransportFacts, facts, ib_verbs, interface_use
from hwspec.generate.engine import GenContext, GenerationError, Plan, generator, refuse
from hwspec.model.node import Backend, Gpu, Nic, NumaNode, Platform
from hwspec.topology.node import PATH_TYPES, Topology


@dataclass(frozen=True, slots=True)
class Setting:
    """One `NAME=value` line and the comment that explains it; with `value` None, only the
    comment is written (a setting deliberately left to NCCL, and why)."""

    name: str
    value: str | None
    why: str


@dataclass(frozen=True, slots=True)
class Rank:
    """What one local rank uses: its GPU, the backend NICs that serve it (by bus id; several
    on a p5-like node), its NUMA node and that node's CPUs."""

    local_rank: int
    gpu: Gpu
    nics: tuple[Nic, ...]
    socket: NumaNode | None

    @property
    def nic_name(self) -> str:
        """The NICs' names, comma-separated ('-' for none; the platform's id for a NIC it does not name)."""
        return ",".join(net_name(n) or n.id for n in self.nics) or "-"

    @property
    def nic_bus(self) -> str:
        """The NICs' bus ids, comma-separated ('-' for none; 'unknown' for a NIC whose bus id is)."""
        return ",".join(n.bus or "unknown" for n in self.nics) or "-"

    @property
    def numa_node(self) -> str:
        return str(self.gpu.numa_node) if self.gpu.numa_node is not None else "-"

    @property
    def cpus(self) -> str:
        return cpu_ranges(self.socket.cpus) if self.socket is not None else "-"


def ranks(topology: Topology) -> list[Rank]:
    p = topology.platform
    sockets = {g.id: topology.socket_of(g.id) for g in p.gpus}
    return [Rank(g.index, g, tuple(p.nic_by_id[n] for n in topology.nics_of(g.id)),
                 p.socket_by_id[socket] if (socket := sockets[g.id]) is not None else None)
            for g in p.gpus]


def topo_file(install_dir: str, library: str = "nccl") -> str:
    """Where the node's topology file is installed: nccl-topo.xml, or rccl-topo.xml for RCCL."""
    return f"{install_dir}/{library}-topo.xml"


def omp_threads(topology: Topology) -> int:
    """Physical cores per rank when every rank is bound to its GPU's NUMA node: the cores in
    the NUMA node's CPU list shared by the GPUs on it (`Topology.cores_per_rank`, the smallest
    share on the node, at least 1); without NUMA placement, all cores over all GPUs."""
    platform = topology.platform
    sockets = {g.socket for g in platform.gpus if g.socket is not None}
    if platform.gpus and all(g.socket is not None for g in platform.gpus):
        return max(1, min(topology.cores_per_rank(s) for s in sockets))
    cores = sum(topology.physical_cores(s.id) for s in platform.sockets)
    return max(1, cores // max(1, len(platform.gpus)))


def gdr_level(topology: Topology) -> str | None:
    """NCCL_NET_GDR_LEVEL: the farthest GPU-to-own-NIC distance on the node
    (`Topology.gdr_path_type`), capped at PHB; None without GPUDirect NICs. P2C (a GPU's
    NVLink-C2C to the CPU holding its NIC) is written as PHB: NCCL before 2.26 has no P2C name,
    and PHB admits P2C paths in every version that has them."""
    level = topology.gdr_path_type()
    if level is None:
        return None
    if level == "P2C":
        return "PHB"
    return PATH_TYPES[min(PATH_TYPES.index(level), PATH_TYPES.index("PHB"))]


def gdr_over_c2c(topology: Topology) -> bool:
    """A GPU reaches a backend NIC that serves it over its NVLink-C2C (NCCL's P2C path)."""
    return any(topology.path_type(gpu.id, nic) == "P2C"
               for gpu in topology.platform.gpus for nic in topology.nics_of(gpu.id))


def _ib_hca(platform: Platform, backend: Backend) -> list[Setting]:
    """NCCL_IB_HCA: the declared filter (`backend.ib_hca`); else the backend RDMA NICs by exact
    name when every one is named; else nothing, left to NCCL's own selection, and said so. An
    exact-match filter is never built from names the file does not state."""
    hcas = [n for n in platform.backend_nics if ib_verbs(n.transport)]
    if backend.ib_hca is not None:
        return [Setting("NCCL_IB_HCA", backend.ib_hca,
                        "the backend RDMA NICs, selected by the filter the platform declares (backend.ib_hca)")]
    if not hcas:
        return []
    if any(not n.device for n in hcas):
        return [Setting("NCCL_IB_HCA", None,
                        "NCCL_IB_HCA is not set: the platform names no RDMA devices, so NCCL selects the backend "
                        "NICs itself (declare backend.ib_hca to filter them)")]
    refuse(platform, "nccl.conf", settings_limits(platform))
    return [Setting("NCCL_IB_HCA", "=" + ",".join(f"{n.device}:{platform.rdma_port(n)}" for n in hcas),
                    "the backend RDMA NICs, by exact name (leading equals sign) and port; nothing else carries collectives")]


def _interfaces(nics: Iterable[Nic]) -> str:
    return ",".join(n.interface for n in nics if n.interface)


def _socket_ifname(topology: Topology, net: TransportFacts | None) -> list[Setting]:
    """NCCL_SOCKET_IFNAME, by exact name: the backend NICs' interfaces where sockets carry the
    collectives (tcp) or the vendor puts them there (Slingshot's hsn interfaces); else the host
    (ingestion/frontend) NICs' interfaces, for bootstrap. Written only when every one of those
    NICs names its interface: an exact list of some would leave the others out, so otherwise
    the setting is left to NCCL's own choice of interfaces, and said so."""
    if net is not None and net.socket_on_backend:
        nics = list(topology.platform.collective_nics)
        why = ("TCP backend: collectives and bootstrap run over these interfaces" if net.name == "tcp" else
               f"{net.name} backend: bootstrap and socket traffic on the backend interfaces, by exact name")
        whose = f"its {net.name} backend NICs"
    else:
        nics = [n for n in topology.platform.host_nics if n.interface or interface_use(n.transport, n.role) == "socket"]
        why = "bootstrap and socket traffic on the ingestion/frontend interfaces, by exact name"
        whose = "its ingestion/frontend NICs"
    if not nics:
        return []
    if any(n.interface is None for n in nics):
        return [Setting("NCCL_SOCKET_IFNAME", None,
                        f"NCCL_SOCKET_IFNAME is not set: the platform does not name the network interfaces of {whose}, "
                        "so NCCL picks its interfaces itself (HW603 lists them)")]
    return [Setting("NCCL_SOCKET_IFNAME", "=" + _interfaces(nics), why)]


def _plugin_interfaces(platform: Platform, net: TransportFacts) -> list[Setting]:
    """The net plugin's own interface variables (GPUDirect-TCPX/-TCPXO): the backend NICs'
    interfaces for data, the first host NIC's for control, as the vendor's scripts set them."""
    settings = []
    if net.data_ifname is not None and (data := _interfaces(platform.backend_nics)):
        settings.append(Setting(net.data_ifname, data, f"{net.name}: the GPU (backend) NICs' interfaces carry the data"))
    control = [n for n in platform.host_nics if n.interface]
    if net.ctrl_dev is not None and control:
        settings.append(Setting(net.ctrl_dev, control[0].interface, f"{net.name}: control connections on the primary NIC"))
    return settings


def transport_env(platform: Platform) -> list[Setting]:
    """The vendor's fixed settings for the backend transport (`hwspec.formats.transports`), each
    commented with its source; NCCL_* ones go to nccl.conf, the others (FI_*, HSA_*) to launch.env."""
    backend = platform.backend
    if backend is None:
        return []
    net = facts(backend.transport)
    return [Setting(s.name, s.value, f"{s.why} (from {s.source})")
            for s in net.env("rccl" if collective_library(platform) == "rccl" else "nccl", bool(backend.gpudirect))]


def nccl_settings(topology: Topology, install_dir: str, rail_optimized: bool | None = None) -> list[Setting]:
    """The NCCL_* settings of the node, in the order they are written. `rail_optimized`
    (the cluster's rail layout) overrides the platform's own declaration when given. What the
    backend transport needs comes from `hwspec.formats.transports`."""
    platform = topology.platform
    backend = platform.backend
    net = facts(backend.transport) if backend is not None else None
    settings: list[Setting] = []
    verbs = backend if backend is not None and net is not None and net.ib_verbs else None
    if verbs is not None:
        settings.extend(_ib_hca(platform, verbs))
    settings.extend(_socket_ifname(topology, net))
    if net is not None:
        settings.extend(_plugin_interfaces(platform, net))
        settings.extend(s for s in transport_env(platform) if is_nccl(s.name))
    if net is not None and net.disable_ib:
        settings.append(Setting("NCCL_IB_DISABLE", "1", "TCP backend: no IB/RoCE verbs"))
    if verbs is not None:
        for name, value, why in (("NCCL_IB_GID_INDEX", verbs.gid_index, "RoCE GID index of the backend network"),
                                 ("NCCL_IB_TC", verbs.traffic_class, "traffic class of the backend network"),
                                 ("NCCL_IB_SL", verbs.service_level, "service level of the backend network")):
            if value is not None:
                settings.append(Setting(name, str(value), why))
    if backend is not None and net is not None and net.rdma:
        level = gdr_level(topology) if backend.gpudirect else None
        if level is not None:
            c2c = gdr_over_c2c(topology)
            settings.append(Setting("NCCL_NET_GDR_LEVEL", level,
                                    "GPUDirect RDMA up to this distance between a GPU and its NIC (PHB admits P2C, a GPU's "
                                    "NVLink-C2C to the CPU holding its NIC)" if c2c else
                                    "GPUDirect RDMA up to this PCIe distance between a GPU and its NIC"))
        if level is not None and c2c:
            settings.append(Setting("NCCL_NET_GDR_C2C", "1",
                                    "GPUDirect RDMA over NVLink-C2C to the NICs on the GPU's own CPU (NCCL 2.26+; "
                                    "the default from 2.27)"))
    rails = rail_optimized if rail_optimized is not None else backend.rail_optimized if backend is not None else None
    if backend is not None and rails is not None:
        settings.append(Setting("NCCL_CROSS_NIC", "0" if rails else "1",
                                "rail-optimized fabric: keep each ring/tree on the same NIC index"
                                if rails else "no rail-optimized fabric: rings may cross NICs"))
    library = collective_library(platform)
    if not missing_bus_ids(topology):  # else no topology file is written: NCCL detects the node itself
        settings.append(Setting("NCCL_TOPO_FILE", topo_file(install_dir, library),
                                f"this platform's {library}-topo.xml, installed under {install_dir}/"))
    return merge_environment(settings, {k: v for k, v in platform.environment.items() if is_nccl(k)}, "the platform's")


def merge_environment(settings: list[Setting], extra: dict[str, str], whose: str) -> list[Setting]:
    """`settings` with the `environment:` entries `extra` merged in: an entry replaces a
    generated setting of the same name in place (the comment says so), the others follow in
    the order written."""
    merged = []
    for setting in settings:
        if setting.name in extra:
            was = "unset" if setting.value is None else setting.value
            setting = Setting(setting.name, extra[setting.name], f"set by {whose} environment: (hwspec would write {was}: {setting.why})")
        merged.append(setting)
    done = {s.name for s in merged}
    merged += [Setting(name, value, f"set by {whose} environment:") for name, value in extra.items() if name not in done]
    return merged


NCCL_CONF_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


OLD_NCCL_MAX_NICS = 16
"""The most collective NICs (NCCL nets) a node may have before NCCL releases older than 2.21 are
known to misjudge it: NCCL 2.18.1's search on a 32-NIC p5 topology used 16 of its NICs (PXN), and
releases before 2.21 print each GPU's paths into a 1,024-byte buffer that 32 NICs overflow."""


def nccl_version_notes(platform: Platform) -> list[str]:
    """What nccl.conf says of the NCCL release the node needs, where its files meet a known limit
    of an older one (more than `OLD_NCCL_MAX_NICS` collective NICs: use 2.21 or later). Comments
    only: nccl.conf cannot require a release."""
    nics = [n for n in platform.collective_nics if net_name(n) is not None or n.bus is not None]
    if len(nics) <= OLD_NCCL_MAX_NICS:
        return []
    return [f"needs NCCL 2.21 or later: with {len(nics)} NICs (more than {OLD_NCCL_MAX_NICS}), NCCL before 2.21 uses only "
            "part of them (2.18.1's search used 16 of a p5's 32, through PXN) and overflows the 1,024-byte buffer it "
            "prints each GPU's paths into"]


def nccl_conf_text(text: str, source: str) -> str:
    """`text` made safe for every NCCL version's nccl.conf reader. NCCL reads `NAME=value`
    lines verbatim (value: everything after the first `=`); a line without `=` is skipped.
    Before NCCL 2.26.2 a `#` line is not a comment to NCCL: only the missing `=` skips it, so
    a comment containing `=` sets a junk variable. So every `=` in a comment line is written
    as `%3D`; every other non-blank line must be NAME=value with a valid name and short enough
    not to be cut, or generation fails naming `source`."""
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        body = line.rstrip("\n")
        if body.startswith("#"):
            out.append(line.replace("=", "%3D"))
            continue
        if not body:
            out.append(line)
            continue
        name, equals, value = body.partition("=")
        if not equals or not NCCL_CONF_NAME.fullmatch(name) or len(name) > NCCL_CONF_MAX or len(value) > NCCL_CONF_MAX:
            raise GenerationError(f"{source}: nccl.conf line {number} is not NAME=value as NCCL reads it "
                                  f"(name [A-Z0-9_], at most {NCCL_CONF_MAX} characters each): {body[:80]!r}")
        out.append(line)
    return "".join(out)


def _settings(ctx: GenContext) -> list[Setting]:
    """The NCCL settings of the node's files, refused when the run's policy refuses an
    `environment:` name (HW702 reports them during validate)."""
    refuse(ctx.platform, "environment", environment_limits(ctx.platform, ctx.policy))
    return nccl_settings(ctx.topology, ctx.install_dir, ctx.rail_optimized)


@generator("nccl-conf")
def nccl_conf(ctx: GenContext) -> Plan:
    """/etc/nccl.conf: NAME=value lines, read by NCCL after the process environment, in the
    form every NCCL version reads the same (`nccl_conf_text`). For AMD GPUs /etc/rccl.conf
    instead: RCCL reads the same NCCL_* names, with NCCL's conf reader, from ~/.rccl.conf or
    /etc/rccl.conf (its NCCL_CONF_FILE default), not from /etc/nccl.conf."""
    platform: Platform = ctx.platform
    if not platform.gpus:
        return {}
    library = collective_library(platform)
    text = ctx.render(f"{library}.conf.j2", "hash", settings=_settings(ctx),
                      topo_file=None if missing_bus_ids(ctx.topology) else topo_file(ctx.install_dir, library),
                      version_notes=nccl_version_notes(platform) if library == "nccl" else [])
    return {f"{library}.conf": nccl_conf_text(text, platform.file)}


def device_order(platform: Platform) -> Setting:
    """How GPU ordinals are made to follow local ranks (GPU index by bus id): CUDA_DEVICE_ORDER
    for NVIDIA; for AMD, whose runtime has no such switch, HIP_VISIBLE_DEVICES listing the HIP
    ordinals in local-rank order (ROCm enumerates GPUs in its KFD topology order, which the
    file takes to be bus order: `rocm-smi --showbus` shows it on the machine)."""
    if collective_library(platform) == "rccl":
        return Setting("HIP_VISIBLE_DEVICES", ",".join(str(g.index) for g in platform.gpus),
                       "HIP ordinals in local-rank order (GPU i = i-th by bus id; check with 'rocm-smi --showbus'); "
                       "HIP has no CUDA_DEVICE_ORDER")
    return Setting("CUDA_DEVICE_ORDER", "PCI_BUS_ID", "CUDA ordinals follow bus ids, as local ranks do")


@generator("launch-env")
def launch_env(ctx: GenContext) -> Plan:
    """Environment for torchrun (PET_*), CUDA and NCCL (HIP and RCCL on AMD nodes), for
    `set -a; . ./launch.env` and `docker run --env-file`."""
    platform: Platform = ctx.platform
    if not platform.gpus:
        return {}
    launcher = [Setting("PET_NPROC_PER_NODE", str(len(platform.gpus)), "torchrun --nproc-per-node: one rank per GPU"),
                device_order(platform),
                Setting("OMP_NUM_THREADS", str(omp_threads(ctx.topology)), "physical cores per rank on its NUMA node"),
                *(s for s in transport_env(platform) if not is_nccl(s.name))]
    launcher = merge_environment(launcher, {k: v for k, v in platform.environment.items() if not is_nccl(k)}, "the platform's")
    stack = "HIP and RCCL (NCCL_* names)" if collective_library(platform) == "rccl" else "CUDA and NCCL"
    conf = "/etc/rccl.conf" if collective_library(platform) == "rccl" else "/etc/nccl.conf"
    return {"launch.env": ctx.render("launch.env.j2", "hash", launcher=launcher, settings=_settings(ctx),
                                     stack=stack, conf=conf)}


@generator("ranks")
def ranks_table(ctx: GenContext) -> Plan:
    """ranks.tsv: local rank -> GPU, backend NIC, NUMA node and CPUs."""
    platform: Platform = ctx.platform
    if not platform.gpus:
        return {}
    return {"ranks.tsv": ctx.render("ranks.tsv.j2", "hash", ranks=ranks(ctx.topology))}


@generator("bind")
def bind_script(ctx: GenContext) -> Plan:
    """bind.sh: runs a rank's command under numactl on its GPU's NUMA node."""
    platform: Platform = ctx.platform
    if not platform.gpus:
        return {}
    refuse(platform, "bind.sh", bind_limits(platform))
    # rendered without the automatic header: the shebang must stay on the first line
    return {"bind.sh": ctx.render("bind.sh.j2", None, header=ctx.header("hash"), ranks=ranks(ctx.topology))}
