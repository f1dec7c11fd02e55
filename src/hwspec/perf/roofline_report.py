"""The roofline document as text for people (`hwspec roofline`): `text_report`, and
`unknown_report` for a platform whose figures are unknown."""

from __future__ import annotations

from typing import Any

from hwspec.perf.roofline import COLLECTIVES
from hwspec.perf.tables import gbps, gib, number, table


def _detail(name: str, tier: dict[str, Any]) -> str:
    if name == "hbm":
        return f"shared with the {tier['shared_with_cpu_cores']} CPU cores of its NUMA node" if "shared_with_cpu_cores" in tier else ""
    if name == "host_ddr" and "same_memory_as" in tier:
        return "the NUMA node's memory is this GPU's HBM: the hbm tier, not a second pool"
    if name == "host_ddr":
        return (f"NUMA node: {gib(tier['numa_node_capacity_bytes'])}, "
                f"{gbps(tier['numa_node_bandwidth_bytes_per_s'])} / {tier['shared_by_gpus']} GPU(s)")
    if name == "ssd":
        return f"{tier['ssds']} SSD(s) / {tier['shared_by_gpus']} GPUs"
    if name == "nvlink":
        return f"{tier['links']} x {tier['fabric']} link(s)"
    if name == "pcie_host":
        return f"{tier['link']}, {tier['hops']} hop(s) to the socket"
    if name == "pcie_host_shared":
        return f"busiest link shared by {tier['shared_by_gpus']} GPU(s)"
    if name == "backend_nic":
        return f"{tier['via']} ({tier['transport']})"
    if name == "ingestion_share":
        return f"{tier['nics']} NIC(s) / {tier['shared_by_gpus']} GPUs"
    return ""


def unknown_report(title: str, unknown: list[str]) -> str:
    """The text roofline of a platform whose figures are unknown: what is missing, no table."""
    return "\n".join([title, "no figures: these are unknown (hwspec validate says what to fill in, HW603)",
                      *(f"  {line}" for line in unknown)]) + "\n"


def text_report(doc: dict[str, Any]) -> str:
    """The roofline document as tables for people (GB/s = 1e9 bytes/s, GiB = 1024^3 bytes); for a
    platform with unknown figures, the list of them instead (`unknown_report`)."""
    platform = doc["platform"]
    if doc.get("unknown") and doc.get("gpu_groups") is None:
        return unknown_report(f"{platform['name']}: {platform['title']}", doc["unknown"])
    out = [f"{platform['name']}: {platform['title']}",
           f"source: {platform['file']}; datasheet peaks; bandwidths per direction (GB/s = 1e9 bytes/s, GiB = 1024^3 bytes)"]
    for group in doc["gpu_groups"]:
        gpus = group["gpus"]
        numa = ", ".join(map(str, group["numa_nodes"])) or "none"
        out += ["", f"GPUs {', '.join(gpus)}: {len(gpus)} x {group['model_name']} ({group['part']}), NUMA nodes {numa}",
                "", "Peak compute per GPU"]
        out += table(("dtype", "dense TFLOPS", "sparse TFLOPS"),
                      ((dtype, number(c["dense_flop_per_s"] / 1e12),
                        number(c["sparse_flop_per_s"] / 1e12) if "sparse_flop_per_s" in c else "-")
                       for dtype, c in group["compute"].items()))
        out += ["", "Tiers per GPU"]
        tiers = group["tiers"]
        out += table(("tier", "capacity", "bandwidth", "detail"),
                      ((name, gib(t.get("capacity_bytes")) if t else "-", gbps(t["bandwidth_bytes_per_s"]) if t else "-",
                        _detail(name, t) if t else "unknown (see below)" if name == "host_ddr" and doc.get("unknown") else "none")
                       for name, t in tiers.items()), align="lrrl")
        present = [name for name in tiers if tiers[name] is not None and tiers[name]["bandwidth_bytes_per_s"] > 0]
        out += ["", "Ridge points per GPU (FLOP/byte = dense peak / tier bandwidth; sparse doubles them)"]
        out += table(("dtype", *present),
                      ((dtype, *(number(c["dense_ridge_flop_per_byte"][name]) for name in present))
                       for dtype, c in group["compute"].items()))
    bounds = doc["intra_node_collectives"]
    if bounds is not None:
        out += ["", f"Intra-node collective bounds (n = {bounds['n_gpus']}, via {bounds['via'] or 'nothing'}, "
                    f"{bounds['gpu_pairs_with_direct_nvlink']} of {bounds['gpu_pairs']} GPU pairs with direct NVLink)"]
        out += table(("collective", "factor", "busbw", "algbw", "algorithm"),
                      ((name, number(bounds[name]["busbw_factor"]), gbps(bounds[name]["busbw_bytes_per_s"]),
                        gbps(bounds[name]["algbw_bytes_per_s"]), bounds[name]["algorithm"]) for name in COLLECTIVES),
                      align="lrrrl")
        out += ["  busbw = algbw x factor (nccl-tests); bound = bottleneck per-GPU NVLink bandwidth, or PCIe without an NVLink path; "
                "NVLS: reduced in the NVSwitches"]
    node = doc["node"]
    out += ["", f"Node ({node['gpus']} GPUs, {node['sockets']} sockets)"]
    out += table(("dtype", "dense TFLOPS", "sparse TFLOPS"),
                  ((dtype, number(c["dense_flop_per_s"] / 1e12),
                    number(c["sparse_flop_per_s"] / 1e12) if "sparse_flop_per_s" in c else "-")
                   for dtype, c in node["compute"].items()))
    out += [""] + table(("memory", "capacity", "bandwidth"), (
        ("hbm", gib(node["hbm_capacity_bytes"]), gbps(node["hbm_bandwidth_bytes_per_s"])),
        ("ddr", gib(node["ddr_capacity_bytes"]), gbps(node["ddr_bandwidth_bytes_per_s"])),
        ("ssd", gib(node["ssd_capacity_bytes"]) if node["ssd_capacity_bytes"] else "-",
         gbps(node["ssd_bandwidth_bytes_per_s"]) if node["ssd_capacity_bytes"] else "-")))
    if "unified_memory" in node:
        pairs = ", ".join(f"{socket} = {gpu}'s HBM" for socket, gpu in node["unified_memory"]["sockets_sharing_gpu_hbm"].items())
        out += [f"  unified memory: {pairs} (counted once, as hbm; ddr is memory of its own only)"]
    out += [""] + table(("links", "bandwidth"), (
        ("nvlink (sum over GPUs)", gbps(node["nvlink_bandwidth_bytes_per_s"])),
        ("backend NICs", gbps(node["backend_nic_bandwidth_bytes_per_s"] or None)),
        ("ingestion/frontend NICs", gbps(node["host_nic_bandwidth_bytes_per_s"] or None))))
    if doc.get("unknown"):
        out += ["", "Unknown (host_ddr and the figures that need it are left out; hwspec validate says what to fill in, HW603)"]
        out += [f"  {line}" for line in doc["unknown"]]
    count = len(doc["assumptions"])
    out += ["", f"Assumptions: {count} value(s) in this platform are assumed, not sourced"
                + (" (listed in roofline.json; 'hwspec roofline --format json' prints them)" if count else "")]
    return "\n".join(out) + "\n"
