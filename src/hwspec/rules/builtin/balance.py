"""Balance rules: every PCIe link a NIC's traffic crosses is fast enough for it."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.model.node import Bridge
from hwspec.rules import Context, Finding, rule

from ._common import gbit, gbyte, id_list, link_text, physical_field


@rule("HW401", "nic-path-bandwidth")
def nic_path_bandwidth(ctx: Context) -> Iterator[Finding]:
    """Every PCIe link between a NIC and the point where its traffic turns is at least as fast as the NIC.

    The traffic turns at its GPU's switch for a GPUDirect backend NIC, else at the CPU socket. A
    200 Gb/s NIC (25 GB/s) behind a Gen3 x8 link (7.88 GB/s) can never run at line rate,
    whatever the network does; the link, not the NIC, sets the node's network bandwidth.
    """
    p = ctx.platform
    for nic in p.nics:
        if nic.socket is None or nic.speed is None:  # an unknown speed: HW603 reports it
            continue
        for item in ctx.topology.nic_path(nic):
            if item.physical is not None and item.physical.bandwidth < nic.speed:
                where = f"{item.id}'s {link_text(item.physical, 'uplink')}" if isinstance(item, Bridge) else f"a {link_text(item.physical)}"
                yield ctx.finding(f"{nic.id}: {gbit(nic.speed)} NIC ({gbyte(nic.speed)}) sits behind {where}",
                                  at=physical_field(item),
                                  hint="give the NIC (and the bridges above it) a link at least as fast as the NIC")


@rule("HW402", "switch-uplink-traffic", severity="warning")
def switch_uplink_traffic(ctx: Context) -> Iterator[Finding]:
    """The NIC traffic that must cross a PCIe bridge's uplink fits in it.

    Traffic crosses a bridge's uplink when a NIC below it talks to something above it: the CPU,
    or a GPU elsewhere. Under GPUDirect a backend NIC beside its GPU keeps its traffic below the
    switch; without GPUDirect all NIC traffic goes up to host memory. When several NICs share
    one uplink, each gets only its share.
    """
    p = ctx.platform
    crossing: dict[str, list] = {}
    for nic in p.nics:
        if nic.socket is None:
            continue
        for item in ctx.topology.nic_path(nic)[1:]:
            crossing.setdefault(item.id, []).append(nic)
    for bridge in p.bridges:
        nics = crossing.get(bridge.id, [])
        if any(n.speed is None for n in nics):
            continue  # a NIC of unknown speed: HW603 reports it
        total = sum(n.speed for n in nics)
        if nics and total > bridge.physical.bandwidth:
            verb = "sends" if len(nics) == 1 else "send"
            yield ctx.finding(f"{bridge.id}: {id_list(n.id for n in nics)} {verb} {gbit(total)} ({gbyte(total)}) "
                              f"across its {link_text(bridge.physical, 'uplink')}",
                              at=physical_field(bridge),
                              hint="widen the uplink, spread the NICs over more bridges, or place each backend "
                                   "NIC beside its GPU with GPUDirect RDMA")
