"""Workload files (`kind: workload`): a DLRM-style recommendation model to estimate on a platform.

A workload file goes through the same loader as platforms (`hwspec.source.loader` positions,
`hwspec.source.expand` repeat blocks and annotated values, located diagnostics). `WorkloadSpec` is the
file as written; `Workload` is the resolved model with its per-sample sizes derived once:
bytes are bytes, FLOPs are floating-point operations, counts are counts. Sizes of dtypes are
`DTYPE_BYTES`.

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

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import BeforeValidator, Field, StrictBool, model_validator
from pydantic_core import PydanticCustomError

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity
from hwspec.source.expand import Expanded
from hwspec.source.loader import SourceDoc
from hwspec.spec import checks
from hwspec.spec.models import Id, OptionalWholeNumber, RealNumber, Spec, SpecVersion, WholeNumber
from hwspec.spec.translate import DataPath, dotted, validate_document

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

DTYPE_BYTES: dict[str, float] = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5,
                                 "int32": 4, "int64": 8}
"""Bytes per element of every dtype a workload names (tf32 is stored as fp32)."""

LENGTH_BYTES = 4
"""Bytes per (sample, feature) length entry of a jagged sparse input (int32 lengths)."""
LABEL_BYTES = 4
"""Bytes per sample label (fp32)."""
DENSE_INPUT_BYTES = 4
"""Bytes per dense input feature (fp32 as read from the data loader)."""
OPTIMIZER_STATE_BYTES = {"sgd": lambda dim: 0, "rowwise-adagrad": lambda dim: 4, "adagrad": lambda dim: 4 * dim}
"""Optimizer state per embedding row, bytes (fp32): none, one sum per row, one per element."""


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
                           "backward (HugeCTR's train_inter_iteration_overlap); false: only beside the bottom MLP.")
    nccl: Literal["2.7.5", "2.20.3"] = Field(
        "2.20.3", description="The NCCL release whose cost model (src/graph/tuning.cc) prices the collectives: 2.7.5 "
                              "(2020-21, the paper's era) or 2.20.3 (2024, the MLPerf v3.0-v5.0 era).")


# ---------------------------------------------------------------- resolved


@dataclass(frozen=True)
class Cache:
    """A resolved software cache (`CacheSpec`): `hbm_fraction` of each GPU's HBM, Zipf `skew`."""

    hbm_fraction: float
    skew: float


@dataclass(frozen=True)
class Table:
    """A resolved table group: the spec's values with defaults filled in."""

    name: str
    count: int
    rows: int
    dim: int
    pooling: float
    precision: str
    sharding: str
    column_shards: int
    state_bytes_per_row: float
    cache: Cache | None = None

    @property
    def row_bytes(self) -> float:
        """Bytes of one row: weights plus optimizer state."""
        return self.dim * DTYPE_BYTES[self.precision] + self.state_bytes_per_row

    @property
    def storage_bytes(self) -> float:
        """Bytes of all `count` tables (weights and optimizer state)."""
        return self.count * self.rows * self.row_bytes

    @property
    def parameters(self) -> int:
        return self.count * self.rows * self.dim


def mlp_layers(widths: list[int] | tuple[int, ...]) -> list[tuple[int, int]]:
    """(in, out) of every layer of an MLP given by its widths, input first."""
    return list(zip(widths[:-1], widths[1:]))


@dataclass(frozen=True)
class Workload:
    """A resolved workload. `locate(*path)` gives where a key is written (for diagnostics)."""

    name: str
    title: str
    file: str
    batch_global: int | None
    batch_per_gpu: int | None
    compute_dtype: str
    bottom_mlp: tuple[int, ...]
    top_mlp: tuple[int, ...]
    interaction: str
    tables: tuple[Table, ...]
    index_dtype: str
    optimizer: str
    hbm_share: float
    comm_forward: str
    comm_backward: str
    comm_allreduce: str
    assumptions: tuple[tuple[str, str], ...]
    locate: Callable[..., Location]
    kind: str = "workload"
    cross_layers: int = 0
    cross_low_rank: int | None = None
    samples_to_converge: float | None = None
    placement: str = "gpu"
    pipeline: bool = True
    nccl: str = "2.20.3"
    inter_iteration_overlap: bool = False
    gradient_buffer: bool = False

    def local_batch(self, world_size: int) -> float:
        """Samples per GPU per iteration on `world_size` GPUs (may be fractional for a global
        batch that does not divide evenly: the estimate is an average)."""
        if self.batch_per_gpu is not None:
            return float(self.batch_per_gpu)
        assert self.batch_global is not None, "a workload states one of the two batch sizes"
        return self.batch_global / world_size

    def global_batch(self, world_size: int) -> float:
        if self.batch_global is not None:
            return float(self.batch_global)
        assert self.batch_per_gpu is not None, "a workload states one of the two batch sizes"
        return float(self.batch_per_gpu * world_size)

    @property
    def dense_features(self) -> int:
        return self.bottom_mlp[0]

    @property
    def features(self) -> int:
        """Sparse features (one per table) plus the dense one, as the interaction sees them."""
        return sum(t.count for t in self.tables) + 1

    @property
    def mlp_parameters(self) -> int:
        """Weights and biases of both MLPs."""
        return sum(i * o + o for i, o in (*mlp_layers(self.bottom_mlp), *mlp_layers(self.top_mlp)))

    @property
    def mlp_flops_per_sample(self) -> float:
        """Forward FLOPs per sample of both MLPs: 2 x in x out per layer."""
        return float(sum(2 * i * o for i, o in (*mlp_layers(self.bottom_mlp), *mlp_layers(self.top_mlp))))

    @property
    def concatenated_width(self) -> int:
        """The bottom MLP's output d followed by every table's pooled embedding: d + sum(count x dim)."""
        return self.bottom_mlp[-1] + sum(t.count * t.dim for t in self.tables)

    @property
    def interaction_output_width(self) -> int:
        """Width of what the interaction hands the top MLP (DLRM's): for `cat` the concatenation,
        for `dcnv2` the same width (a cross layer maps N to N), for `dot` the bottom MLP's output d
        followed by the F(F-1)/2 pairwise dot products of the F features (no self-products)."""
        if self.interaction in ("cat", "dcnv2"):
            return self.concatenated_width
        f = self.features
        return self.bottom_mlp[-1] + f * (f - 1) // 2

    @property
    def interaction_flops_per_sample(self) -> float:
        """Forward FLOPs per sample of the interaction. `dot`: pairwise dot products of the F
        features, each of the bottom MLP's output width d: F(F-1)/2 x 2d. `cat`: none. `dcnv2`,
        per cross layer over the concatenated width N: rank r, V x then W (V x), 2Nr + 2rN, then
        bias, product with x_0 and residual, 3N; full rank 2N^2 + 3N."""
        if self.interaction == "cat":
            return 0.0
        if self.interaction == "dcnv2":
            n, r = self.concatenated_width, self.cross_low_rank
            per_layer = 4 * n * r + 3 * n if r is not None else 2 * n * n + 3 * n
            return float(self.cross_layers * per_layer)
        f, d = self.features, self.bottom_mlp[-1]
        return f * (f - 1) / 2 * 2 * d

    @property
    def interaction_parameters(self) -> int:
        """Trained dense parameters of the interaction: `dcnv2` per layer V (r x N), W (N x r)
        and bias N, 2Nr + N (full rank N^2 + N); `dot` and `cat` none."""
        if self.interaction != "dcnv2":
            return 0
        n, r = self.concatenated_width, self.cross_low_rank
        return self.cross_layers * (2 * n * r + n if r is not None else n * n + n)

    @property
    def dense_parameters(self) -> int:
        """The data-parallel model's parameters (MLPs and interaction): what the AllReduce sums."""
        return self.mlp_parameters + self.interaction_parameters

    def sharded(self, *kinds: str) -> tuple[Table, ...]:
        return tuple(t for t in self.tables if t.sharding in kinds)


def load_workload_document(doc: SourceDoc, expanded: Expanded) -> Workload:
    """Validate and resolve a workload document. Raises HwspecError with located diagnostics."""

    def locate(p: DataPath) -> Location:
        return doc.locate(expanded.written_path(p))

    spec = validate_document(WorkloadSpec, doc, expanded)
    errors: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(spec.embeddings.tables):
        if table.name in seen:
            pos = locate(("embeddings", "tables", index, "name"))
            errors.append(Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, Code.DUPLICATE_ID,
                                     f"embeddings.tables[{index}]: duplicate table name '{table.name}' "
                                     f"(also used by embeddings.tables[{seen[table.name]}])"))
        seen.setdefault(table.name, index)
    errors += _cross_diagnostics(spec, doc.file, locate)
    errors += _cache_diagnostics(spec, doc.file, locate)
    if errors:
        raise HwspecError(errors)
    emb = spec.embeddings
    state = OPTIMIZER_STATE_BYTES[emb.optimizer]
    tables = tuple(Table(name=t.name, count=t.count, rows=t.rows, dim=t.dim, pooling=t.pooling,
                         precision=t.precision or emb.precision, sharding=t.sharding or emb.sharding,
                         column_shards=t.column_shards, state_bytes_per_row=state(t.dim),
                         cache=_cache(t.cache or emb.cache))
                   for t in emb.tables)
    assumptions = tuple(sorted((dotted(path), note) for path, note in _assumed(expanded)))
    workload = Workload(
        name=spec.name, title=spec.title or spec.name, file=doc.file,
        batch_global=spec.batch.global_, batch_per_gpu=spec.batch.per_gpu, compute_dtype=spec.compute_dtype,
        bottom_mlp=tuple(spec.bottom_mlp), top_mlp=tuple(spec.top_mlp), interaction=spec.interaction,
        tables=tables, index_dtype=emb.index_dtype, optimizer=emb.optimizer, hbm_share=emb.hbm_share,
        comm_forward=spec.communication.forward, comm_backward=spec.communication.backward,
        comm_allreduce=spec.communication.allreduce, assumptions=assumptions,
        locate=lambda *path: locate(tuple(path)),
        cross_layers=spec.cross.layers if spec.cross else 0, cross_low_rank=spec.cross.low_rank if spec.cross else None,
        samples_to_converge=_samples_to_converge(spec.convergence),
        placement=emb.placement, pipeline=spec.pipeline, nccl=spec.nccl,
        inter_iteration_overlap=spec.inter_iteration_overlap, gradient_buffer=emb.gradient_buffer)
    _check_top_mlp_input(workload)
    return workload


def _cross_diagnostics(spec: WorkloadSpec, file: str, locate: Callable[[DataPath], Location]) -> list[Diagnostic]:
    """E110 where `cross` and `interaction: dcnv2` do not come together: at `interaction` when
    dcnv2 has no cross network, at `cross` when another interaction has one."""
    if (spec.interaction == "dcnv2") == (spec.cross is not None):
        return []
    if spec.cross is None:
        pos = locate(("interaction",))
        return [Diagnostic(file, pos.line, pos.col, Severity.ERROR, Code.WRONG_VALUE,
                           "interaction: dcnv2 needs its cross network, 'cross: {layers: L, low_rank: r}'",
                           "MLPerf DLRM-DCNv2: cross: {layers: 3, low_rank: 512}")]
    pos = locate(("cross",))
    return [Diagnostic(file, pos.line, pos.col, Severity.ERROR, Code.WRONG_VALUE,
                       f"cross: a cross network belongs to interaction: dcnv2, not {spec.interaction}",
                       "say 'interaction: dcnv2', or remove 'cross'")]


def _cache(spec: CacheSpec | None) -> Cache | None:
    return Cache(spec.hbm_fraction, spec.skew) if spec is not None else None


def _cache_diagnostics(spec: WorkloadSpec, file: str, locate: Callable[[DataPath], Location]) -> list[Diagnostic]:
    """E110 where a cache cannot be: with `placement: cpu-host` (the cache is in the GPUs' HBM),
    or larger than the tables' share of HBM (`hbm_fraction` > `hbm_share`)."""
    emb = spec.embeddings
    stated: list[tuple[DataPath, CacheSpec]] = [(("embeddings", "cache"), emb.cache)] if emb.cache else []
    stated += [(("embeddings", "tables", i, "cache"), t.cache) for i, t in enumerate(emb.tables) if t.cache]
    found = []
    for path, cache in stated:
        if emb.placement == "cpu-host":
            pos = locate(path)
            found.append(Diagnostic(file, pos.line, pos.col, Severity.ERROR, Code.WRONG_VALUE,
                                    f"{dotted(path)}: the software cache is in the GPUs' HBM, but the tables are "
                                    "looked up on the CPU hosts (placement: cpu-host)",
                                    "use placement: gpu, or remove the cache"))
        elif cache.hbm_fraction > emb.hbm_share:
            pos = locate((*path, "hbm_fraction"))
            found.append(Diagnostic(file, pos.line, pos.col, Severity.ERROR, Code.WRONG_VALUE,
                                    f"{dotted(path)}.hbm_fraction: the cache takes {cache.hbm_fraction:g} of HBM, more than "
                                    f"the tables' embeddings.hbm_share {emb.hbm_share:g}",
                                    "the cache is part of the tables' share of HBM: lower hbm_fraction or raise hbm_share"))
    return found


def _samples_to_converge(convergence: ConvergenceSpec | None) -> float | None:
    """Samples to converge: `samples`, or `epochs` x `dataset_samples`; None when not given."""
    if convergence is None:
        return None
    if convergence.samples is not None:
        return float(convergence.samples)
    assert convergence.epochs is not None and convergence.dataset_samples is not None, "ConvergenceSpec checks it"
    return convergence.epochs * convergence.dataset_samples


def _check_top_mlp_input(workload: Workload) -> None:
    """E404 at top_mlp[0] when the top MLP's input width is not the interaction's output width."""
    width, wanted = workload.top_mlp[0], workload.interaction_output_width
    if width == wanted:
        return
    pos = workload.locate("top_mlp", 0)
    how = (f"the bottom MLP's output plus {workload.features} features' pairwise dots" if workload.interaction == "dot"
           else "the bottom MLP's output plus every table's dim")
    raise HwspecError([Diagnostic(workload.file, pos.line, pos.col, Severity.ERROR, Code.TOP_MLP_INPUT_MISMATCH,
                                  f"top_mlp[0]: the top MLP's input width is {width}, but the {workload.interaction} "
                                  f"interaction outputs {wanted} ({how})",
                                  f"start top_mlp with {wanted}, or change the interaction or the tables")])


def _assumed(expanded: Expanded) -> list[tuple[DataPath, str]]:
    """(path, reason) of every `assumed:` note (blocks and annotated single values), once each."""
    found: dict[DataPath, str] = {}
    for path, note in expanded.provenance.items():
        if note.assumed:
            found[tuple(path)] = note.assumed
    return list(found.items())


def load_workload(path: Path | str) -> Workload:
    """Load, validate and resolve the workload file at `path` (HwspecError on any problem)."""
    from hwspec.source.expand import expand
    from hwspec.source.loader import load_yaml_file

    doc = load_yaml_file(Path(path))  # as hwspec.model.load.read_document reads a platform file
    expanded = expand(doc)
    kind = expanded.data.get("kind") if isinstance(expanded.data, dict) else None
    if kind != "workload":
        pos = doc.locate(("kind",))
        raise HwspecError([Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, Code.UNKNOWN_KIND,
                                      f"expected kind: workload here, got {kind!r}",
                                      "a workload file says 'kind: workload'; the platform goes first: hwspec estimate PLATFORM WORKLOAD")])
    return load_workload_document(doc, expanded)
