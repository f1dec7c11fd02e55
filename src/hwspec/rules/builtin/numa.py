"""Host rules: NUMA nodes, CPU lists and memory add up; GPUs have their part's memory."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.cpulist import format_cpu_list as cpu_list
from hwspec.model.node import known
from hwspec.rules import Context, Finding, rule
from hwspec.spec.checks import UNKNOWN
from hwspec.spec.units import format_bytes

from ._common import gbyte, in_file_order


@rule("HW501", "numa-unique",
      hint="give each socket (NUMA node) its own numa_node and CPU list, as 'numactl -H' shows them")
def numa_unique(ctx: Context) -> Iterator[Finding]:
    """Each socket has its own NUMA node id, and no CPU is listed for two sockets.

    NUMA ids and CPU lists become the launcher's CPU and memory binding (numactl, taskset). A
    shared id or CPU binds two GPUs' workers to one socket's cores and memory while the other
    socket idles. NUMA node -1 (a machine that reports none) is the OS's node 0, so only a
    machine of one NUMA node has it.
    """
    p = ctx.platform
    numa: dict[int, str] = {}
    cpus: dict[int, str] = {}
    for socket in in_file_order(p, p.sockets):
        other = numa.setdefault(socket.os_node, socket.id)
        if other != socket.id:
            shown = f"{socket.numa_node} (node 0 to the OS)" if socket.numa_node < 0 else str(socket.numa_node)
            yield ctx.finding(f"{socket.id}: NUMA node {shown} is already {other}'s",
                              at=(socket.id, "numa_node"), hint="number NUMA nodes as 'numactl -H' shows them")
        shared: dict[str, list[int]] = {}
        for cpu in socket.cpus:
            owner = cpus.setdefault(cpu, socket.id)
            if owner != socket.id:
                shared.setdefault(owner, []).append(cpu)
        for owner, overlap in shared.items():
            yield ctx.finding(f"{socket.id}: CPUs {cpu_list(overlap)} are also listed for {owner}",
                              at=(socket.id, "cpus"), hint="copy each node's CPU list from 'lscpu' or 'numactl -H'")


@rule("HW502", "memory-total",
      hint="make the sockets' memory add up to declares.memory, or correct the declaration")
def memory_total(ctx: Context) -> Iterator[Finding]:
    """The sockets' memory adds up to `declares.memory`, when it is declared.

    The declared total is what the machine is sold and planned as (embedding tables are sized
    against it); a per-socket figure that does not add up means one of the two is wrong. A
    socket whose capacity is unknown adds up to nothing: the total is not checked (HW603 names it).
    """
    p = ctx.platform
    declared = p.declares.memory
    if declared is None or p.memory_capacity is None or declared == p.memory_capacity:
        return
    each = " + ".join(format_bytes(s.memory_capacity) for s in p.sockets if s.memory_capacity is not None)
    yield ctx.finding(f"declares.memory is {format_bytes(declared)}, but the sockets have "
                      f"{format_bytes(p.memory_capacity)} ({each})",
                      at=(None, "declares", "memory"), hint="correct the per-socket memory or the declared total")


@rule("HW503", "hbm-matches-part", severity="warning",
      hint="use the part that has this HBM (a catalogue part or one in parts/), not a per-GPU override")
def hbm_matches_part(ctx: Context) -> Iterator[Finding]:
    """A GPU has its part's HBM: capacity and bandwidth are not overridden per GPU.

    HBM is what tells one GPU model from another (A100 40 GB vs 80 GB): an override usually means
    the wrong part is named, and the catalogue, the roofline and the model planner then disagree
    about the machine. Add the right part to the catalogue instead.
    """
    p = ctx.platform
    for gpu in p.gpus:
        for path in gpu.overridden:
            if path == "hbm.capacity":
                value = format_bytes(known(gpu.hbm_capacity))
            elif path == "hbm.bandwidth":
                value = gbyte(known(gpu.hbm_bandwidth))
            else:
                continue
            yield ctx.finding(f"{gpu.id} overrides the HBM {path.split('.')[1]} of its part {gpu.part} with {value}",
                              at=(gpu.id, "override", *path.split(".")),
                              hint="name (or add) the part with this memory instead of overriding it")


@rule("HW504", "cores-per-rank", severity="warning",
      hint="check the CPU list ('numactl -H') and the part's threads_per_core")
def cores_per_rank(ctx: Context) -> Iterator[Finding]:
    """Every NUMA node with GPUs has at least one physical core (in its CPU list) per GPU.

    Each local rank is bound to its GPU's NUMA node and runs OMP_NUM_THREADS = the node's
    cores divided by its ranks. With fewer cores than ranks, ranks share cores and the data
    loader threads starve; usually the CPU list or the part's threads per core is wrong.
    """
    t = ctx.topology
    for socket in ctx.platform.sockets:
        gpus = t.gpus_on(socket.id)
        if socket.part == UNKNOWN and not socket.cpus:
            continue  # neither the CPU list nor the part is known: HW603 reports it
        if gpus and t.cores_per_rank(socket.id) < 1:
            yield ctx.finding(f"{socket.id} (NUMA {socket.numa_node}) has {t.physical_cores(socket.id)} physical core(s) "
                              f"in its CPU list ({len(socket.cpus)} CPUs, {socket.threads_per_core} per core) for "
                              f"{len(gpus)} GPUs ({', '.join(gpus)})",
                              at=(socket.id, "cpus"), hint="check the CPU list ('numactl -H') and the part's threads_per_core")


@rule("HW505", "c2c-socket-numa",
      hint="hang the GPU's PCIe presence off the socket its C2C links go to (c2c.socket)")
def c2c_socket_numa(ctx: Context) -> Iterator[Finding]:
    """A GPU attached over NVLink-C2C reaches the same socket through its PCIe presence.

    The GPU's NUMA node (rank binding, the DDR tier, NCCL's `<cpu>` for the GPU) comes from the
    socket its PCIe presence hangs off, while its host traffic and GPUDirect RDMA use the socket of
    its NVLink-C2C. On a Grace Blackwell tray both are the GPU's own Grace; two different sockets
    mean one of the two entries names the wrong Grace.
    """
    for gpu in ctx.platform.gpus:
        if gpu.c2c_socket is not None and gpu.socket is not None and gpu.socket != gpu.c2c_socket:
            yield ctx.finding(f"{gpu.id}: its NVLink-C2C goes to {gpu.c2c_socket}, but its PCIe presence reaches {gpu.socket} "
                              f"(NUMA {gpu.numa_node})",
                              at=(gpu.id, "c2c", "socket"), hint=f"name the same socket in {gpu.id}'s 'c2c' and 'pcie'")


@rule("HW506", "nvlink-cpu-socket",
      hint="write the GPU's cpu_links to the socket its PCIe presence reaches, in one entry")
def nvlink_cpu_socket(ctx: Context) -> Iterator[Finding]:
    """A GPU's NVLinks to a CPU (POWER8/POWER9, `nvlink.cpu_links`) go to the socket its PCIe presence reaches, in one entry.

    NCCL's topology file cannot name the CPU end of such a link: `<nvlink tclass="0x068001">`
    joins the GPU to the CPU it sits under (topo.cc, `findLocalCpu`). On POWER8/POWER9 boards
    that is the truth (each GPU's NVLinks go to its own socket), so another socket is a wrong id,
    and NCCL would route the traffic through the wrong CPU. A GPU listed twice is ambiguous (are
    the links added, or is one entry stale?).
    """
    p = ctx.platform
    seen: set[str] = set()
    for link in p.cpu_nvlinks:
        gpu = p.gpu_by_id[link.gpu]
        if link.gpu in seen:
            yield ctx.finding(f"{link.gpu}'s NVLinks to its CPU are listed twice in nvlink.cpu_links",
                              at=(None, "nvlink", "cpu_links", link.entry, "gpu"), hint="keep one entry with the GPU's link count")
        seen.add(link.gpu)
        if gpu.socket is not None and gpu.socket != link.socket:
            yield ctx.finding(f"{link.gpu}: its NVLinks to a CPU go to {link.socket}, but its PCIe presence reaches {gpu.socket} "
                              f"(NUMA {gpu.numa_node}); NCCL joins such links to the GPU's own CPU",
                              at=(None, "nvlink", "cpu_links", link.entry, "socket"),
                              hint=f"name {gpu.socket}, the socket {link.gpu} hangs off")
