"""Slurm hostlist expressions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from hwspec.hostlist import compress, expand


@pytest.mark.parametrize("hosts, expression", [
    ([f"zionex{i:02}" for i in range(16)], "zionex[00-15]"),
    (["n1", "n2", "n3", "n5", "n7", "n8"], "n[1-3,5,7-8]"),
    (["n9", "n10"], "n[9-10]"),
    (["a01-ib", "a02-ib", "login"], "a[01-02]-ib,login"),
    (["x7"], "x7"),
    (["pod0", "pod1", "spine"], "pod[0-1],spine"),
])
def test_compress_matches_slurm_syntax(hosts, expression):
    assert compress(hosts) == expression
    assert expand(expression) == hosts


@settings(derandomize=True, database=None, max_examples=200)
@given(st.sets(st.integers(0, 999), min_size=1, max_size=60), st.sampled_from(["n", "zx-", "rack1-n"]), st.integers(0, 4))
def test_expand_inverts_compress(numbers, prefix, width):
    hosts = [f"{prefix}{n:0{width}d}" for n in sorted(numbers)]
    assert expand(compress(hosts)) == hosts
