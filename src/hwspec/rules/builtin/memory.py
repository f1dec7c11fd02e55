"""Shared-memory rules: an APU's HBM is the memory of one NUMA node of its own package, said once."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.rules import Context, Finding, rule
from hwspec.spec.checks import UNKNOWN
from hwspec.spec.units import format_bytes

from ._common import in_file_order


@rule("HW106", "shared-memory",
      hint="name an APU of the socket's own package in shared_with, from one socket only")
def shared_memory(ctx: Context) -> Iterator[Finding]:
    """A socket's `memory: {shared_with: gpu}` names an APU in its own package, and no other socket names it.

    Shared memory is one pool: the roofline, TorchRec, Calculon and the estimate count it once, as
    the GPU's HBM, and bind the GPU's rank to the CPU cores beside it. A GPU's HBM named by two
    sockets, by a socket the GPU does not hang off, or on a GPU that is not an APU (its HBM is
    nobody's host memory) describes a machine that cannot exist.
    """
    p = ctx.platform
    owner: dict[str, str] = {}
    for socket in in_file_order(p, p.sockets):
        gpu_id = socket.memory_shared_with
        if gpu_id is None:
            continue
        at = (socket.id, "memory", "shared_with")
        first = owner.setdefault(gpu_id, socket.id)
        if first != socket.id:
            yield ctx.finding(f"{socket.id}: memory is shared with {gpu_id}, whose HBM is already {first}'s memory",
                              at=at, hint="an APU's HBM is the memory of one NUMA node: name the GPU of this socket's own package")
            continue
        gpu = p.gpu_by_id[gpu_id]
        if gpu.part != UNKNOWN and gpu.form_factor != "apu":
            yield ctx.finding(f"{socket.id}: memory is shared with {gpu_id}, but its part {gpu.part} is not an APU "
                              f"(form factor {gpu.form_factor}): its HBM is no CPU's memory",
                              at=at, hint="give the socket its own memory (capacity, bandwidth), or name the APU part")
        elif gpu.socket is not None and gpu.socket != socket.id:
            yield ctx.finding(f"{socket.id}: memory is shared with {gpu_id}, but {gpu_id} hangs off {gpu.socket}",
                              at=at, hint=f"name the GPU under {socket.id} (the APU in the same package), or move {gpu_id}")


@rule("HW107", "apu-memory",
      hint="write the APU socket's memory as {shared_with: <the APU's id>}, with no capacity of its own")
def apu_memory(ctx: Context) -> Iterator[Finding]:
    """An APU's socket says its memory is the APU's HBM (`memory: {shared_with: gpu}`), not DDR of its own.

    An APU (MI300A) has no host DDR: its CPU cores use the package's HBM. A socket that gives its
    own capacity and bandwidth invents a second pool, and every consumer (roofline host_ddr,
    TorchRec ddr_cap, Calculon mem2, the estimate's embedding placement) would plan with memory
    the machine does not have.
    """
    p = ctx.platform
    topology = ctx.topology
    for gpu in in_file_order(p, p.gpus):
        if gpu.form_factor != "apu" or topology.memory_shared_with(gpu.id) is not None:
            continue
        socket_id = topology.socket_of(gpu.id)
        socket = p.socket_by_id[socket_id] if socket_id is not None else None
        if socket is not None and socket.memory_shared_with is not None:
            continue  # its socket names another GPU's HBM: HW106 reports that
        where = socket.id if socket is not None else "no socket"
        own = f"; {where} gives memory of its own ({format_bytes(socket.memory_capacity) if socket.memory_capacity is not None else 'capacity unknown'}), a second pool" if socket else ""
        yield ctx.finding(f"{gpu.id} is an APU ({gpu.model_name}): its HBM is the memory of its CPU cores, but no socket "
                          f"says so{own}",
                          at=(socket.id, "memory") if socket is not None else (gpu.id, "part"),
                          hint=f"write 'memory: {{shared_with: {gpu.id}}}' on the socket of its package")
