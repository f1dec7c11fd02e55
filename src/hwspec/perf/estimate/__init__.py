"""Per-iteration time bounds of a DLRM-style workload on a platform, term by term.

`estimate(figures, workload)` is a pure function of the platform's `Figures` (bytes, bytes/s
per direction, FLOP/s) and a resolved `Workload`. Every term is a time in seconds per
iteration for the busiest GPU (row-wise and data-parallel work is even; table-wise tables and
column-wise shards are indivisible, so the busiest GPU carries at least the `busiest` bound),
computed as an amount divided by the rate that bounds it:

  embedding lookups  bytes touched / tier bandwidth (HBM; host DDR and SSD across PCIe when the
                     tables spill), forward and backward
  MLP                FLOPs / dense peak of the compute dtype, forward and backward (2 x forward)
  collectives        nccl-tests buffer S / algbw bound (intra-node bound on a node, the
                     hierarchical cluster bound on a cluster)
  input              bytes / PCIe host link (host-to-device copy) and / ingestion NIC share

"serial" adds every term (nothing overlaps); "overlapped" lets the four resources (GPU memory
and compute, the collective network, the PCIe host link, the ingestion network) work at once
and takes the busiest one. QPS bounds are global batch / time. docs/estimates.md gives the
formulas.

The modules, each importing only those above it:

  term        resources, the term catalogue and the `Term` record
  shards      the busiest GPU's share of indivisible (table-wise, table-row-wise) work
  placement   memory tiers, the software cache's share of HBM, cpu-host placement
  lookups     embedding lookup and update terms over the placement
  exchanges   the collective terms of the embedding exchanges, table-row-wise included
  terms       every bound term assembled (`_terms`), and one table's (`table_terms`)
  achievable  the achieved rates of the expected iteration
  nccl        NCCL's per-call latency and algorithm choice
  expected    the expected iteration
  document    `estimate` and `estimate_plan`: the estimate document
  report      the document as text
"""

# `touched` is the cache module's (access-unit rounding); tests import it from here, as before the split.
from hwspec.perf.cache import touched
from hwspec.perf.estimate.achievable import achievable, achieved_algbw
from hwspec.perf.estimate.document import estimate, estimate_plan, time_to_train_seconds
from hwspec.perf.estimate.exchanges import cross_node_alltoall_algbw, inter_node_share
from hwspec.perf.estimate.expected import bottom_mlp_share
from hwspec.perf.estimate.nccl import alltoall_latency, collective_seconds, collectives_per_iteration, nccl_comm
from hwspec.perf.estimate.placement import host_figures, placement
from hwspec.perf.estimate.report import qps, text_report
from hwspec.perf.estimate.shards import busiest, with_table_row_wise
from hwspec.perf.estimate.term import RESOURCES, TERMS, Term
from hwspec.perf.estimate.terms import table_terms
from hwspec.perf.tables import ms

__all__ = [
    "RESOURCES",
    "TERMS",
    "Term",
    "achievable",
    "achieved_algbw",
    "alltoall_latency",
    "bottom_mlp_share",
    "busiest",
    "collective_seconds",
    "collectives_per_iteration",
    "cross_node_alltoall_algbw",
    "estimate",
    "estimate_plan",
    "host_figures",
    "inter_node_share",
    "ms",
    "nccl_comm",
    "placement",
    "qps",
    "table_terms",
    "text_report",
    "time_to_train_seconds",
    "touched",
    "with_table_row_wise",
]
