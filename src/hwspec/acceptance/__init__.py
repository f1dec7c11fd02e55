"""Acceptance tests derived from a platform spec: what nccl-tests, rccl-tests and nvbandwidth
should show on it (`expected`), and their saved outputs read back and compared."""
