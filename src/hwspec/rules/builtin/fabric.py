"""GPU fabric rules: the logical NVLink pattern fits the parts and the baseboard, and is whole."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from hwspec.model.node import known, nvswitch_generation_of_gpus
from hwspec.rules import Context, Finding, rule
from hwspec.spec.checks import UNKNOWN

from ._common import FABRIC_AT, connection_at, gbyte, id_list, in_file_order


@rule("HW301", "nvlink-embeds-in-baseboard",
      hint="lower the pair's links, or describe the board's wiring (baseboard.wiring, links_per_port) as it is built")
def nvlink_embeds_in_baseboard(ctx: Context) -> Iterator[Finding]:
    """Every logical GPU pair has at most as many links as the baseboard wires between their slots, times links_per_port.

    The logical fabric is what NCCL will be told; the baseboard is copper. A pair the board does
    not wire (or wires with fewer ports) cannot carry the links, so the generated topology would
    promise bandwidth that does not exist. GPUs joined by a logical fabric therefore need a
    baseboard and a slot on it.
    """
    p = ctx.platform
    pairs = ctx.topology.gpu_pairs
    board = p.baseboard
    if board is None:
        if not pairs:
            return
        shown = [f"{c.a}-{c.b}: {c.links} links" for c in pairs.values()]
        listed = id_list(shown[:3]) + (", ..." if len(shown) > 3 else "")
        yield ctx.finding(f"nvlink: {len(pairs)} GPU pair(s) are linked ({listed}), but there is no baseboard to carry them",
                          at=FABRIC_AT, hint="describe the accelerator baseboard and its wiring under 'baseboard:'")
        return
    for (a, b), connection in pairs.items():
        ga, gb = p.gpu_by_id[a], p.gpu_by_id[b]
        if ga.slot is None or gb.slot is None:
            missing = ga if ga.slot is None else gb
            yield ctx.finding(f"{a}-{b}: {connection.links} NVLink links asked, but {missing.id} has no baseboard slot",
                              at=(missing.id,), hint=f"give {missing.id} the 'slot:' it sits in")
            continue
        if ga.slot == gb.slot or max(ga.slot, gb.slot) >= board.slots:
            continue  # HW307 reports it
        ports = board.ports.get((min(ga.slot, gb.slot), max(ga.slot, gb.slot)), 0)
        carried = ports * board.links_per_port
        if connection.links > carried:
            yield ctx.finding(
                f"{a}-{b} (slots {ga.slot} and {gb.slot}): {connection.links} NVLink links asked, but the baseboard "
                f"wires {ports} port(s) between these slots, carrying {carried} link(s) at {board.links_per_port} per port",
                at=connection_at(connection),
                hint="leave the pair out (nvlink.exclude), lower its link count, or correct the baseboard wiring")


@rule("HW302", "nvlink-link-budget",
      hint="lower links_per_pair or the per-pair counts, or leave pairs out")
def nvlink_link_budget(ctx: Context) -> Iterator[Finding]:
    """No GPU uses more fabric links than its part has (`fabric.links`), its NVLinks to a CPU included.

    An A100 has 12 NVLink links; a logical pattern that gives one 14 describes a GPU that does
    not exist, and the bandwidth computed from it is overstated. A P100 on a POWER8 board has 4,
    shared between its GPU peer and its CPU (`nvlink.cpu_links`).
    """
    p = ctx.platform
    for gpu in p.gpus:
        mine = ctx.topology.gpu_fabric(gpu.id)
        to_cpu = ctx.topology.cpu_nvlinks(gpu.id)
        used = sum(c.links for c in mine) + sum(c.links for c in to_cpu)
        if gpu.part == UNKNOWN and not gpu.fabric_links:
            continue  # an unknown part whose link count its source does not give: HW603 reports it
        if used > gpu.fabric_links:
            peers = ", ".join([f"{c.b if c.a == gpu.id else c.a}: {c.links}" for c in mine]
                              + [f"{c.socket} (CPU): {c.links}" for c in to_cpu])
            yield ctx.finding(f"{gpu.id} uses {used} NVLink links ({peers}), but its part {gpu.part} has {gpu.fabric_links}",
                              at=FABRIC_AT, hint="lower links_per_pair or the per-pair counts, or leave pairs out")


@rule("HW303", "nvlink-symmetric",
      hint="list each GPU pair once, with the two GPU ids it joins")
def nvlink_symmetric(ctx: Context) -> Iterator[Finding]:
    """Each GPU pair is listed once in the logical fabric, and no GPU is linked to itself.

    A pair listed twice is ambiguous (are the links added, or is one entry stale?); with different
    counts one of them is certainly wrong. A GPU linked to itself is a typo for another GPU.
    """
    p = ctx.platform
    first: dict[frozenset[str], int] = {}
    for c in p.nvlinks:
        if c.a == c.b:
            yield ctx.finding(f"{c.a} is linked to itself ({c.links} links)", at=connection_at(c),
                              hint="name the other GPU of the pair")
            continue
        key = frozenset((c.a, c.b))
        if key not in first:
            first[key] = c.links
        elif first[key] != c.links:
            yield ctx.finding(f"{c.a}-{c.b} is listed twice, with {first[key]} and {c.links} links", at=connection_at(c),
                              hint="keep one entry with the pair's link count")
        else:
            yield ctx.finding(f"{c.a}-{c.b} is listed twice ({c.links} links each)", at=connection_at(c),
                              hint="keep one entry with the pair's total link count")


@rule("HW304", "nvlink-connected",
      hint="list the missing NVLink pairs, or split the GPUs into hives of equal size as the board wires them")
def nvlink_connected(ctx: Context) -> Iterator[Finding]:
    """When the node has a GPU fabric, it joins the node's GPUs into one connected graph, or into hives of equal size.

    NCCL builds its rings and trees over NVLink where it can; GPUs in separate NVLink islands
    talk over PCIe and the CPU instead, and the slowest hop sets the speed of every collective.
    Real boards do come in hives: an MI100 node is two xGMI hives of 4 GPUs, PCIe cards are
    bridged in pairs. NCCL and RCCL read such a file as it is (ncclTopoAddXGMI/AddNvLinks add the
    links given; GPUs of different hives reach each other over PCIe paths), and the roofline then
    bounds collectives by PCIe. Islands of unequal size (a GPU with no link, a pair left out) are
    what a mistake looks like, and are refused.
    """
    p = ctx.platform
    if p.nvlink_topology == "none" or len(p.gpus) < 2:
        return
    islands = ctx.topology.nvlink_islands
    if len({len(island) for island in islands}) > 1 or len(islands[0]) < 2:
        shown = " and ".join("{" + id_list(i) + "}" for i in islands)
        yield ctx.finding(f"the NVLink fabric splits the {len(p.gpus)} GPUs into {len(islands)} islands: {shown}",
                          at=FABRIC_AT, hint="link the islands, or leave fewer pairs out of the pattern")


@rule("HW305", "fabric-uniform",
      hint="give every GPU the same links, or say nvlink.symmetric: false where the board is uneven")
def fabric_uniform(ctx: Context) -> Iterator[Finding]:
    """Every GPU has the same fabric bandwidth, unless `nvlink.symmetric: false` says otherwise.

    Collectives run at the pace of the slowest GPU; an asymmetric pattern is usually a pair left
    out by mistake. Platforms that are asymmetric on purpose say so, and tools that assume a
    uniform fabric (the roofline, rail planning) can then refuse them.
    """
    p = ctx.platform
    if p.nvlink_topology == "none" or not p.fabric_symmetric or not p.gpus:
        return
    if any(c.bandwidth is None for c in p.nvlinks):
        return  # a GPU part is unknown, and so is its link bandwidth: HW603 reports it
    bandwidth = {g.id: sum(known(c.bandwidth) for c in ctx.topology.gpu_fabric(g.id)) for g in p.gpus}
    slow = min(p.gpus, key=lambda g: bandwidth[g.id])
    fast = max(p.gpus, key=lambda g: bandwidth[g.id])
    if bandwidth[fast.id] - bandwidth[slow.id] > 1e-9 * bandwidth[fast.id]:
        yield ctx.finding(f"{slow.id} has {gbyte(bandwidth[slow.id])} of NVLink bandwidth, {fast.id} has "
                          f"{gbyte(bandwidth[fast.id])}; the fabric is declared symmetric",
                          at=FABRIC_AT, hint="give every GPU the same links, or set nvlink.symmetric: false")


@rule("HW306", "baseboard-ports",
      hint="wire each port between two different slots, within ports_per_slot")
def baseboard_ports(ctx: Context) -> Iterator[Finding]:
    """Wired ports join two different slots of the board, and no slot has more than `ports_per_slot`.

    A slot's ports are the module's physical fabric ports (7 on an OAM v1.5 module). Wiring
    that gives a slot more, or names a slot the board does not have, is not a board that can
    be built, so the embedding check (HW301) would accept logical patterns no real board carries.
    """
    board = ctx.platform.baseboard
    if board is None:
        return
    for (a, b), ports in board.ports.items():
        if a == b or max(a, b) >= board.slots or min(a, b) < 0:
            what = f"joins slot {a} to itself" if a == b else f"names a slot outside 0-{board.slots - 1}"
            yield ctx.finding(f"baseboard wiring [{a}, {b}] ({ports} port(s)) {what}",
                              at=(None, "baseboard", "wiring"), hint=f"the board has {board.slots} slots, numbered from 0")
    wired: Counter[int] = Counter()
    for (a, b), ports in board.ports.items():
        wired[a] += ports
        wired[b] += ports
    for slot in sorted(wired):
        if wired[slot] > board.ports_per_slot:
            peers = ", ".join(f"slot {b if a == slot else a}: {n}" for (a, b), n in board.ports.items() if slot in (a, b))
            yield ctx.finding(f"baseboard slot {slot} has {wired[slot]} wired ports ({peers}), "
                              f"but ports_per_slot is {board.ports_per_slot}",
                              at=(None, "baseboard", "wiring"), hint="correct the wiring or ports_per_slot")


@rule("HW307", "gpu-slot",
      hint="give each GPU its own slot, below baseboard.slots")
def gpu_slot(ctx: Context) -> Iterator[Finding]:
    """Each GPU's baseboard slot exists on the board and holds only that GPU.

    Slots place GPUs on the fabric: two GPUs in one slot, or a slot the board does not have,
    make every NVLink pair of those GPUs meaningless.
    """
    p = ctx.platform
    board = p.baseboard
    if board is None:
        return
    taken: dict[int, str] = {}
    for gpu in in_file_order(p, p.gpus):
        if gpu.slot is None:
            continue
        if gpu.slot >= board.slots:
            yield ctx.finding(f"{gpu.id}: slot {gpu.slot} is outside the baseboard's {board.slots} slots "
                              f"(0-{board.slots - 1})", at=(gpu.id, "slot"), hint="slots are numbered from 0")
        elif gpu.slot in taken:
            yield ctx.finding(f"{gpu.id}: slot {gpu.slot} is already taken by {taken[gpu.slot]}",
                              at=(gpu.id, "slot"), hint="give each GPU its own slot")
        else:
            taken[gpu.slot] = gpu.id


@rule("HW308", "nvswitch-generation", severity="warning",
      hint="write baseboard.nvswitch_generation as the board's documentation gives it, or use GPU parts whose NVLink generation is known")
def nvswitch_generation(ctx: Context) -> Iterator[Finding]:
    """An NVSwitch board's generation is known (written, or the one its GPUs' NVLink attaches to), and a written one agrees with the GPUs'.

    The generation decides whether the switches reduce in the fabric (NVLink SHARP from the third
    generation, NCCL's NVLS), which raises the all-reduce bound of the roofline, the estimates and
    `compare` (HGX H100: 700 instead of 450 GB/s). Left out, it is the GPUs' (NVLink4 GPUs on
    third-generation switches); where the GPU parts do not say (an unknown part, GPUs of several
    NVLink generations) the bounds leave NVLink SHARP out, and this finding says so at the baseboard. A written generation
    that differs from the GPUs' is kept (the file wins) and reported.
    """
    p = ctx.platform
    board = p.baseboard
    if board is None or board.wiring != "nvswitch" or not p.gpus:
        return
    derived = nvswitch_generation_of_gpus(p.gpus)
    kinds = sorted({g.fabric_kind or "unknown" for g in p.gpus})
    if board.nvswitch_generation is None and ("unknown" in kinds or len(kinds) > 1):
        # one known NVLink generation no NVSwitch generation goes with (NVLink1) has no NVLS: nothing is missing
        why = "the GPUs' NVLink generation is unknown" if kinds == ["unknown"] else f"the GPUs' NVLink is {', '.join(kinds)}"
        yield ctx.finding(f"baseboard: NVSwitch generation unknown ({why}): the all-reduce bounds leave out NVLink "
                          "SHARP (NCCL's NVLS), which third-generation and later switches have",
                          at=(None, "baseboard"),
                          hint="give 'nvswitch_generation:' (1 V100, 2 A100, 3 H100/H200, 4 Blackwell), or name the GPU part")
    elif board.nvswitch_generation_written and derived is not None and derived != board.nvswitch_generation:
        yield ctx.finding(f"baseboard: nvswitch_generation is {board.nvswitch_generation}, but the GPUs' "
                          f"{p.gpus[0].fabric_kind} attaches to generation-{derived} NVSwitch chips",
                          at=(None, "baseboard", "nvswitch_generation"),
                          hint=f"write nvswitch_generation: {derived}, or leave it out to take the GPUs'")
