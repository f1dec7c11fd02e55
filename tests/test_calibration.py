"""Which measured efficiencies each GPU generation takes (hwspec.perf.calibration.ARCHITECTURES),
and what a GPU of no measured generation falls back to. The values and their sources are pinned
here so that a constant cannot change generation, or lose its citation, unnoticed."""

from __future__ import annotations

import pytest

from hwspec.perf import calibration as cal


def constants(compute_capability: int) -> tuple[float, float]:
    return cal.hbm_efficiency(compute_capability), cal.gemm_efficiency(compute_capability)


@pytest.mark.parametrize("sm", [80, 86, 89])
def test_ampere_gpus_take_the_a800_stream_copy_and_matmul(sm):
    assert cal.architecture(sm).name == "Ampere"
    assert constants(sm) == (0.89, 0.69)
    assert cal.CALIBRATION["hbm_efficiency"].source == "github.com/mli/transformers-benchmarks/issues/4"
    assert cal.nvlink_efficiency(["nvlink3"]) == 0.69
    assert "A100 SXM4" in cal.CALIBRATION["nvlink_efficiency_a100"].measured


def test_hopper_gpus_take_the_gh200_read_the_h100_matmul_and_nvlink4s_ring_busbw():
    assert cal.architecture(90).name == "Hopper"
    assert constants(90) == (0.90, 0.744)
    assert cal.CALIBRATION["gemm_efficiency_hopper"].source == "github.com/zzc0721/torch-performance-test-data/issues/79"
    assert cal.nvlink_efficiency(["nvlink4"]) == 0.82
    assert cal.CALIBRATION["nvlink_efficiency"].source.startswith("github.com/NVIDIA/nccl-tests/issues/212")


@pytest.mark.parametrize("sm", [100, 103])
def test_blackwell_gpus_take_the_b200_transform_and_matmul_and_nvlink5s_ring_busbw(sm):
    assert cal.architecture(sm).name == "Blackwell"
    assert constants(sm) == (0.84, 0.631)
    assert cal.CALIBRATION["hbm_efficiency_blackwell"].source.startswith("github.com/NVIDIA/cccl/pull/7391")
    assert "6.721 of 8 TB/s" in cal.CALIBRATION["hbm_efficiency_blackwell"].measured
    assert cal.CALIBRATION["gemm_efficiency_blackwell"].source == "github.com/pytorch/ao/pull/2427"
    assert cal.nvlink_efficiency(["nvlink5"]) == 0.755
    assert "679.61 GB/s" in cal.CALIBRATION["nvlink_efficiency_blackwell"].measured


def test_each_generations_constants_are_its_own_measurements():
    # 0.84 = 6.721 / 8 TB/s; 0.631 = 1.42 / 2.25 PFLOPS; 0.755 = 679.61 / 900 GB/s
    assert cal.value("hbm_efficiency_blackwell") == pytest.approx(6.721 / 8, abs=5e-3)
    assert cal.value("gemm_efficiency_blackwell") == pytest.approx(1.42 / 2.25, abs=5e-4)
    assert cal.value("nvlink_efficiency_blackwell") == pytest.approx(679.61 / 900, abs=5e-4)
    for arch in cal.ARCHITECTURES:
        peak, points, _ = cal.GEMM_BY_SIZE[arch.name]
        assert points[-1][0] == 8192
        assert cal.value(arch.gemm) == pytest.approx(points[-1][1] / peak, abs=1e-3), arch.name


@pytest.mark.parametrize("sm", [0, 60, 70, 75])
def test_a_gpu_of_no_measured_generation_takes_amperes_with_the_assumption_stated(sm):
    arch = cal.architecture(sm)
    assert arch is cal.UNKNOWN_ARCHITECTURE
    assert arch.name == "unknown"
    assert arch.assumed.startswith("assumed: no measurement of this GPU's generation")
    assert constants(sm) == constants(80)
    assert cal.gemm_efficiency_at(sm, 2 * 2048**3) == cal.gemm_efficiency_at(80, 2 * 2048**3)
    assert all(not a.assumed for a in cal.ARCHITECTURES)


def test_fabrics_of_no_measured_nvlink_take_nvlink4s_and_a_mix_takes_the_worst():
    assert cal.nvlink_efficiency(["nvlink2"]) == 0.82
    assert cal.nvlink_efficiency(["xgmi"]) == 0.75  # AMD's 48 of 64 GB/s per link, ROCm/rccl#1210
    assert cal.nvlink_efficiency([]) == 0.82
    assert cal.nvlink_efficiency(["nvlink4", "nvlink5"]) == 0.755


def test_blackwell_gemms_follow_the_b200_sweep_by_size():
    # torchao's sweep: 1.13 PFLOPS at n = 2048 and 1.41 at 4096 of 2.25; halfway in log2(FLOPs)
    # (3 doublings apart) is their mean
    mid = 2 * 2048**3 * 2 ** 1.5
    assert cal.gemm_efficiency_at(100, mid) == pytest.approx((1.13 + 1.41) / 2 / 2.25)
    assert cal.gemm_efficiency_at(100, 1e6) == pytest.approx(0.423 / 2.25)


def test_the_estimates_page_prints_the_calibration_table_as_it_is():
    """docs/estimates.md's calibration table is `markdown_table()`: a constant added or changed
    shows there with its measurement and source."""
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "estimates.md").read_text()
    assert cal.markdown_table() in page
