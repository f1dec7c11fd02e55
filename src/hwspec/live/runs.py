"""The `acceptance` records of a report (`hwspec diff PLATFORM RESULT... --format json`), checked
and gathered into runs for `hwspec fleet-report`.

Each record is one size of a collective run (or one cell of an nvbandwidth run) compared with
the platform's figures:

    {"file": "results/leaf-pairs-even/pod0-003.txt", "line": 40, "run": "results/leaf-pairs-even/pod0-003.txt:12",
     "collective": "all_reduce", "bytes": 17179869184, "nodes": 2, "gpus_per_node": 8,
     "hosts": ["gpu003", "gpu004"], "devices": [0, 1, 2, 3, 4, 5, 6, 7],
     "measured_busbw_gbps": 216.0, "expected_busbw_gbps": 470.0, "low_busbw_gbps": 399.5, "high_busbw_gbps": 482.1,
     "algorithm": "NVLSTree", "protocol": "Simple", "limit": "nic", "judged": true, "verdict": "below"}

The records are hostile: every key is checked for its type and bound (`check_record`) and a
wrong one is a `ReportError` at its path, as for the rest of the report. Bounds: at most
`MAX_RECORDS` records in a report and `MAX_HOSTS` hosts in a record (each a host name, none
twice); device numbers below `MAX_DEVICES` (`hwspec.live.observed.MAX_GPUS`, the most GPUs one
node has), as many GPUs per node at most; sizes up to `MAX_BYTES`; bandwidths finite, from 0
to `MAX_GBPS`; lines from 0 to `MAX_LINE`; texts at most `MAX_TEXT` characters (names of
collectives, algorithms, tiers: `MAX_NAME`). Unknown keys are ignored. Texts are kept as
`visible` shows them.

The records of one run share its `run` (the result file and line where it starts) and must
agree on what it ran (collective, hosts, devices, nodes, GPUs per node). A run is `slow` when
a judged size (`judged` true) is `below` its band, else `within` when a judged size was
compared, else `unchecked`. A record that fails its checks takes its run out of the count
(or, when its `run` cannot be read, every run of the report): the other runs still count.
Time and memory are linear in the records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hwspec.live.reportjson import HOST_NAME, Path, ReportError, host_name, kind_of, name, required
from hwspec.text import visible

MAX_RECORDS = 4096
"""Records in one report: 136 runs of 30 sizes; a plan's runs are spread over many reports."""
MAX_HOSTS = 65_536
"""Hosts of one record: a run over every node of the largest fleet hwspec models."""
MAX_DEVICES = 64
"""GPU device numbers are below this, and a run has at most as many GPUs per node
(`hwspec.live.observed.MAX_GPUS`, written here so that reading reports loads no model)."""
MAX_BYTES = 2**50
"""The largest message size, in bytes (as `hwspec.acceptance` reads results: 1 PiB)."""
MAX_GBPS = 1e6
"""The largest bandwidth, in GB/s (10^9 bytes/s): 1,000 TB/s, as every bandwidth hwspec reads."""
MAX_LINE = 2**31 - 1
MAX_TEXT = 4096
"""The longest file name or run label, in characters."""
MAX_NAME = 256
"""The longest collective, algorithm, protocol, tier or device name, in characters."""
VERDICTS = ("within", "below", "above", "unjudged", "unchecked")
NVLINK_TIERS = ("nvlink", "nvswitch", "xgmi", "c2c")
"""The tiers (`limit`) of GPU-to-GPU links: a run of trays of one NVLink domain limited by them
never reached the network."""
OUTCOMES = ("slow", "within", "unchecked")


@dataclass(frozen=True, slots=True)
class Run:
    """One acceptance run as its records say: `label` is its `run` (result file and line, shown
    `visible`); `hosts` its hosts in rank order (empty when the output named none), `devices`
    the GPU device numbers its ranks used (sorted); `outcome` one of OUTCOMES; `over_nvlink`
    whether its judged sizes were all limited by a tier of NVLINK_TIERS (so that, when its hosts
    share an NVLink domain, its traffic never left it); `below` the result file and line of its
    first judged size below the band."""

    label: str
    collective: str
    hosts: tuple[str, ...]
    devices: tuple[int, ...]
    gpus_per_node: int
    outcome: str
    over_nvlink: bool
    below: tuple[str, int] | None


@dataclass(frozen=True)
class Records:
    """A report's `acceptance` list read: the runs whose every record passed its checks, in the
    order they start; the first record that did not (`error`, None when all did), and how many
    records and runs were refused."""

    runs: tuple[Run, ...]
    error: ReportError | None
    records_refused: int
    runs_refused: int


@dataclass(frozen=True, slots=True)
class Record:
    """The parts of one record a run is made of."""

    label: str
    shape: tuple[str, tuple[str, ...], tuple[int, ...], int, int]
    """(collective, hosts, devices, nodes, GPUs per node): what the run ran, the same in all its records."""
    judged: bool
    verdict: str
    limit: str | None
    where: tuple[str, int]


def parse_acceptance(document: dict[str, Any]) -> Records:
    """The runs of `document`'s `acceptance` list (there, not null). A list that is not one,
    or longer than MAX_RECORDS, is a ReportError (the report is not counted); a record that
    fails its checks refuses its run (every run, when its `run` cannot be read)."""
    records = document["acceptance"]
    if not isinstance(records, list):
        raise ReportError(("acceptance",), f"acceptance is {kind_of(records)}, not an array")
    if len(records) > MAX_RECORDS:
        raise ReportError(("acceptance",), f"acceptance has {len(records)} records, more than the {MAX_RECORDS} a report may hold")
    good: dict[str, list[Record]] = {}  # run label -> its records, in order
    refused: set[str] = set()  # the labels of runs with a record refused
    unknown_run = False  # a record refused whose run cannot be told: any run may lack it
    error: ReportError | None = None
    records_refused = 0
    for index, item in enumerate(records):
        label = _label(item)
        try:
            record = check_record(item, index, good[label][0] if label in good else None)
        except ReportError as exc:
            error = error or exc
            records_refused += 1
            if label is None:
                unknown_run = True
            else:
                refused.add(label)
            continue
        good.setdefault(record.label, []).append(record)
    if unknown_run:
        refused.update(good)
    runs = tuple(_run(group) for label, group in good.items() if label not in refused)
    return Records(runs, error, records_refused, len(refused))


def _label(item: Any) -> str | None:
    """The record's `run`, when it is an object with a string of at most MAX_TEXT characters there."""
    if isinstance(item, dict):
        label = item.get("run")
        if isinstance(label, str) and len(label) <= MAX_TEXT:
            return visible(label)
    return None


def check_record(item: Any, index: int, first: Record | None = None) -> Record:
    """Record `index` of `acceptance`, every key checked; `first` is its run's first record
    (None for a run's first), which it must agree with. ReportError at the first wrong key."""
    path: Path = ("acceptance", index)
    if not isinstance(item, dict):
        raise ReportError(path, f"{name(path[:-1], index)} is {kind_of(item)}, not an object")
    label = visible(_text(item, path, "run", MAX_TEXT))
    file = visible(_text(item, path, "file", MAX_TEXT))
    line = _integer(item, path, "line", 0, MAX_LINE)
    collective = visible(_text(item, path, "collective", MAX_NAME))
    _integer(item, path, "bytes", 0, MAX_BYTES, null=True)
    nodes = _integer(item, path, "nodes", 1, MAX_HOSTS)
    per_node = _integer(item, path, "gpus_per_node", 1, MAX_DEVICES)
    for key in ("measured_busbw_gbps", "expected_busbw_gbps", "low_busbw_gbps", "high_busbw_gbps"):
        _number(item, path, key, null=key != "measured_busbw_gbps")
    for key in ("algorithm", "protocol", "limit"):
        _text(item, path, key, MAX_NAME, null=True)
    if item.get("pair") is not None:
        _pair(item, path)
    judged = required(item, "judged", bool, path)
    verdict = _text(item, path, "verdict", MAX_NAME)
    if verdict not in VERDICTS:
        raise ReportError((*path, "verdict"), f"{name(path, 'verdict')} {visible(verdict)!r} is not one of: {', '.join(VERDICTS)}")
    listed = item.get("hosts")
    if first is not None and isinstance(listed, list) and tuple(listed) == first.shape[1]:
        hosts = first.shape[1]  # checked with the run's first size, which lists them too
    else:
        hosts = _hosts(item, path)
    shape = (collective, hosts, _devices(item, path), nodes, per_node)
    if first is not None and shape != first.shape:
        key = ("collective", "hosts", "devices", "nodes", "gpus_per_node")[next(i for i in range(5) if shape[i] != first.shape[i])]
        raise ReportError((*path, key), f"{name(path, key)} differs from the first record of run {label!r}: "
                                        "the sizes of one run ran on the same GPUs")
    limit = item.get("limit")
    return Record(label, shape, judged, verdict, limit if isinstance(limit, str) else None, (file, line))


def _run(records: list[Record]) -> Run:
    first = records[0]
    collective, hosts, devices, _, per_node = first.shape
    judged = [r for r in records if r.judged and r.verdict in ("within", "below", "above")]
    below = next((r.where for r in judged if r.verdict == "below"), None)
    outcome = "slow" if below is not None else "within" if judged else "unchecked"
    over_nvlink = bool(judged) and all(r.limit in NVLINK_TIERS for r in judged)
    return Run(first.label, collective, hosts, devices, per_node, outcome, over_nvlink, below)


# ---------------------------------------------------------------------- one key


def _text(item: dict[str, Any], path: Path, key: str, limit: int, null: bool = False) -> str:
    value = item.get(key) if null else required(item, key, str, path)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReportError((*path, key), f"{name(path, key)} is {kind_of(value)}, not a string or null")
    if len(value) > limit:
        raise ReportError((*path, key), f"{name(path, key)} is a string of {len(value)} characters, more than {limit}")
    return value


def _integer(item: dict[str, Any], path: Path, key: str, low: int, high: int, null: bool = False) -> int:
    if null and item.get(key, 0) is None:
        return 0
    value: int = required(item, key, int, path)
    if not low <= value <= high:
        raise ReportError((*path, key), f"{name(path, key)} is {value}, not an integer from {low} to {high}")
    return value


def _number(item: dict[str, Any], path: Path, key: str, null: bool = False) -> float:
    """A bandwidth in GB/s: finite, from 0 to MAX_GBPS (JSON's 1e400 is read as infinity, NaN as nan)."""
    if key not in item:
        raise ReportError(path, f"{name(path, key)} is missing")
    value = item[key]
    if value is None and null:
        return 0.0
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ReportError((*path, key), f"{name(path, key)} is {kind_of(value)}, not a number{' or null' if null else ''}")
    if not (math.isfinite(value) and 0 <= value <= MAX_GBPS):
        raise ReportError((*path, key), f"{name(path, key)} is {value!r}, not a finite number from 0 to {MAX_GBPS:.0f} (GB/s)")
    return float(value)


def _hosts(item: dict[str, Any], path: Path) -> tuple[str, ...]:
    hosts = required(item, "hosts", list, path)
    at: Path = (*path, "hosts")
    if len(hosts) > MAX_HOSTS:
        raise ReportError(at, f"{name(path, 'hosts')} has {len(hosts)} entries, more than {MAX_HOSTS}")
    if set(map(type, hosts)) <= {str} and all(map(HOST_NAME.fullmatch, hosts)) and len(set(hosts)) == len(hosts):
        return tuple(hosts)  # the common case, checked at C speed; else the loop says where
    seen: set[str] = set()
    for index, host in enumerate(hosts):
        host_name(host, (*at, index))
        if host in seen:
            raise ReportError((*at, index), f"{name(at, index)} {host!r} is listed twice")
        seen.add(host)
    raise AssertionError("unreachable: the hosts passed their checks")


def _devices(item: dict[str, Any], path: Path) -> tuple[int, ...]:
    """`devices`, which older reports do not have (no device, then: no NIC is named from the run)."""
    devices = item.get("devices", [])
    at: Path = (*path, "devices")
    if not isinstance(devices, list):
        raise ReportError(at, f"{name(path, 'devices')} is {kind_of(devices)}, not an array")
    if len(devices) > MAX_DEVICES:
        raise ReportError(at, f"{name(path, 'devices')} has {len(devices)} entries, more than {MAX_DEVICES}")
    if set(map(type, devices)) <= {int} and (not devices or (0 <= min(devices) and max(devices) < MAX_DEVICES)):
        return tuple(sorted(set(devices)))  # the common case, checked at C speed; else the loop says where
    for index, device in enumerate(devices):
        if not isinstance(device, int) or isinstance(device, bool):
            raise ReportError((*at, index), f"{name(at, index)} is {kind_of(device)}, not an integer")
        if not 0 <= device < MAX_DEVICES:
            raise ReportError((*at, index), f"{name(at, index)} is {device}, not a device number from 0 to {MAX_DEVICES - 1}")
    return tuple(sorted(set(devices)))


def _pair(item: dict[str, Any], path: Path) -> None:
    """nvbandwidth's `pair`: two names (`host`, `gpu3`)."""
    pair = item["pair"]
    at: Path = (*path, "pair")
    if not isinstance(pair, list) or len(pair) != 2:
        what = f"an array of {len(pair)}" if isinstance(pair, list) else kind_of(pair)
        raise ReportError(at, f"{name(path, 'pair')} is {what}, not an array of two names")
    for index, part in enumerate(pair):
        if not isinstance(part, str) or len(part) > MAX_NAME:
            what = kind_of(part) if not isinstance(part, str) else f"a string of {len(part)} characters"
            raise ReportError((*at, index), f"{name(at, index)} is {what}, not a name of at most {MAX_NAME} characters")
