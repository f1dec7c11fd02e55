"""Slurm hostlist expressions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwspec import hostlist
from hwspec.hostlist import compress, compress_in_order, expand
from tests.examples import pinned


@pytest.mark.parametrize("hosts, expression", [
    ([f"zionex{i:02}" for i in range(16)], "zionex[00-15]"),
    (["n1", "n2", "n3", "n5", "n7", "n8"], "n[1-3,5,7-8]"),
    (["n9", "n10"], "n[9-10]"),
    (["a01-ib", "a02-ib", "login"], "a[01-02]-ib,login"),
    (["x7"], "x7"),
    (["pod0", "pod1", "spine"], "pod[0-1],spine"),
    (["n098", "n099", "n100", "n1000"], "n[098-100,1000]"),  # a longer number joins the padded family, as in Slurm
    (["n7", "n07", "n10"], "n7,n[07,10]"),                   # a shorter one cannot
    (["n01", "n001", "n1000"], "n01,n[001,1000]"),            # the widest padded family narrower than it
])
def test_compress_matches_slurm_syntax(hosts, expression):
    assert compress(hosts) == expression
    assert expand(expression) == hosts


@settings(derandomize=True, database=None, max_examples=pinned(200))
@given(st.sets(st.integers(0, 999), min_size=1, max_size=60), st.sampled_from(["n", "zx-", "rack1-n"]), st.integers(0, 4))
def test_expand_inverts_compress(numbers, prefix, width):
    hosts = [f"{prefix}{n:0{width}d}" for n in sorted(numbers)]
    assert expand(compress(hosts)) == hosts


def per_host(hosts: list[str]) -> str:
    """The per-host path alone: what the fast path must agree with."""
    unique = list(dict.fromkeys(hosts))
    return hostlist._join(*hostlist._families_per_host(unique))


host_names = st.lists(st.builds("{}{}{}".format, st.sampled_from(["n", "zx-", "a1b", "10.0.", "", "é"]),
                                st.sampled_from(["", "0", "00", "7", "09", "10", "100", "0042", "255", "1000", "01000"]),
                                st.sampled_from(["", "-ib", "b", "x9", ",", "[x]"])), max_size=30)


@settings(derandomize=True, database=None, max_examples=pinned(400))
@given(host_names)
def test_fast_path_compresses_as_the_per_host_path(hosts):
    hostlist._compress.cache_clear()
    assert compress(hosts) == per_host(hosts)


@settings(derandomize=True, database=None, max_examples=pinned(400))
@given(host_names)
def test_compress_in_order_is_given_exactly_when_expand_gives_the_list_back(hosts):
    hostlist._compress.cache_clear()
    expression = compress(hosts)
    in_order = compress_in_order(hosts)
    if in_order is None:  # a name with hostlist syntax cannot be told apart from the syntax
        assert any(mark in host for host in hosts for mark in ",[]") or expand(expression) != hosts
    else:
        assert in_order == expression and expand(in_order) == hosts


@pytest.mark.parametrize("hosts, in_order", [
    ([f"zx{i:05}" for i in range(300)], "zx[00000-00299]"),
    ([f"10.0.{i // 256}.{i % 256}" for i in range(512)], "10.0.0.[0-255],10.0.1.[0-255]"),
    (["n2", "n1"], None),               # numbers descend: Slurm would pair n1 with the first address
    (["n1", "m1", "n2"], None),         # family n interleaved with m
    (["n1", "n1"], None),               # a duplicate is printed once
    (["n1", "login", "n2"], None),      # the per-host path, checked by expanding
    (["login", "n1", "n2"], "login,n[1-2]"),
])
def test_compress_in_order_refuses_what_expands_in_another_order(hosts, in_order):
    assert compress_in_order(hosts) == in_order


@pytest.mark.slow  # 100,000 hosts
def test_hostlists_stay_one_range_past_100000_hosts():
    hosts = [f"zx{i:05}" for i in range(131_072)]  # zx00000 ... zx99999, zx100000 ... zx131071
    assert hostlist._families_fast(hosts) is not None  # split into runs, not host by host
    assert compress(hosts) == compress_in_order(hosts) == "zx[00000-131071]"
    assert expand("zx[00000-131071]") == hosts
    index = hostlist.HostIndex(hosts)
    assert [(run.start, run.stop, run.width) for run in index.runs] == [(0, 131_072, 5)]
    assert index.compress(range(99_990, 100_010)) == index.compress_in_order(range(99_990, 100_010)) == "zx[99990-100009]"
    assert index.compress(range(100_000, 131_072)) == "zx[100000-131071]"


def test_a_host_with_a_line_break_takes_the_per_host_path():
    assert compress(["a1\nb2", "c3"]) == per_host(["a1\nb2", "c3"]) == "a1\nb2,c3"


@settings(derandomize=True, database=None, max_examples=pinned(300))
@given(st.lists(st.integers(0, 1200), min_size=2, max_size=40), st.sampled_from(["n", "zx-", "a1b", "", "r7-"]),
       st.sampled_from(["", "-ib", "b"]), st.lists(st.integers(0, 4), min_size=1, max_size=3))
def test_one_family_compresses_as_the_per_host_path(numbers, prefix, suffix, widths):
    hosts = [f"{prefix}{n:0{widths[i % len(widths)]}d}{suffix}" for i, n in enumerate(numbers)]
    hostlist._compress.cache_clear()
    assert compress(hosts) == per_host(hosts)


@settings(derandomize=True, database=None, max_examples=pinned(400))
@given(host_names, st.integers(0, 30), st.integers(0, 30))
def test_host_index_slices_compress_as_the_slice_itself(hosts, start, stop):
    index = hostlist.HostIndex(hosts)
    assert index.compress(range(start, stop)) == (compress(hosts[start:stop]) if start < stop else "")


@settings(derandomize=True, database=None, max_examples=pinned(200))
@given(st.lists(st.integers(0, 1200), min_size=1, max_size=40), st.sampled_from(["n", "zx-"]),
       st.lists(st.integers(0, 4), min_size=1, max_size=3), st.integers(0, 40), st.integers(0, 40))
def test_host_index_slices_of_one_family_compress_as_the_slice_itself(numbers, prefix, widths, start, stop):
    hosts = [f"{prefix}{n:0{widths[i % len(widths)]}d}" for i, n in enumerate(numbers)]
    assert hostlist.HostIndex(hosts).compress(range(start, stop)) == (compress(hosts[start:stop]) if start < stop else "")


@settings(derandomize=True, database=None, max_examples=pinned(400))
@given(host_names, st.integers(0, 30), st.integers(0, 30))
def test_host_index_says_in_order_as_the_slice_itself(hosts, start, stop):
    assert hostlist.HostIndex(hosts).compress_in_order(range(start, stop)) == compress_in_order(hosts[start:stop])


@settings(derandomize=True, database=None, max_examples=pinned(400))
@given(host_names, st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=4))
def test_host_index_says_spans_in_order_as_their_hosts_one_after_the_other(hosts, bounds):
    spans = [range(start, stop) for start, stop in bounds]
    together = [host for span in spans for host in hosts[span.start:span.stop]]
    assert hostlist.HostIndex(hosts).compress_spans_in_order(spans) == compress_in_order(together)


def test_host_index_prints_ascending_spans_of_one_family_as_one_hostlist():
    index = hostlist.HostIndex([f"zx{n:05d}" for n in range(64)])
    assert index.compress_spans_in_order([range(1, 31), range(33, 63)]) == "zx[00001-00030,00033-00062]"
    assert index.compress_spans_in_order([range(33, 63), range(1, 31)]) is None  # not in node order
