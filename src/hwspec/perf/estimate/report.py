"""The estimate document as text for people (`text_report`; ms, GB/s = 1e9 bytes/s, GiB = 1024^3
bytes), and the number formats other reports share (`ms`, `qps`).
"""

from __future__ import annotations

from typing import Any

from hwspec.perf.estimate.placement import _uncached_mix
from hwspec.perf.estimate.term import RESOURCES
from hwspec.perf.tables import gbps, gib, ms, number, table


def qps(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{number(value / 1e6)} M" if value >= 1e6 else f"{number(value / 1e3)} k"


def amount(term: dict[str, Any]) -> str:
    if "amount_flop" in term:
        return f"{number(term['amount_flop'] / 1e9)} GFLOP"
    return gib(int(term["amount_bytes"])) if term["amount_bytes"] >= 1 else "0"


def minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{number(seconds / 60)} min"


def _time_to_train_lines(doc: dict[str, Any]) -> list[str]:
    """The time-to-train line, when the workload states its samples to converge."""
    samples, times = doc.get("samples_to_converge"), doc.get("time_to_train_seconds") or {}
    if not samples:
        return []
    return [f"Time to train ({number(samples / 1e9)} G samples): {minutes(times.get('overlapped'))} at the QPS bound "
            f"with overlap, {minutes(times.get('serial'))} without, {minutes(times.get('expected'))} expected"]


def _plan_lines(groups: list[dict[str, Any]]) -> list[str]:
    """The sharding plan as a table: each group's sharding, planned or stated, and why."""
    out = ["Sharding plan (planned groups: the least expected iteration of their candidates, ties by the serial sum)"]
    out += table(("table group", "tables", "sharding", "shards per table", "why"),
                    ((g["table"], str(g["count"]), g["kind"] + (f" x{g['column_shards']}" if g["column_shards"] else ""),
                      _shards(g), g["why"]) for g in groups), align="lrlrl")
    return out


def _shards(group: dict[str, Any]) -> str:
    """Shards per table of a plan entry; a split group's parts' joined with '+'."""
    if group["shards_per_table"] is None:
        return " + ".join(str(p["shards_per_table"]) for p in group["parts"])
    return str(group["shards_per_table"])


def _tier_lines(place: dict[str, Any]) -> list[str]:
    """The tiers the (uncached) tables fill; none to show when every table is cached."""
    if "cache" in place and place["need_bytes_per_gpu"] == place["cache"]["need_bytes"]:
        return ["  every table is cached (below)"]
    return table(("tier", "capacity", "stored", "share", "bandwidth"),
                    ((t["tier"], gib(int(t["capacity_bytes"])), gib(int(t["stored_bytes"])) if t["stored_bytes"] >= 1 else "0",
                      f"{number(100 * t['fraction'])}%", gbps(t["bandwidth_bytes_per_s"]))
                     for t in place["tiers"]))


def _cache_lines(place: dict[str, Any]) -> list[str]:
    """The software cache, when the workload has one: its HBM, its backing tiers, each group's hit rate."""
    cache = place.get("cache")
    if not cache:
        return []
    out = ["", f"Embedding cache in HBM: {gib(int(cache['hbm_bytes']))} in front of {gib(int(cache['need_bytes']))} "
               f"of cached tables, behind it in {_uncached_mix({'tiers': cache['backing']})}"]
    out += table(("table group", "HBM fraction", "skew", "rows cached", "hit rate"),
                    ((g["table"], number(g["hbm_fraction"]), number(g["skew"]), f"{number(100 * g['cached_rows_fraction'])}%",
                      f"{number(100 * g['hit_rate'])}%") for g in cache["groups"]), align="lrrrr")
    return out


def text_report(doc: dict[str, Any]) -> str:
    """The estimate as tables for people (ms, GB/s = 1e9 bytes/s, GiB = 1024^3 bytes)."""
    p, w = doc["platform"], doc["workload"]
    out = [f"{w['name']} on {p['name']}: {p['gpus']} GPUs ({p['nodes']} node(s) x {p['gpus_per_node']}), "
           f"local batch {number(doc['local_batch'])}, global batch {number(doc['global_batch'])}, MLPs in {doc['compute_dtype']}",
           f"workload: {w['file']} ({w['assumptions']} assumption(s)); platform: {p['file']}", "",
           f"Embedding placement per {doc['placement']['rank']} ({doc['placement']['on']}): "
           f"{gib(int(doc['placement']['need_bytes_per_gpu']))}"
           + ("" if doc["pipeline"] else "; not pipelined (the GPU waits for the input AlltoAll)")]
    out += _tier_lines(doc["placement"])
    out += _cache_lines(doc["placement"])
    balance = doc["table_wise_balance"]
    if balance["shards"]:
        out += ["", f"Table-wise balance: {balance['shards']} indivisible table/column shards on {p['gpus']} GPUs; "
                    f"the busiest GPU looks up at least {number(balance['busiest_over_average'])}x the average"]
    if any(group["planned"] for group in doc.get("plan", ())):
        out += ["", *_plan_lines(doc["plan"])]
    if doc.get("sharding_notes"):
        out += ["", *(f"Sharding: {note}" for note in doc["sharding_notes"])]
    out += ["", "Per-iteration terms per GPU (ms, the busiest GPU)"]
    out += table(("term", "resource", "amount", "time", "bound by"),
                    ((t["label"], t["resource"], amount(t), ms(t["seconds"]), t["bound_by"]) for t in doc["terms"]),
                    align="llrrl")
    out += ["", "Resources (ms)"]
    out += table(("resource", "time"), ((RESOURCES[r], ms(s)) for r, s in doc["resources_seconds"].items()))
    bottleneck = doc["bottleneck"]
    out += ["",
            f"Iteration: {ms(doc['overlapped_seconds'])} ms overlapped (busiest resource), {ms(doc['serial_seconds'])} ms serial (sum of terms)",
            f"QPS bound: {qps(doc['qps_overlapped'])} samples/s with overlap, {qps(doc['qps_serial'])} without",
            f"Expected: {ms(doc['iteration_seconds_expected'])} ms per iteration, {qps(doc['qps_expected'])} samples/s "
            f"(achieved rates, latencies, launches; bound by the {doc['expected']['bound_by']})",
            *_time_to_train_lines(doc),
            f"Bottleneck: {bottleneck['resource_name']}, mostly {bottleneck['label']} ({bottleneck['bound_by']})"]
    return "\n".join(out) + "\n"
