"""Balance rules: every PCIe link a NIC's traffic crosses is fast enough for it."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.model.node import Bridge, Nic
from hwspec.rules import Context, Finding, rule

from ._common import gbit, gbyte, id_list, link_text, physical_field


@rule("HW401", "nic-path-bandwidth",
      hint="put the NIC on a link at least its speed, or lower the NIC's speed to what its slot trains at")
def nic_path_bandwidth(ctx: Context) -> Iterator[Finding]:
    """Every PCIe link between a NIC and the point where its traffic turns is at least as fast as the NIC.

    The traffic turns at its GPU's switch for a GPUDirect backend NIC, else at the CPU socket. A
    200 Gb/s NIC (25 GB/s) behind a Gen3 x8 link (7.88 GB/s) can never run at line rate,
    whatever the network does; the link, not the NIC, sets the node's network bandwidth.
    """
    p = ctx.platform
    for ports in _cards(p.nics).values():
        nic = max(ports, key=lambda n: n.speed or 0.0)  # a card is judged once, at its fastest port
        if nic.socket is None or any(n.speed is None for n in ports):  # an unknown speed: HW603 reports it
            continue
        assert nic.speed is not None
        path = max((ctx.topology.nic_path(n.id) for n in ports), key=len)
        for item in (p.bridge_by_id.get(i) or p.nic_by_id[i] for i in path):
            if item.physical is not None and item.physical.bandwidth < nic.speed:
                where = f"{item.id}'s {link_text(item.physical, 'uplink')}" if isinstance(item, Bridge) else f"a {link_text(item.physical)}"
                yield ctx.finding(f"{nic.card_id}: {gbit(nic.speed)} NIC ({gbyte(nic.speed)}) sits behind {where}",
                                  at=physical_field(item),
                                  hint="give the NIC (and the bridges above it) a link at least as fast as the NIC")


def _cards(nics: tuple[Nic, ...]) -> dict[str, list[Nic]]:
    """NIC ports grouped by card (`Nic.card_id`), in model order: a card has one PCIe link."""
    cards: dict[str, list[Nic]] = {}
    for nic in nics:
        cards.setdefault(nic.card_id, []).append(nic)
    return cards


@rule("HW402", "switch-uplink-traffic", severity="warning",
      hint="spread the NICs over switches, or accept the shared uplink with a rules: entry and its reason")
def switch_uplink_traffic(ctx: Context) -> Iterator[Finding]:
    """The NIC traffic that must cross a PCIe bridge's uplink fits in it.

    Traffic crosses a bridge's uplink when a NIC below it talks to something above it: the CPU,
    or a GPU elsewhere. Under GPUDirect a backend NIC beside its GPU keeps its traffic below the
    switch; without GPUDirect all NIC traffic goes up to host memory. When several NICs share
    one uplink, each gets only its share.
    """
    p = ctx.platform
    crossing: dict[str, dict[str, list[Nic]]] = {}
    for nic in p.nics:
        if nic.socket is None:
            continue
        for item in ctx.topology.nic_path(nic.id)[1:]:
            crossing.setdefault(item, {}).setdefault(nic.card_id, []).append(nic)
    for bridge in p.bridges:
        cards = crossing.get(bridge.id, {})
        if any(n.speed is None for ports in cards.values() for n in ports):
            continue  # a NIC of unknown speed: HW603 reports it
        # a card sends its ports' traffic, at most what its own link carries (counted once)
        total = sum(_card_traffic(ports) for ports in cards.values())
        if cards and total > bridge.physical.bandwidth:
            verb = "sends" if len(cards) == 1 else "send"
            yield ctx.finding(f"{bridge.id}: {id_list(cards)} {verb} {gbit(total)} ({gbyte(total)}) "
                              f"across its {link_text(bridge.physical, 'uplink')}",
                              at=physical_field(bridge),
                              hint="widen the uplink, spread the NICs over more bridges, or place each backend "
                                   "NIC beside its GPU with GPUDirect RDMA")


def _card_traffic(ports: list[Nic]) -> float:
    """What one card's ports send across a link above it: their speeds summed, at most the card's
    own link (bytes/s per direction)."""
    total = sum(n.speed or 0.0 for n in ports)
    link = ports[0].physical
    return min(total, link.bandwidth) if link is not None and len(ports) > 1 else total
