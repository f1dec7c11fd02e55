"""Expected figures of nccl-tests and nvbandwidth (hwspec.acceptance): the links a run crosses,
the algorithms NCCL may pick over them, the band and which sizes are judged."""

from __future__ import annotations

from pathlib import Path

import pytest

import hwspec
from hwspec.acceptance import algorithms as alg
from hwspec.acceptance import expected as ex
from hwspec.acceptance.spans import cluster_span, node_span

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ROOT / "platforms"


def topology(name: str):
    return hwspec.check(PLATFORMS / name).topology


def test_a_node_run_crosses_its_nvswitch_fabric_at_the_gpu_parts_line():
    span = node_span(topology("hgx-h100.yaml"))
    assert (span.kind, span.units, span.unit_gpus, span.out) == ("node", 1, 8, None)
    assert span.intra is not None
    assert (span.intra.tier, span.intra.bandwidth) == ("nvswitch", 450e9)
    assert (Path(span.intra.where.file).name, span.intra.where.line) == ("hgx-h100.yaml", 78)  # gpus: part: h100-sxm5-80gb
    assert span.intra.what == "18 nvlink4 links of gpu0 (h100-sxm5-80gb), 450 GB/s"


def test_two_nodes_leave_by_each_gpus_own_nic_and_one_gpu_each_keeps_it_whole():
    t = topology("hgx-h100.yaml")
    both = node_span(t, 2)
    assert both.out is not None and (both.out.tier, both.out.bandwidth) == ("nic", 50e9)
    assert both.out.what == "1 x 400 Gb/s infiniband NIC (connectx-7-400g) for gpu0: 50 GB/s"
    rail = node_span(t, 2, 1)
    assert (rail.intra, rail.units, rail.unit_gpus) == (None, 2, 1)
    assert rail.out is not None and rail.out.bandwidth == 50e9


def test_a_nic_shared_by_two_gpus_halves_only_when_both_send():
    """ZionEX-style sharing: a platform whose GPUs share NICs gives each its share when all send,
    the whole NIC to a run of one GPU per node."""
    t = topology("zion.yaml")
    every = node_span(t, 2)
    single = node_span(t, 2, 1)
    assert every.out is not None and single.out is not None
    assert single.out.bandwidth > every.out.bandwidth


def test_a_span_of_more_gpus_than_the_node_has_is_refused():
    with pytest.raises(ValueError, match="hgx-h100 has 8 GPUs, not 9"):
        node_span(topology("hgx-h100.yaml"), 1, 9)


def test_trays_of_one_nvlink_domain_are_one_unit_unless_mnnvl_is_off():
    t = topology("gb200-nvl72.yaml")
    joined = cluster_span(t, (0, 1))
    assert (joined.kind, joined.units, joined.unit_gpus, joined.out) == ("domain", 1, 8, None)
    assert joined.intra is not None and joined.intra.tier == "nvswitch"
    apart = cluster_span(t, (0, 1), mnnvl=False)
    assert (apart.kind, apart.units, apart.unit_gpus) == ("leaf", 2, 4)
    assert apart.out is not None and apart.out.tier == "nic"


def test_a_run_over_oversubscribed_leaves_is_capped_by_their_uplinks():
    """gb200-nvl72-x4: 36 NICs below each rail leaf, 28 uplinks: the whole cluster gets 28/36 of a NIC."""
    t = topology("gb200-nvl72-x4.yaml")
    whole = cluster_span(t, tuple(range(72)), mnnvl=False)
    assert whole.kind == "spine" and whole.out is not None
    assert whole.out.tier == "network"
    assert whole.out.bandwidth == pytest.approx(50e9 * 28 / 36)
    pair = cluster_span(t, (0, 36), mnnvl=False)
    assert pair.kind == "spine" and pair.out is not None and pair.out.tier == "nic"


@pytest.mark.parametrize(("setting", "kept"), [
    (None, ("Ring", "Tree", "NVLS")),
    ("Ring", ("Ring",)),
    ("ring,TREE", ("Ring", "Tree")),
    ("^NVLS", ("Ring", "Tree")),
    ("^nvls,tree", ("Ring",)),
])
def test_nccl_algo_is_read_as_nccl_reads_it(setting, kept):
    assert ex.allowed(setting, ("Ring", "Tree", "NVLS")) == kept


def test_an_algorithm_over_a_link_without_a_cited_rate_makes_the_figure_unchecked():
    """Zion's V100s meet over NVLink2, of which no nccl-tests measurement is cited: every figure
    over it is unchecked, with the reason."""
    span = node_span(topology("zion.yaml"))
    (figure,) = ex.collective_figures(span, "all_reduce", (2**30,))
    assert figure.busbw is None and not figure.judged
    assert figure.note.startswith("unchecked: NCCL may run Ring here, and ")
    assert figure.note.endswith(": no cited nccl-tests measurement over nvlink2")


def test_xgmi_runs_at_its_measured_link_rate_and_is_never_judged_without_a_fleet_threshold():
    """MI300X: 7 xGMI links x 64 GB/s at AMD's 48 of 64 (336 GB/s); no fleet threshold of an AMD
    generation is cited, so no size is judged."""
    span = node_span(topology("mi300x-oam.yaml"))
    (figure,) = ex.collective_figures(span, "all_reduce", (2**34,))
    assert figure.algorithm == "Ring" and figure.busbw == pytest.approx(336e9, rel=0.01)
    assert not figure.judged and figure.note.startswith("not judged: no fleet threshold of this GPU generation")


def test_nvls_runs_at_its_measured_rate_per_gpu_on_one_node_and_nvlstree_on_two():
    t = topology("hgx-h100.yaml")
    (one,) = ex.collective_figures(node_span(t), "all_reduce", (2**34,))
    assert (one.algorithm, one.protocol) == ("NVLS", "Simple")
    assert one.busbw == pytest.approx(450e9 * 0.611 * 2 * 7 / 8, rel=0.01)  # ~481 GB/s, nccl-tests#212's ~480
    assert one.high == pytest.approx(450e9 * 8 / 9 * 2 * 7 / 8)
    (two,) = ex.collective_figures(node_span(t, 2), "all_reduce", (2**34,))
    assert two.algorithm == "NVLSTree" and two.limit is not None and two.limit.tier == "nvswitch"


def test_collnet_runs_only_when_the_run_enables_it():
    t = topology("dgx-h100-8.yaml")
    span = cluster_span(t, tuple(range(8)))
    (plain,) = ex.collective_figures(span, "all_reduce", (2**34,))
    (sharp,) = ex.collective_figures(span, "all_reduce", (2**34,), env={"NCCL_COLLNET_ENABLE": "1"})
    assert plain.algorithm == "NVLSTree" and sharp.algorithm == "NVLS"
    assert sharp.busbw is not None and plain.busbw is not None and sharp.busbw > plain.busbw


def test_a_figure_never_exceeds_its_bound_and_grows_with_the_size():
    span = node_span(topology("hgx-h100.yaml"), 2)
    for collective in alg.COLLECTIVES:
        figures = [f for f in ex.collective_figures(span, collective, env={"NCCL_ALGO": "^NVLS,NVLSTree"}) if f.busbw is not None]
        assert figures, collective
        assert all(f.high is not None and f.busbw <= f.high for f in figures), collective
        rates = [f.busbw for f in figures]
        assert rates == sorted(rates), collective


def test_only_sizes_whose_latency_is_small_are_judged():
    span = node_span(topology("hgx-h100.yaml"))
    figures = ex.collective_figures(span, "all_reduce", (8, 2**34), env={"NCCL_ALGO": "Ring"})
    small, large = figures
    assert not small.judged and small.note.startswith("not judged: latency is 100% of the time")
    assert small.low is None
    assert large.judged and large.note == "" and large.low == pytest.approx(large.busbw * (1 - 0.102))


def test_nccl_proto_limits_the_protocol():
    span = node_span(topology("hgx-h100.yaml"))
    (figure,) = ex.collective_figures(span, "all_gather", (8,), env={"NCCL_PROTO": "Simple"})
    assert figure.protocol == "Simple"
    (free,) = ex.collective_figures(span, "all_gather", (8,))
    assert free.protocol == "LL" and free.busbw is not None and figure.busbw is not None and free.busbw > figure.busbw


def test_a_sendrecv_between_nodes_is_bound_by_one_gpus_nic():
    span = node_span(topology("hgx-h100.yaml"), 2)
    (figure,) = ex.collective_figures(span, "sendrecv", (2**34,))
    assert figure.limit is not None and figure.limit.tier == "nic"
    assert figure.high == pytest.approx(50e9)


def test_host_copies_cross_the_gpus_pcie_link_at_the_copy_rate():
    t = topology("hgx-h100.yaml")
    figures = ex.copy_figures(t, "host_to_device_memcpy_ce")
    assert [f.pair for f in figures] == [("host", f"gpu{i}") for i in range(8)]
    first = figures[0]
    assert first.limit is not None and first.limit.tier == "pcie" and first.limit.what == "Gen5 x16 to the GPU's socket, 63.02 GB/s"
    assert first.high == pytest.approx(63.015e9, rel=1e-3)


def test_peer_copies_cover_every_ordered_pair():
    t = topology("hgx-h100.yaml")
    figures = ex.copy_figures(t, "device_to_device_memcpy_read_ce")
    assert len(figures) == 56 and figures[0].pair == ("gpu0", "gpu1") and figures[-1].pair == ("gpu7", "gpu6")


def test_copy_figures_are_the_same_with_the_links_a_document_finds_once_per_kind():
    t = topology("hgx-h100.yaml")
    for test, between in ex.COPY_TESTS.items():
        links = ex.copy_links(t, peer=between == ("gpu", "gpu"))
        assert ex.copy_figures(t, test, links) == ex.copy_figures(t, test)


def test_a_run_record_has_a_list_per_column_an_entry_per_figure():
    span = node_span(topology("hgx-h100.yaml"))
    figures = ex.collective_figures(span, "all_reduce", (8, 2**34))
    record = ex.run_record("node", span, "all_reduce", figures, ex.Links())
    assert tuple(ex.figure_columns(figures)) == ex.COLUMNS
    assert record["bytes"] == [8, 2**34] and record["judged"] == [f.judged for f in figures]
    assert record["expected_busbw_gbps"] == [ex.gb(f.busbw) for f in figures]


def test_the_document_covers_every_scope_and_collective_of_a_cluster():
    doc = ex.document(topology("gb200-nvl72-x4.yaml"))
    scopes = sorted({(r["scope"], r["span"]) for r in doc["runs"]})
    assert scopes == [("cluster", "spine"), ("domain", "domain"), ("leaf-pair", "domain"), ("rail", "rail"),
                      ("spine-pair", "spine")]
    assert {r["test"] for r in doc["runs"]} == set(alg.COLLECTIVES)
    assert all(r["bytes"] == list(ex.SIZES) and len(r["expected_busbw_gbps"]) == len(ex.SIZES) for r in doc["runs"])
    assert {r["limit"] for r in doc["runs"]} <= set(doc["links"])
    assert "copies" not in doc


def test_size_text_is_what_nccl_tests_options_take():
    assert [ex.size_text(n) for n in (8, 1024, 3 << 20, 2**34, 1000)] == ["8 B", "1 KiB", "3 MiB", "16 GiB", "1000 B"]
