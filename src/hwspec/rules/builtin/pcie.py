"""PCIe rules: the tree reaches the CPUs, bus ids are unique, links fit their ports and parts."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.model.node import Bridge, Gpu, Nic, NumaNode, Platform, Ssd, known
from hwspec.rules import Context, Finding, rule

from ._common import gbyte, id_list, in_file_order, link_text, number, pcie_field, physical_field


@rule("HW101", "pcie-tree", waivable=False,
      hint="set each entry's upstream to a socket or a bridge that reaches one (lspci -t shows the tree)")
def pcie_tree(ctx: Context) -> Iterator[Finding]:
    """Every PCIe bridge and device reaches a CPU socket through the PCIe tree, and root ports sit on a socket.

    A device that reaches no socket has no NUMA node and no path to memory: the tree the file
    describes cannot be the machine's. The usual cause is two bridges naming each other as
    `upstream` (a cycle). A root port is part of a CPU; one below a switch is a mislabelled switch,
    and rules that treat 'same root port' as local would be misled by it.
    """
    p = ctx.platform
    cycles: dict[frozenset[str], list[str]] = {}
    cut_off: dict[frozenset[str], list[str]] = {}
    for item in p.pcie_items:
        if item.socket is not None:
            continue
        ids = ctx.topology.chain(item.id)
        loop = ids[ids.index(ids[-1]):]
        key = frozenset(loop)
        cycles.setdefault(key, loop)
        if item.id not in key:
            cut_off.setdefault(key, []).append(item.id)
    for key, loop in cycles.items():
        first = in_file_order(p, [_in_tree(p, i) for i in key])[0]
        start = loop.index(first.id)
        ordered = loop[start:-1] + loop[:start] + [first.id]
        lost = f"; cut off below it: {id_list(cut_off[key])}" if key in cut_off else ""
        yield ctx.finding(f"PCIe cycle {' -> '.join(ordered)} reaches no CPU socket{lost}",
                          at=pcie_field(first, "upstream"),
                          hint="point one of these 'upstream' entries at a socket or a root port")
    for bridge in p.bridges:
        parent = p.by_id.get(bridge.upstream)
        if bridge.kind == "root-port" and isinstance(parent, Bridge):
            yield ctx.finding(f"{bridge.id} is a root port, but its upstream {parent.id} is a {parent.kind}: "
                              "a root port belongs to a CPU socket",
                              at=(bridge.id, "upstream"),
                              hint=f"set {bridge.id}'s upstream to a socket, or make it 'kind: switch'")


@rule("HW102", "bus-id-unique",
      hint="copy each bus id from 'lspci -D'; the ports of one NIC card go under its ports:, sharing the card's bus")
def bus_id_unique(ctx: Context) -> Iterator[Finding]:
    """Every PCI bus id is used once across bridges, GPUs, NICs and SSDs (ports of one NIC share it).

    The bus id is how the kernel, `nvidia-smi` and NCCL name a device; NCCL's topology file and
    CUDA_DEVICE_ORDER=PCI_BUS_ID match it byte for byte. Two devices with one bus id make the
    generated topology attach one device's links to the other. Ports of one multi-port NIC are
    one PCI function and legitimately share it: a card's `ports:` (the usual form: the card's
    link is then counted once everywhere), or NIC entries of the same part with different `port`.
    """
    p = ctx.platform
    seen: dict[str, list[Bridge | Gpu | Nic | Ssd]] = {}
    for item in in_file_order(p, p.pcie_items):
        if item.bus is None:
            continue  # `bus: unknown`, which HW603 reports
        users = seen.setdefault(item.bus, [])
        clash = next((u for u in users if not _same_adapter(u, item)), None)
        users.append(item)
        if clash is None:
            continue
        line = p.locate(*pcie_field(clash, "bus")).line
        yield ctx.finding(f"bus id {item.bus} of {item.id} is already used by {clash.id} (line {line})",
                          at=pcie_field(item, "bus"),
                          hint="copy the bus ids from 'lspci -D' on the machine")


def _same_adapter(a: object, b: object) -> bool:
    """Two ports of one multi-port NIC: ports of one card (`ports:`), or two NIC entries of the
    same part with different `port`."""
    return isinstance(a, Nic) and isinstance(b, Nic) and (a.card_id == b.card_id or (a.part == b.part and a.port != b.port))


@rule("HW103", "pcie-oversubscription", severity="warning",
      hint="check the switch's uplink in 'lspci -vv' (LnkSta), or raise max_oversubscription where the vendor documents it")
def pcie_oversubscription(ctx: Context) -> Iterator[Finding]:
    """The links below a PCIe bridge add up to at most `max_oversubscription` times its uplink bandwidth (physical links).

    Devices below a bridge share its uplink. Some oversubscription is normal (GPU-to-NIC traffic
    under GPUDirect never leaves the switch), which is why the limit is per bridge; beyond it,
    devices that talk to the host at the same time (checkpointing, data loading) starve.
    """
    p = ctx.platform
    for bridge in p.bridges:
        kids = _one_per_card([_in_tree(p, i) for i in ctx.topology.children.get(bridge.id, ())])
        if any(k.physical is None for k in kids):
            continue  # a link below is unknown: HW603 reports it
        total = sum(known(k.physical).bandwidth for k in kids)
        ratio = total / bridge.physical.bandwidth
        if ratio > bridge.max_oversubscription + 1e-9:
            yield ctx.finding(
                f"{bridge.id}: {gbyte(total)} of links below it ({id_list(_link_owner(k) for k in kids)}) share its "
                f"{link_text(bridge.physical, 'uplink')}: {number(ratio)}:1, above its max_oversubscription of "
                f"{number(bridge.max_oversubscription)}",
                at=physical_field(bridge),
                hint="widen the uplink, move devices to another bridge, or raise max_oversubscription "
                     "if the traffic pattern allows it")


def _in_tree(p: Platform, item_id: str) -> Bridge | Gpu | Nic | Ssd:
    """The bridge or device `item_id` of the PCIe tree (a walk below a bridge or around a cycle
    meets no socket)."""
    item = p.by_id[item_id]
    assert not isinstance(item, NumaNode), item_id
    return item


def _one_per_card(items: list[Bridge | Gpu | Nic | Ssd]) -> list[Bridge | Gpu | Nic | Ssd]:
    """`items` with the ports of one NIC card (`Nic.card_id`) kept once: the card has one link."""
    seen: set[str] = set()
    kept = []
    for item in items:
        key = item.card_id if isinstance(item, Nic) else item.id
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _link_owner(item: object) -> str:
    """The id of the entry whose link `item`'s is: a NIC card's for its ports."""
    return item.card_id if isinstance(item, Nic) else item.id  # type: ignore[attr-defined]


@rule("HW104", "pcie-link-exceeds-bridge",
      hint="give the bridge its part or its gen: (what the switch chip supports), or correct the device's link")
def pcie_link_exceeds_bridge(ctx: Context) -> Iterator[Finding]:
    """No device or bridge trains at a newer PCIe generation than the bridge it hangs off supports (physical links).

    A Gen3 switch has no Gen4 ports: the link trains at Gen3, half the bandwidth the file
    promises, and every bandwidth computed from it (the roofline, the balance rules) is wrong.
    A bridge's own generation is its part's (`part:`, a catalogue PCIe switch), else its
    declared `gen:` (a switch whose model is not public), else the one its uplink trains at: a Gen5 switch under a Gen4 root port has Gen5 ports (its Gen4
    uplink still limits what crosses it, where bandwidth is computed). Links a VM presents
    (virtual Gen1 bridges over Gen5 devices) are not judged: the rule reads each link's
    `physical` form, which defaults to the presented one.
    """
    p = ctx.platform
    for item in p.pcie_items:
        parent = p.by_id.get(item.upstream)
        if isinstance(parent, Bridge) and item.physical is not None and item.physical.gen > parent.gen:
            what = "switch" if parent.kind == "switch" else "root port"
            if parent.part_gen is None:
                which = f"uplink {parent.physical}"
            else:
                which = parent.model_name or f"declared gen: {parent.part_gen}"
            part = (f", or {parent.id}'s part ({parent.part})" if parent.part
                    else f", or {parent.id}'s own generation ('gen:' or a 'part:')" if parent.part_gen is None else "")
            yield ctx.finding(
                f"{item.id}: {item.physical} link below {parent.id}, a Gen{parent.gen} {what} "
                f"({which}): a Gen{parent.gen} {what} has no Gen{item.physical.gen} ports",
                at=physical_field(item),
                hint=f"correct the generation {item.id} or {parent.id} trains at ('lspci -vv', LnkSta){part}; a link "
                     "the OS shows differently (a VM's virtual bridge) is written as 'link', the trained one as 'link.physical'")


@rule("HW105", "device-link-capability",
      hint="check the link in 'lspci -vv' (LnkSta) and the part; a link the part cannot train is a typo or the wrong part")
def device_link_capability(ctx: Context) -> Iterator[Finding]:
    """A GPU or NIC's physical link is no faster or wider than its part's host interface (`pcie` of the part).

    A device cannot train above its own interface: a Gen4 x16 NIC in the file that is a Gen3 x16
    part runs at half the stated bandwidth. Either the link or the part is wrong.
    """
    p = ctx.platform
    devices: tuple[Gpu | Nic, ...] = (*p.gpus, *p.nics)
    for item in devices:
        cap = item.max_link
        if cap is None or item.physical is None:
            continue  # an unknown part or link: HW603 reports it
        if item.physical.gen > cap.gen or item.physical.width > cap.width:
            yield ctx.finding(f"{item.id}: {item.physical} link, but its part {item.part} supports at most {cap}",
                              at=physical_field(item),
                              hint=f"write the link the device trains at (at most gen: {cap.gen}, width: {cap.width}), "
                                   "or use the right part")
