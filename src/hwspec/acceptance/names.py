"""The tests hwspec has acceptance figures for, by the names their programs use; nothing else,
so that the command line can offer them without importing the model."""

from __future__ import annotations

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")
"""nccl-tests' (and rccl-tests') programs without `_perf`: `all_reduce_perf`, ..."""

COPY_TESTS = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce",
              "device_to_device_memcpy_write_ce")
"""nvbandwidth's testcases of copy-engine copies of one GPU (or one GPU pair) at a time."""
