"""Slurm hostlist expressions, as the topology layer's callers have always imported them.

The code is `hwspec.hostlist`, a leaf module: `hwspec fleet-report` compresses node lists with
it without loading the model (importing any `hwspec.topology` module loads the model, pydantic
included: 150 ms)."""

from hwspec.hostlist import HostIndex, compress, compress_in_order, expand

__all__ = ["HostIndex", "compress", "compress_in_order", "expand"]
