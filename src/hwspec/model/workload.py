"""Resolved workloads: a workload file (`kind: workload`, `hwspec.spec.workload`) as the
`Workload` the estimate reads, its per-sample sizes derived once: bytes are bytes, FLOPs are
floating-point operations, counts are counts. Sizes of dtypes are `DTYPE_BYTES`.

A workload file goes through the same loader as platforms (`hwspec.source.loader` positions,
`hwspec.source.expand` repeat blocks and annotated values, located diagnostics).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity
from hwspec.source.expand import Expanded, read_document
from hwspec.source.loader import SourceDoc
from hwspec.spec.translate import DataPath, Written, dotted
from hwspec.spec.workload import CacheSpec, ConvergenceSpec, validate_workload

DTYPE_BYTES: dict[str, float] = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5,
                                 "int32": 4, "int64": 8}
"""Bytes per element of every dtype a workload names (tf32 is stored as fp32)."""

LENGTH_BYTES = 4
"""Bytes per (sample, feature) length entry of a jagged sparse input (int32 lengths)."""
LABEL_BYTES = 4
"""Bytes per sample label (fp32)."""
DENSE_INPUT_BYTES = 4
"""Bytes per dense input feature (fp32 as read from the data loader)."""
OPTIMIZER_STATE_BYTES: dict[str, Callable[[float], float]] = {"sgd": lambda dim: 0, "rowwise-adagrad": lambda dim: 4, "adagrad": lambda dim: 4 * dim}
"""Optimizer state per embedding row, bytes (fp32): none, one sum per row, one per element."""


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
    allreduce_overlap: str = "backward"  # "backward" or "embedding_update" (spec.workload's description)
    gradient_buffer: bool = False
    hier_auto_table_cost: float | None = None  # HugeCTR hier_auto's table cost; None: no hier_auto splits

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
    """Validate and resolve a workload document. Raises HwspecError with located diagnostics
    (`validate_workload`'s, and E404 where the top MLP's input width is not the interaction's
    output width)."""
    spec = validate_workload(doc, expanded)
    where = Written(doc, expanded)
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
        locate=lambda *path: where.value(tuple(path)),
        cross_layers=spec.cross.layers if spec.cross else 0, cross_low_rank=spec.cross.low_rank if spec.cross else None,
        samples_to_converge=_samples_to_converge(spec.convergence),
        placement=emb.placement, pipeline=spec.pipeline, nccl=spec.nccl,
        inter_iteration_overlap=spec.inter_iteration_overlap, allreduce_overlap=spec.allreduce_overlap,
        gradient_buffer=emb.gradient_buffer,
        hier_auto_table_cost=emb.hier_auto.table_cost if emb.hier_auto else None)
    _check_top_mlp_input(workload)
    return workload


def _cache(spec: CacheSpec | None) -> Cache | None:
    return Cache(spec.hbm_fraction, spec.skew) if spec is not None else None


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
    doc, expanded = read_document(Path(path))
    kind = expanded.data.get("kind") if isinstance(expanded.data, dict) else None
    if kind != "workload":
        pos = doc.locate(("kind",))
        raise HwspecError([Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, Code.UNKNOWN_KIND,
                                      f"expected kind: workload here, got {kind!r}",
                                      "a workload file says 'kind: workload'; the platform goes first: hwspec estimate PLATFORM WORKLOAD")])
    return load_workload_document(doc, expanded)
