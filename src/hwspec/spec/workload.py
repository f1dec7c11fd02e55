"""Workload files (`kind: workload`) in the spec language: a DLRM-style recommendation model to
estimate on a platform. `WorkloadSpec` is the file as written; `validate_workload` validates a
workload document and checks what the models cannot (unique table names, the cross network with
`dcnv2`, caches that fit). The resolved `Workload`, with its per-sample sizes, is
`hwspec.model.workload`'s.

Conventions (DLRM's own): `bottom_mlp` and `top_mlp` list layer widths *including the input*
(DLRM's `--arch-mlp-bot 13-512-256-64`); one layer is a matrix multiply of `in x out` weights
plus `out` biases, 2 x in x out FLOPs per sample forward. A `dcnv2` interaction is TorchRec's
`LowRankCrossNet` (MLPerf DLRM-DCNv2's): N = the concatenated width, per layer
x_{l+1} = x_0 * (W_l (V_l x_l) + b_l) + x_l with V_l r x N, W_l N x r, b_l N.

Two choices move results by up to 2x and have no default: the id width
(`embeddings.index_dtype`) and the dense-gradient dtype (`communication.allreduce`); a file that
omits one is told where.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BeforeValidator, Field, StrictBool, model_validator
from pydantic_core import PydanticCustomError

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity
from hwspec.source.expand import Expanded
from hwspec.source.loader import SourceDoc
from hwspec.spec import checks
from hwspec.spec.models import Id, OptionalWholeNumber, RealNumber, Spec, SpecVersion, WholeNumber
from hwspec.spec.translate import DataPath, Where, Written, dotted, validate_document

StorageDtype = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"]
CommDtype = Literal["fp32", "fp16", "bf16", "fp8"]
IndexDtype = Literal["int32", "int64"]
Sharding = Literal["auto", "table-wise", "row-wise", "column-wise", "data-parallel", "table-row-wise"]
"""How a table group is sharded: `table-row-wise` is the paper's hierarchical plan (TorchRec's
TWRW): each table on one node, row-wise over that node's GPUs. `auto` (the default) leaves the
choice to the estimate's planner (`hwspec.perf.planner`), which reports what it chose."""

AUTO: Final = "auto"
"""The sharding of a table group the planner chooses."""
Optimizer = Literal["sgd", "rowwise-adagrad", "adagrad"]
Placement = Literal["gpu", "cpu-host"]
"""Where the tables live and are looked up: `gpu` in the GPUs' HBM (spilling to host DDR and SSD
behind PCIe), `cpu-host` in the CPU sockets' DDR, looked up by the CPUs (Zion's design: pooled
embeddings reach the GPUs over PCIe and, across nodes, over the NICs)."""

MlpWidth = Annotated[int, Field(ge=1, le=1_000_000), BeforeValidator(checks.whole_number)]
"""One layer width of an MLP: checked where it is written, and stated in the JSON Schema."""


MAX_BATCH = 10**9
"""The largest batch a workload may give (global or per GPU): a billion samples per iteration,
some 10,000 times the largest MLPerf DLRM batch. A larger one is refused at its line by
`validate`: the estimate's times and rates would overflow to inf and NaN (`compare` failed on them)."""


class BatchSpec(Spec):
    """The batch: give `global` (samples per iteration over all GPUs) or `per_gpu` (local batch)."""

    global_: OptionalWholeNumber = Field(None, alias="global", ge=1, le=MAX_BATCH, description="Samples per iteration over all GPUs.")
    per_gpu: OptionalWholeNumber = Field(None, ge=1, le=MAX_BATCH, description="Samples per iteration per GPU (local batch).")

    @model_validator(mode="after")
    def _one(self) -> BatchSpec:
        if (self.global_ is None) == (self.per_gpu is None):
            raise PydanticCustomError("hwspec_batch", "give either 'global' or 'per_gpu', not both or neither")
        return self


class CacheSpec(Spec):
    """A software cache of a table's hottest rows in HBM, in front of host DDR/SSD (the paper's
    cache over HBM/DDR/SSD; TorchRec's UVM caching): `hbm_fraction` of each GPU's HBM, and the
    access skew: the rows' popularity is Zipf with exponent `skew` (0: uniform)."""

    hbm_fraction: RealNumber = Field(gt=0, le=1, description="Fraction of each GPU's HBM that caches rows (within hbm_share).")
    skew: RealNumber = Field(ge=0, le=10, description="Zipf exponent s of row popularity: the k-th hottest row is "
                                                      "accessed in proportion to k^-s (0: uniform).")


class HierAutoSpec(Spec):
    """HugeCTR's `hier_auto` sharding plan (`SHARDING_PLAN=hier_auto`), over the table-row-wise
    tables: table-wise across nodes, row-wise within a node, and a hot table split over several
    nodes where the planner's cost says so (`hwspec.perf.hier_auto`)."""

    table_cost: RealNumber = Field(gt=0, le=1_000_000, description="The planner's cost of one table shard on a node, "
                                                                   "in multi-hot units: --mem_comm_bw_ratio / "
                                                                   "--mem_comm_work_ratio (HugeCTR's defaults 80 / 4).")


class TableSpec(Spec):
    """`count` identical embedding tables."""

    name: Id = Field(description="Name of the table group, unique in the file.")
    count: WholeNumber = Field(1, ge=1, le=1_000_000, description="Identical tables in this group.")
    rows: WholeNumber = Field(ge=1, le=10**13, description="Rows (hash size) per table.")
    dim: WholeNumber = Field(ge=1, le=65536, description="Embedding dimension.")
    pooling: RealNumber = Field(gt=0, le=1_000_000, description="Average lookups per sample (pooling factor).")
    precision: StorageDtype | None = Field(None, description="Storage dtype; default: embeddings.precision.")
    sharding: Sharding | None = Field(None, description="Default: embeddings.sharding.")
    column_shards: WholeNumber = Field(2, ge=1, le=65536, description="Column shards per table (column-wise sharding "
                                                                      "only; the planner chooses its own).")
    cache: CacheSpec | None = Field(None, description="This group's software cache; default: embeddings.cache.")


class EmbeddingsSpec(Spec):
    """The embedding tables and how they are stored, sharded and trained."""

    precision: StorageDtype = Field("fp32", description="Storage dtype of every table (a table may say its own).")
    sharding: Sharding = Field(AUTO, description="Sharding of every table (a table may say its own: a mix); "
                                                 "auto (the default): the estimate plans it.")
    optimizer: Optimizer = Field("rowwise-adagrad", description="Sparse optimizer: its state per row is stored and updated.")
    placement: Placement = Field("gpu", description="Where the tables live and are looked up: the GPUs' HBM (spilling to "
                                                    "host DDR and SSD), or the CPU sockets' DDR (cpu-host, Zion's design).")
    index_dtype: IndexDtype = Field(description="Dtype of the sparse feature ids in the input (int32 or int64: required, "
                                                "it sizes the input AlltoAll, the host copy and ingestion).")
    hbm_share: RealNumber = Field(0.8, gt=0, le=1, description="Fraction of each GPU's HBM the tables may use.")
    cache: CacheSpec | None = Field(None, description="A software cache of the hottest rows in HBM, the tables behind it in "
                                                      "host DDR/SSD (a table group may say its own); none: tables fill "
                                                      "HBM, then host DDR, then SSD.")
    gradient_buffer: StrictBool = Field(
        False, description="The backward writes each touched row's reduced gradient to an fp32 buffer that the optimizer "
                           "reads back (HugeCTR's embedding collection); false: the reduction feeds the update in one "
                           "kernel (FBGEMM's fused backward, TorchRec).")
    hier_auto: HierAutoSpec | None = Field(None, description="HugeCTR's hier_auto plan for the table-row-wise tables "
                                                             "on a cluster: it may split a hot table over several "
                                                             "nodes; none: each table on one node.")
    tables: list[TableSpec] = Field(min_length=1, description="Table groups: count identical tables each.")


class CommunicationSpec(Spec):
    """Dtypes on the wire (quantized communication): pooled embeddings forward, their gradients
    backward, and the dense-gradient AllReduce."""

    forward: CommDtype = Field("fp32", description="Dtype of the pooled embeddings sent forward.")
    backward: CommDtype = Field("fp32", description="Dtype of their gradients sent backward.")
    allreduce: CommDtype = Field(description="Dtype of the dense gradients in the AllReduce (required: it sizes the "
                                             "dense-gradient AllReduce).")


class CrossNetSpec(Spec):
    """DCNv2's cross network: `layers` cross layers over the concatenated features, each low rank
    (`low_rank` r: TorchRec's LowRankCrossNet, MLPerf's `--dcn_low_rank_dim`) or full rank when
    `low_rank` is omitted (TorchRec's CrossNet, an N x N matrix per layer)."""

    layers: WholeNumber = Field(ge=1, le=1000, description="Cross layers (MLPerf's --dcn_num_layers).")
    low_rank: OptionalWholeNumber = Field(None, ge=1, le=1_000_000,
                                          description="Rank r of each layer's W V factorization; omitted: full rank.")


class ConvergenceSpec(Spec):
    """Samples the model trains on to reach its quality target: `samples`, or `epochs` x
    `dataset_samples` (MLPerf's reference convergence points are given in epochs)."""

    samples: OptionalWholeNumber = Field(None, ge=1, le=10**18, description="Samples to converge.")
    epochs: RealNumber | None = Field(None, gt=0, le=1_000_000, description="Epochs to converge (with dataset_samples).")
    dataset_samples: OptionalWholeNumber = Field(None, ge=1, le=10**18, description="Samples in one epoch.")

    @model_validator(mode="after")
    def _one(self) -> ConvergenceSpec:
        by_epochs = self.epochs is not None or self.dataset_samples is not None
        if (self.samples is None) == (not by_epochs) or (by_epochs and (self.epochs is None or self.dataset_samples is None)):
            raise PydanticCustomError("hwspec_convergence",
                                      "give either 'samples', or 'epochs' and 'dataset_samples'")
        return self


class WorkloadSpec(Spec):
    """A workload file (`kind: workload`)."""

    hwspec: SpecVersion
    kind: Literal["workload"]
    name: Id = Field(description="Name of the workload (letters, digits, '-', '_').")
    title: str | None = None
    description: str | None = None
    sources: dict[str, str] = Field(default_factory=dict)
    batch: BatchSpec = Field(description="Samples per iteration: global or per GPU.")
    compute_dtype: Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8"] = Field(
        "fp32", description="Dtype of the MLP math; must have a peak on the platform's GPUs.")
    bottom_mlp: list[MlpWidth] = Field(min_length=2, description="Layer widths including the input (dense features first).")
    top_mlp: list[MlpWidth] = Field(min_length=2, description="Layer widths including the input (the interaction output).")
    interaction: Literal["dot", "cat", "dcnv2"] = Field(
        "dot", description="Feature interaction: pairwise dot products, concatenation, or DCNv2 cross layers over the concatenation.")
    cross: CrossNetSpec | None = Field(None, description="The cross network of a dcnv2 interaction (required with it, only with it).")
    embeddings: EmbeddingsSpec = Field(description="The embedding tables and how they are stored, sharded and trained.")
    communication: CommunicationSpec = Field(description="Dtypes on the wire (quantized communication); allreduce is required.")
    convergence: ConvergenceSpec | None = Field(None, description="Samples to converge: turns each QPS into a time to train.")
    pipeline: StrictBool = Field(True, description="The input AlltoAll of batch i+1 overlaps batch i's MLPs (the paper's "
                                             "pipelining, TorchRec's TrainPipelineSparseDist); false: the GPU waits for it.")
    inter_iteration_overlap: StrictBool = Field(
        False, description="The pooled-embedding AlltoAll forward of iteration i+1 runs beside iteration i's top-MLP "
                           "backward; false: only beside the bottom MLP. (HugeCTR's train_inter_iteration_overlap with "
                           "its embedding collection prefetches only the next batch's ids, which `pipeline` covers.)")
    allreduce_overlap: Literal["backward", "embedding_update"] = Field(
        "backward", description="What the dense-gradient AllReduce runs beside: the backward pass (PyTorch DDP's "
                                "buckets, sent as their gradients are ready), or only the embedding update after it "
                                "(HugeCTR: the AllReduce starts when the backward pass ends).")
    nccl: Literal["2.7.5", "2.20.3"] = Field(
        "2.20.3", description="The NCCL release whose cost model (src/graph/tuning.cc) prices the collectives: 2.7.5 "
                              "(2020-21, the paper's era) or 2.20.3 (2024, the MLPerf v3.0-v5.0 era).")


def validate_workload(doc: SourceDoc, expanded: Expanded) -> WorkloadSpec:
    """The workload in `expanded` (the expanded `doc`) as a `WorkloadSpec`. Raises HwspecError
    with every problem found: E1xx (shape and types), E202 (a table name used twice), E110 (a
    cross network without `dcnv2` or the other way round, a cache where none can be)."""
    spec = validate_document(WorkloadSpec, doc, expanded)
    where = Written(doc, expanded)
    errors: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(spec.embeddings.tables):
        if table.name in seen:
            pos = where.value(("embeddings", "tables", index, "name"))
            errors.append(Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, Code.DUPLICATE_ID,
                                     f"embeddings.tables[{index}]: duplicate table name '{table.name}' "
                                     f"(also used by embeddings.tables[{seen[table.name]}])"))
        seen.setdefault(table.name, index)
    errors += _cross_diagnostics(spec, where)
    errors += _cache_diagnostics(spec, where)
    if errors:
        raise HwspecError(errors)
    return spec


def _cross_diagnostics(spec: WorkloadSpec, where: Where) -> list[Diagnostic]:
    """E110 where `cross` and `interaction: dcnv2` do not come together: at `interaction` when
    dcnv2 has no cross network, at `cross` when another interaction has one."""
    if (spec.interaction == "dcnv2") == (spec.cross is not None):
        return []
    if spec.cross is None:
        pos = where.value(("interaction",))
        return [Diagnostic(where.file, pos.line, pos.col, Severity.ERROR, Code.WRONG_VALUE,
                           "interaction: dcnv2 needs its cross network, 'cross: {layers: L, low_rank: r}'",
                           "MLPerf DLRM-DCNv2: cross: {layers: 3, low_rank: 512}")]
    pos = where.value(("cross",))
    return [Diagnostic(where.file, pos.line, pos.col, Severity.ERROR, Code.WRONG_VALUE,
                       f"cross: a cross network belongs to interaction: dcnv2, not {spec.interaction}",
                       "say 'interaction: dcnv2', or remove 'cross'")]


def _cache_diagnostics(spec: WorkloadSpec, where: Where) -> list[Diagnostic]:
    """E110 where a cache cannot be: with `placement: cpu-host` (the cache is in the GPUs' HBM),
    or larger than the tables' share of HBM (`hbm_fraction` > `hbm_share`)."""
    emb = spec.embeddings
    stated: list[tuple[DataPath, CacheSpec]] = [(("embeddings", "cache"), emb.cache)] if emb.cache else []
    stated += [(("embeddings", "tables", i, "cache"), t.cache) for i, t in enumerate(emb.tables) if t.cache]
    found: list[Diagnostic] = []
    for path, cache in stated:
        if emb.placement == "cpu-host":
            pos = where.value(path)
            found.append(Diagnostic(where.file, pos.line, pos.col, Severity.ERROR, Code.WRONG_VALUE,
                                    f"{dotted(path)}: the software cache is in the GPUs' HBM, but the tables are "
                                    "looked up on the CPU hosts (placement: cpu-host)",
                                    "use placement: gpu, or remove the cache"))
        elif cache.hbm_fraction > emb.hbm_share:
            pos = where.value((*path, "hbm_fraction"))
            found.append(Diagnostic(where.file, pos.line, pos.col, Severity.ERROR, Code.WRONG_VALUE,
                                    f"{dotted(path)}.hbm_fraction: the cache takes {cache.hbm_fraction:g} of HBM, more than "
                                    f"the tables' embeddings.hbm_share {emb.hbm_share:g}",
                                    "the cache is part of the tables' share of HBM: lower hbm_fraction or raise hbm_share"))
    return found
