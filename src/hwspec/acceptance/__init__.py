"""Acceptance tests derived from a platform spec: what a machine measures against what its spec
says it should reach. This package reads the results: the saved outputs of nccl-tests,
rccl-tests and nvbandwidth become typed records (`hwspec.acceptance.results`), every problem
located at its file, line and column."""
