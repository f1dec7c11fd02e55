"""The acceptance figures against published measurements: every output in
shared/data/real-measurements/ and tests/data/measurements/ (sources in each folder's README),
each with the platform file that describes its machine where one does, how the run is read, and
what the thread established about its health.

`validate()` runs `hwspec diff`'s comparison on each; `table()` renders the rows as
docs/acceptance.md's validation table (tests/test_acceptance_validation.py checks both). Nothing
here tunes a figure: the measurements validate, they are never fitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import hwspec
from hwspec.acceptance import compare
from hwspec.acceptance.results import read_result
from tests.shared_data import REAL_MEASUREMENTS

ROOT = Path(__file__).resolve().parent.parent
RESEARCH = ROOT / "tests" / "data" / "measurements"

MATCH, NEAREST, FIXTURE, NONE, TABLE = "match", "nearest", "fixture", "none", "table"
"""How a platform file relates to the measured machine: it describes that machine (a shipped
platform); it is the nearest shipped platform, not the same machine (said why); a test fixture
describing it; no platform describes it (its parts are not in the catalogue); or the file is a
vendor's summary table, not a tool's output (kept as the source of a band, not read)."""


@dataclass(frozen=True)
class Case:
    """One published output: `name` in `folder`, compared with `platform` (None: none
    describes the machine) as `args` say (--nodes, --gpus-per-node, --test), `relation` and
    `state` (healthy, or degraded and why), `note` what a reader needs to know."""

    name: str
    folder: str
    platform: str | None
    relation: str
    state: str
    note: str
    nodes: int | None = None
    gpus_per_node: int | None = None
    test: str | None = None
    miss: str = ""
    """Why a healthy run of a machine a shipped platform describes is more than 15% from its
    expected figure: the validation's known misses, said, never hidden."""

    @property
    def path(self) -> Path:
        return (REAL_MEASUREMENTS if self.folder == "shared" else RESEARCH) / self.name


S, R = "shared", "research"
HEALTHY = "healthy"

CASES = (
    # --- machines a shipped platform describes
    Case("nebius-h100-2n-ib-vm-allreduce.txt", S, "platforms/hgx-h100.yaml", MATCH, HEALTHY,
         "Nebius H100 VMs, 8 x 400G NDR each; NVLSTree", nodes=2, test="all_reduce"),
    Case("nvbandwidth-h100-8gpu-ce.txt", S, "platforms/hgx-h100.yaml", MATCH, HEALTHY,
         "8 x H100 SXM, PCIe Gen5 x16 host links; copies one GPU (pair) at a time"),
    Case("cw-h100-8n-sharp-allreduce.txt", R, "platforms/dgx-h100-8.yaml", MATCH, HEALTHY,
         "CoreWeave HGX H100, 8 nodes; the author's assembled example", nodes=8, test="all_reduce"),
    Case("amd-mi300x-aac8-1n-allreduce.txt", R, "platforms/mi300x-oam.yaml", MATCH, HEALTHY,
         "8 x MI300X; no fleet threshold of an AMD generation is cited: shown, not judged"),
    Case("amd-mi300x-aac10-2n-allreduce.txt", R, "platforms/mi300x-oam.yaml", MATCH, HEALTHY,
         "8 x MI300X, 8 x RoCE NICs each (speed not stated: taken as the platform's 400G)"),
    Case("cw-gb200-nvl72-1rack-allreduce.txt", R, "platforms/gb200-nvl72.yaml", MATCH, HEALTHY,
         "CoreWeave GB200 NVL72, one rack (MNNVL), NCCL 2.26.2", nodes=18, test="all_reduce"),
    Case("cw-gb200-nvl72-2rack-allreduce.txt", R, "platforms/gb200-nvl72-x4.yaml", MATCH, HEALTHY,
         "two of its racks, NCCL 2.26.2", nodes=36, test="all_reduce",
         miss="Blackwell's NVLS rate is one weak figure (8 x B200, NCCL 2.27.1, nccl#1807); these GB200 racks on NCCL 2.26.2 "
              "run 11-14% below it, and the drop from one rack to two (3%) is not modelled"),
    Case("aws-p5-2n-efa-allreduce.txt", R, "platforms/aws-p5-48xlarge.yaml", MATCH, HEALTHY,
         "EFA: no cited measurement, unchecked", nodes=2, test="all_reduce"),
    Case("gcp-a3mega-2n-allreduce.txt", R, "platforms/gcp-a3-megagpu-8g.yaml", MATCH, HEALTHY,
         "GPUDirect-TCPXO: no cited measurement, unchecked", nodes=2, test="all_reduce"),
    # --- the nearest shipped platform, not the same machine
    Case("gcp-a3ultra-h200-2n-1gpu-gib-allgather.txt", S, "platforms/hgx-h200.yaml", NEAREST, HEALTHY,
         "A3 Ultra: RoCE through Google's gIB plugin in GKE pods, not NDR InfiniBand", test="all_gather"),
    Case("gcp-a4-b200-2n-1gpu-gib-allgather.txt", S, "platforms/hgx-b200.yaml", NEAREST, HEALTHY,
         "A4: RoCE through gIB in GKE pods, not DGX B200's InfiniBand", test="all_gather"),
    Case("oci-bm-gpu4-a100-2n-roce-allreduce.txt", S, "platforms/zionex.yaml", NEAREST, HEALTHY,
         "OCI BM.GPU4.8: 16 x 100G RoCE ports against ZionEX's 8 x 200G (the same 25 GB/s per GPU)"),
    Case("oci-gb300-1tray-allreduce.txt", S, "platforms/gb200-nvl72.yaml", NEAREST, HEALTHY,
         "GB300 trays: NVLink5 as GB200's", nodes=1, gpus_per_node=4),
    Case("oci-gb300-2tray-allreduce.txt", S, "platforms/gb200-nvl72.yaml", NEAREST, HEALTHY,
         "GB300 trays, MNNVL", nodes=2, gpus_per_node=4),
    Case("oci-gb300-16tray-allreduce.txt", S, "platforms/gb200-nvl72.yaml", NEAREST, HEALTHY,
         "GB300 trays, MNNVL", nodes=16, gpus_per_node=4),
    Case("oci-gb300-32tray-allreduce.txt", S, "platforms/gb200-nvl72-x4.yaml", NEAREST, HEALTHY,
         "GB300, two racks over RoCE (8 x 400G per tray, not GB200's 4 x IB)", nodes=32, gpus_per_node=4),
    Case("oci-gb300-1tray-alltoall.txt", S, "platforms/gb200-nvl72.yaml", NEAREST, HEALTHY,
         "GB300 trays", nodes=1, gpus_per_node=4),
    Case("oci-gb300-2tray-alltoall.txt", S, "platforms/gb200-nvl72.yaml", NEAREST, HEALTHY,
         "GB300 trays, MNNVL", nodes=2, gpus_per_node=4),
    Case("oci-gb300-16tray-alltoall.txt", S, "platforms/gb200-nvl72.yaml", NEAREST, HEALTHY,
         "GB300 trays, MNNVL", nodes=16, gpus_per_node=4),
    Case("oci-gb300-32tray-alltoall.txt", S, "platforms/gb200-nvl72-x4.yaml", NEAREST, HEALTHY,
         "GB300, two racks over RoCE, not GB200's IB", nodes=32, gpus_per_node=4),
    # --- described by a test fixture
    Case("nccltests380-h200-2n-4cx7-baremetal-allreduce.txt", S, "tests/fixtures/acceptance/hgx-h200-4nic.yaml", FIXTURE,
         HEALTHY, "4 x CX-7 per 8 H200s (the author: 'close to the expected peak')", nodes=2),
    Case("nccltests380-h200-2n-4cx7-vm-passthrough-allreduce.txt", S, "tests/fixtures/acceptance/hgx-h200-4nic.yaml",
         FIXTURE, "degraded, cause not established", "the same hosts as VMs: 184 against 320 GB/s", nodes=2),
    # --- no platform describes the machine
    Case("amd-mi325x-aac11-1n-allreduce.txt", S, None, NONE, HEALTHY, "MI325X: no part in the catalogue"),
    Case("amd-mi325x-aac11-2n-allreduce.txt", S, None, NONE, HEALTHY, "MI325X, Thor2 NICs: no parts"),
    Case("amd-mi325x-aac11-4n-allreduce.txt", S, None, NONE, HEALTHY, "MI325X, Thor2 NICs: no parts"),
    Case("amd-mi325x-aac11-8n-allreduce.txt", S, None, NONE, HEALTHY, "MI325X, Thor2 NICs: no parts"),
    Case("amd-mi355x-pollara-aac14-2n-allreduce.txt", S, None, NONE, HEALTHY, "MI355X, Pollara 400: no parts"),
    Case("oci-mi355x-cx7-1n-allreduce.txt", S, None, NONE, HEALTHY, "MI355X: no part"),
    Case("oci-mi355x-cx7-1n-alltoall.txt", S, None, NONE, HEALTHY, "MI355X: no part"),
    Case("oci-mi355x-pollara-1n-allreduce.txt", S, None, NONE, HEALTHY, "MI355X: no part"),
    Case("oci-mi355x-pollara-2n-allreduce.txt", S, None, NONE, HEALTHY, "MI355X, Pollara 400: no parts"),
    Case("oci-mi355x-pollara-2n-alltoall.txt", S, None, NONE, HEALTHY, "MI355X, Pollara 400: no parts"),
    Case("oci-mi355x-pollara-4n-allreduce.txt", S, None, NONE, HEALTHY, "MI355X, Pollara 400: no parts"),
    Case("oci-mi355x-pollara-4n-alltoall.txt", S, None, NONE, HEALTHY, "MI355X, Pollara 400: no parts"),
    Case("oci-b300-1n-allreduce.txt", S, None, NONE, HEALTHY, "B300: no part"),
    Case("oci-b300-1n-alltoall.txt", S, None, NONE, HEALTHY, "B300: no part"),
    Case("oci-b300-2n-allreduce.txt", S, None, NONE, HEALTHY, "B300: no part"),
    Case("oci-b300-2n-alltoall.txt", S, None, NONE, HEALTHY, "B300: no part"),
    Case("oci-gb300-nvbandwidth-sum.txt", S, None, NONE, HEALTHY, "SUM lines only (no matrix), GB300"),
    Case("aws-p4de-2n-efa-allreduce.txt", S, None, NONE, HEALTHY, "p4de (A100 80GB, 4 x 100G EFA): no platform"),
    Case("nccl527-p4dn-1to4n-efa-allreduce.txt", S, None, NONE, "as posted", "p4dn over EFA: no platform"),
    Case("gcp-a3high-gke-2n-tcpx-allgather.txt", S, None, NONE, HEALTHY, "A3 High over GPUDirect-TCPX: no platform"),
    Case("cw-gb200-nvl72-20rack-allreduce.txt", R, None, NONE, HEALTHY, "20 racks: no shipped cluster that large"),
    Case("azure-ndh100v5-1n-allreduce-table.txt", R, None, TABLE, HEALTHY,
         "Azure's table (478.87 GB/s at 8G on an ND H100 v5), the Hopper band's source"),
    Case("azure-ndh200v5-1n-allreduce-table.txt", R, None, TABLE, HEALTHY,
         "Azure's table (479.98 GB/s at 8G on an ND H200 v5), the Hopper band's source"),
    Case("azure-nda100v4-1n-allreduce-table.txt", R, None, TABLE, HEALTHY,
         "Azure's table (231.58 GB/s at 8G on an ND A100 v4), the Ampere band's source"),
    Case("azure-ndh100v5-nvbandwidth-table.txt", R, None, TABLE, HEALTHY, "Azure's table, the copy bands' source"),
    Case("azure-ndh200v5-nvbandwidth-table.txt", R, None, TABLE, HEALTHY, "Azure's table"),
    Case("azure-nda100v4-nvbandwidth-table.txt", R, None, TABLE, HEALTHY, "Azure's table (its 6.27 GB/s D2H is unexplained)"),
)


@dataclass(frozen=True)
class Row:
    """One case compared: the verdict (`clean`, `drift`, `unchecked`, or `read` where no platform
    applies), and for the largest compared size (or each copy test, averaged over its cells)
    the measured and expected figures in GB/s and the expected figure's error, (expected -
    measured) / measured; None where nothing was compared."""

    case: Case
    verdict: str
    test: str
    size: str
    measured: float | None
    expected: float | None
    algorithm: str
    limit: str

    @property
    def error(self) -> float | None:
        if self.measured is None or self.expected is None or not self.measured:
            return None
        return (self.expected - self.measured) / self.measured


VERDICTS = {compare.EXIT_CLEAN: "clean", compare.EXIT_DRIFT: "drift", compare.EXIT_UNCHECKED: "unchecked"}


def validate(case: Case) -> list[Row]:
    """`case` read and, where a platform describes its machine, compared: one row per test it holds."""
    if case.relation == TABLE:
        return [Row(case, "not read", "", "", None, None, "", "")]
    read = read_result(case.path)
    if case.platform is None:
        return [Row(case, "read" if not read.failed else "unreadable", "", "", None, None, "", "")]
    topology = hwspec.check(ROOT / case.platform).topology
    outcome = compare.check(topology, read.runs, case.nodes, case.gpus_per_node, case.test)
    verdict = VERDICTS[outcome.status]
    rows: list[Row] = []
    for test in dict.fromkeys(c.test for c in outcome.compared):
        sizes = [c for c in outcome.compared if c.test == test]
        if sizes[0].bytes is None:
            measured = sum(c.measured for c in sizes) / len(sizes)
            known = [c.figure.busbw for c in sizes if c.figure.busbw is not None]
            expected = sum(known) / len(known) if len(known) == len(sizes) else None
            rows.append(Row(case, verdict, test, "", measured / 1e9, None if expected is None else expected / 1e9, "copy",
                            sizes[0].figure.limit.tier if sizes[0].figure.limit else ""))
            continue
        last = max(sizes, key=lambda c: c.bytes or 0)
        f = last.figure
        rows.append(Row(case, verdict, test, compare.ex.size_text(last.bytes or 0), last.measured / 1e9,
                        None if f.busbw is None else f.busbw / 1e9, f"{f.algorithm}/{f.protocol}" if f.algorithm else "",
                        f.limit.tier if f.limit else ""))
    return rows or [Row(case, verdict, case.test or "", "", None, None, "", "")]


def source_of(case: Case) -> str:
    """Where the file is and where its source is listed."""
    folder = "shared/data/real-measurements" if case.folder == "shared" else "tests/data/measurements"
    return f"`{case.name}` ({folder})"


def table(rows: list[Row]) -> str:
    """The validation table of docs/acceptance.md."""
    lines = ["| output (sources in the folder's README) | platform | relation | health | test, size | measured | "
             "expected | error | verdict | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r.case
        platform = f"`{Path(c.platform).name}`" if c.platform else "-"
        args = " ".join(f"{k} {v}" for k, v in (("--nodes", c.nodes), ("--gpus-per-node", c.gpus_per_node),
                                                 ("--test", c.test)) if v is not None)
        error = "-" if r.error is None else f"{100 * r.error:+.1f}%"
        shown = f"{r.test} {r.size}".strip() or "-"
        lines.append(f"| {source_of(c)} | {platform}{' `' + args + '`' if args else ''} | {c.relation} | {c.state} | "
                     f"{shown} | {_gb(r.measured)} | {_gb(r.expected)}{' (' + r.algorithm + ', ' + r.limit + ')' if r.algorithm else ''} | "
                     f"{error} | {r.verdict} | {c.note}{'; a miss: ' + c.miss if c.miss else ''} |")
    return "\n".join(lines) + "\n"


def _gb(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
