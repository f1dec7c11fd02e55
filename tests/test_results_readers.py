"""The result readers (hwspec.acceptance): nccl-tests, rccl-tests and nvbandwidth outputs as people
save them become typed runs, and every fault of a hostile or broken file is a located problem,
never a traceback, a hang or a half-read presented as whole.

Real outputs (every file of shared/data/real-measurements/, read through one fixture that skips
when the folder is absent) are pinned exactly; each fault has a small inline fixture named for
it, with its exact message and place; a hypothesis test mutates real and inline outputs; and the
readers' work is shown linear by counting the regular-expression calls they make (no wall clock).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwspec.acceptance import nccl_tests, nvbandwidth, results, values
from hwspec.acceptance.results import CollectiveRun, CopyRun, RankDevice, Results, Row, parse_text, read_bytes, read_result, sniff
from hwspec.diagnostics import Severity
from tests.cli import hang_guard
from tests.shared_data import REAL_MEASUREMENTS


@pytest.fixture(scope="module")
def real() -> dict[str, Results]:
    """Every real output, read: file name -> Results."""
    if not REAL_MEASUREMENTS.is_dir():
        pytest.skip(f"{REAL_MEASUREMENTS} is absent (the tests run from a checkout beside shared/)")
    return {path.name: read_result(path) for path in sorted(REAL_MEASUREMENTS.glob("*.txt"))}


def problems(found: Results) -> list[str]:
    """The problems as `line:col: severity[CODE]: message`."""
    return [f"{d.line}:{d.col}: {d.severity.label}[{d.code}]: {d.message}" for d in found.problems]


def collective(found: Results, index: int = 0) -> CollectiveRun:
    run = found.runs[index]
    assert isinstance(run, CollectiveRun)
    return run


# ------------------------------------------------------------------ real outputs

# file -> (runs, tool, collective, rows of the first run, its largest size, that size's out-of-place busbw)
REAL = {
    "amd-mi325x-aac11-1n-allreduce.txt": (1, "rccl-tests", "all_reduce", 3, 17179869184, 319.08),
    "amd-mi325x-aac11-2n-allreduce.txt": (1, "rccl-tests", "all_reduce", 3, 17179869184, 350.24),
    "amd-mi325x-aac11-4n-allreduce.txt": (1, "rccl-tests", "all_reduce", 3, 17179869184, 350.59),
    "amd-mi325x-aac11-8n-allreduce.txt": (1, "rccl-tests", "all_reduce", 3, 17179869184, 350.84),
    "amd-mi355x-pollara-aac14-2n-allreduce.txt": (1, "rccl-tests", "all_reduce", 31, 8589934592, 369.04),
    "aws-p4de-2n-efa-allreduce.txt": (1, "nccl-tests", None, 29, 2147483648, 78.33),
    "gcp-a3high-gke-2n-tcpx-allgather.txt": (1, "nccl-tests", None, 10, 536870912, 70.90),
    "gcp-a3ultra-h200-2n-1gpu-gib-allgather.txt": (1, "nccl-tests", None, 24, 8589934592, 32.20),
    "gcp-a4-b200-2n-1gpu-gib-allgather.txt": (1, "nccl-tests", None, 28, 1073741824, 36.67),
    "nccl527-p4dn-1to4n-efa-allreduce.txt": (1, "nccl-tests", None, 4, 1073741824, 29.61),
    "nccltests380-h200-2n-4cx7-baremetal-allreduce.txt": (1, "nccl-tests", "all_reduce", 3, 9663676416, 320.36),
    "nccltests380-h200-2n-4cx7-vm-passthrough-allreduce.txt": (1, "nccl-tests", "all_reduce", 3, 9663676416, 184.30),
    "nebius-h100-2n-ib-vm-allreduce.txt": (1, "nccl-tests", None, 5, 8589934592, 476.62),
    "oci-b300-1n-allreduce.txt": (1, "nccl-tests", "all_reduce", 1, 8589934592, 834.84),
    "oci-b300-1n-alltoall.txt": (1, "nccl-tests", "alltoall", 1, 8589934592, 675.55),
    "oci-b300-2n-allreduce.txt": (1, "nccl-tests", "all_reduce", 2, 17179869184, 766.84),
    "oci-b300-2n-alltoall.txt": (1, "nccl-tests", "alltoall", 1, 8589934592, 180.98),
    "oci-bm-gpu4-a100-2n-roce-allreduce.txt": (1, "nccl-tests", "all_reduce", 1, 10737418240, 222.88),
    "oci-gb300-16tray-allreduce.txt": (1, "nccl-tests", "all_reduce", 2, 17179869184, 930.48),
    "oci-gb300-16tray-alltoall.txt": (1, "nccl-tests", "alltoall", 2, 17179869184, 666.92),
    "oci-gb300-1tray-allreduce.txt": (1, "nccl-tests", "all_reduce", 2, 17179869184, 685.19),
    "oci-gb300-1tray-alltoall.txt": (1, "nccl-tests", "alltoall", 2, 17179869184, 627.69),
    "oci-gb300-2tray-allreduce.txt": (1, "nccl-tests", "all_reduce", 2, 17179869184, 841.63),
    "oci-gb300-2tray-alltoall.txt": (1, "nccl-tests", "alltoall", 2, 17179869184, 685.06),
    "oci-gb300-32tray-allreduce.txt": (1, "nccl-tests", "all_reduce", 2, 17179869184, 738.39),
    "oci-gb300-32tray-alltoall.txt": (1, "nccl-tests", "alltoall", 2, 17179869184, 47.67),
    "oci-mi355x-cx7-1n-allreduce.txt": (1, "rccl-tests", "all_reduce", 2, 17179869184, 406.76),
    "oci-mi355x-cx7-1n-alltoall.txt": (1, "rccl-tests", "alltoall", 2, 17179869184, 361.41),
    "oci-mi355x-pollara-1n-allreduce.txt": (1, "rccl-tests", "all_reduce", 2, 17179869184, 408.80),
    "oci-mi355x-pollara-2n-allreduce.txt": (1, "rccl-tests", "all_reduce", 2, 17179869184, 370.34),
    "oci-mi355x-pollara-2n-alltoall.txt": (1, "rccl-tests", "alltoall", 2, 17179869184, 86.73),
    "oci-mi355x-pollara-4n-allreduce.txt": (1, "rccl-tests", "all_reduce", 2, 17179869184, 370.51),
    "oci-mi355x-pollara-4n-alltoall.txt": (1, "rccl-tests", "alltoall", 2, 17179869184, 50.63),
}
"""The collective outputs; the two nvbandwidth files are pinned by their own tests."""


def test_every_real_output_reads_cleanly(real: dict[str, Results]) -> None:
    """All 35 files read with no problem at all (not even a warning) and at least one run."""
    assert len(real) == 35
    assert set(REAL) | {"nvbandwidth-h100-8gpu-ce.txt", "oci-gb300-nvbandwidth-sum.txt"} == set(real)
    for name, found in real.items():
        assert found.problems == [], (name, problems(found))
        assert found.runs, name


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_collective_output(real: dict[str, Results], name: str) -> None:
    count, tool, test, rows, largest, busbw = REAL[name]
    found = real[name]
    assert len(found.runs) == count
    run = collective(found)
    assert (run.tool, run.collective, len(run.rows), run.rows[-1].bytes, run.rows[-1].busbw_gbps) == (tool, test, rows, largest, busbw)
    assert max(row.bytes for row in run.rows) == largest
    assert (run.why_unknown is None) == (test is not None)
    assert [row.bytes for row in run.rows] == sorted(row.bytes for row in run.rows)


def test_nebius_one_run_of_five_rows(real: dict[str, Results]) -> None:
    """The file shows the table only (the all_reduce_perf command is in a YAML it links to): the
    test is left unknown, with why, rather than guessed from the columns or the file's name."""
    run = collective(real["nebius-h100-2n-ib-vm-allreduce.txt"])
    assert [row.bytes for row in run.rows] == [536870912, 1073741824, 2147483648, 4294967296, 8589934592]
    assert run.rows[-1] == Row(8589934592, 14, 3, 33792.0, 254.20, 476.62, 477.42, 0)
    assert (run.file, run.line, run.collective, run.data_type, run.redop) == (str(REAL_MEASUREMENTS / "nebius-h100-2n-ib-vm-allreduce.txt"),
                                                                             8, None, "float", "sum")
    assert run.why_unknown == ("the file does not say which test ran: no '# Collective test starting' line, and no *_perf program "
                               "named before the table")
    assert (run.devices, run.threads, run.version, run.env, run.label_header) == ((), None, None, {}, None)


def test_gb300_starting_line_wins_over_the_command_above(real: dict[str, Results]) -> None:
    """The doc's common mpirun line runs all_reduce_perf; the run itself says alltoall_perf."""
    run = collective(real["oci-gb300-2tray-alltoall.txt"])
    assert (run.collective, run.line, run.threads, run.gpus_per_thread) == ("alltoall", 29, 1, 1)
    assert (run.version, run.version_text) == ("2.28.7", "NCCL version 2.28.7+cuda13.0")
    assert run.devices[0] == RankDevice(0, "GPU-5188", 0, "0008:06:00", "NVIDIA GB300", 33)
    assert [device.rank for device in run.devices] == [0, 1, 6, 7]  # the author's '...' cut the rest
    assert run.env["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_5,mlx5_6,mlx5_7,mlx5_8"
    assert run.env["NCCL_MNNVL_ENABLE"] == "1" and len(run.env) == 17
    assert run.rows[0] == Row(8589934592, 44, 3, 11059.0, 776.74, 679.65, 672.86, 0)  # in-place #wrong N/A: 0 + nothing


def test_label_column_and_error_column(real: dict[str, Results]) -> None:
    """An author's leading `p4dn` column (a node count per row), no root, `error` for `#wrong`,
    the settings stated after the table not the run's."""
    run = collective(real["nccl527-p4dn-1to4n-efa-allreduce.txt"])
    assert run.label_header == "p4dn"
    assert [(row.label, row.bytes, row.busbw_gbps, row.wrong) for row in run.rows] == [
        ("1", 1073741824, 230.77, None), ("2", 1073741824, 57.17, None), ("3", 1073741824, 31.77, None), ("4", 1073741824, 29.61, None)]
    assert (run.line, run.rows[0].line, run.rows[0].col, run.env) == (3, 6, 8, {})


def test_rccl_run_with_its_own_version_and_devices(real: dict[str, Results]) -> None:
    run = collective(real["amd-mi355x-pollara-aac14-2n-allreduce.txt"])
    assert (run.tool, run.version, run.version_text) == ("rccl-tests", "2.26.6", "RCCL version : 2.26.6-HEAD:6ade506")
    assert run.devices[0] == RankDevice(0, "mi355-gpu-23", 0, "0000:75:00", "", 81) and len(run.devices) == 16
    assert run.env["NCCL_IB_TC"] == "104" and run.env["RCCL_GDR_FLUSH_GPU_MEM_NO_RELAXED_ORDERING"] == "0"
    assert "RCCL_INSTALL_DIR" not in run.env  # a build location, not a setting
    assert run.rows[0] == Row(8, 107, 12, 41.16, 0.0, 0.0, 0.0, 0)


def test_grepped_rows_without_header_and_srun_prefixes(real: dict[str, Results]) -> None:
    run = collective(real["amd-mi325x-aac11-1n-allreduce.txt"])
    assert (run.line, run.env["NCCL_ALGO"], [row.bytes for row in run.rows]) == (23, "Ring", [4294967296, 8589934592, 17179869184])
    aws = collective(real["aws-p4de-2n-efa-allreduce.txt"])
    assert (aws.line, aws.rows[0]) == (2, Row(8, 4, 15, 164.3, 0.0, 0.0, 0.0, 0))
    allgather = collective(real["gcp-a3high-gke-2n-tcpx-allgather.txt"])
    assert (allgather.env, allgather.rows[0].wrong) == ({"NCCL_P2P_PXN_LEVEL": "0"}, None)  # NCCL's own 'set by environment'
    assert [row.bytes for row in collective(real["gcp-a4-b200-2n-1gpu-gib-allgather.txt"]).rows][:3] == [0, 0, 32]


def test_nvbandwidth_matrices(real: dict[str, Results]) -> None:
    found = real["nvbandwidth-h100-8gpu-ce.txt"]
    assert [(run.testcase, run.line, run.sum_gbps) for run in found.runs if isinstance(run, CopyRun)] == [
        ("device_to_device_memcpy_read_ce", 8, 22126.64), ("device_to_device_memcpy_write_ce", 36, 22258.35),
        ("device_to_host_memcpy_ce", 65, 441.72), ("host_to_device_memcpy_ce", 88, 442.87)]
    read, _, to_host, _ = found.runs
    assert isinstance(read, CopyRun) and isinstance(to_host, CopyRun)
    assert (read.row_kind, read.column_kind, read.version, read.unit, len(read.matrix)) == ("GPU", "GPU", "v0.10.0", "GB/s", 8)
    assert read.matrix[0] == (None, 395.08, 395.08, 395.08, 395.14, 395.19, 395.12, 395.12)
    assert all(read.matrix[index][index] is None for index in range(8))
    assert (to_host.row_kind, to_host.column_kind, to_host.matrix) == ("CPU", "GPU", ((55.20, 55.20, 55.18, 55.18, 55.25, 55.25, 55.26, 55.20),))


def test_nvbandwidth_sum_lines(real: dict[str, Results]) -> None:
    runs = [run for run in real["oci-gb300-nvbandwidth-sum.txt"].runs if isinstance(run, CopyRun)]
    assert len(runs) == 43 and all(run.matrix == () and run.row_kind is None and run.version is None for run in runs)
    assert (runs[0].testcase, runs[0].line, runs[0].sum_gbps) == ("host_to_device_memcpy_ce", 18, 845.90)
    latency = next(run for run in runs if run.testcase == "host_device_latency_sm")
    assert (latency.unit, latency.sum_gbps, latency.sum_ns) == ("ns", None, 2312.78)


def test_sniff_by_content(real: dict[str, Results]) -> None:
    kinds = {name: sniff((REAL_MEASUREMENTS / name).read_bytes()) for name in real}
    assert kinds["oci-gb300-nvbandwidth-sum.txt"] == kinds["nvbandwidth-h100-8gpu-ce.txt"] == "nvbandwidth"
    assert {name for name, kind in kinds.items() if kind == "rccl-tests"} == {name for name, entry in REAL.items() if entry[1] == "rccl-tests"}


def test_sniff_never_by_name(tmp_path: Path) -> None:
    assert sniff(b"") is None and sniff(b"hello\n") is None and sniff(b"[1,0]<stdout>: # nThread 1 nGpus 1\n") == "nccl-tests"
    assert sniff(b'{"results": []}') == "nccl-tests" and sniff(b'[{"name": "AllReduce", "busBw": 1}]') == "rccl-tests"
    assert sniff(b'{"nvbandwidth": {}}') == "nvbandwidth" and sniff(b"SUM host_to_device_memcpy_ce 55.2\n") == "nvbandwidth"
    assert sniff(b"#  Rank  0 Group  0 Pid 1 on h device  0 [0000:05:00] AMD Instinct MI300X\n# nThread 1 nGpus 1\n") == "rccl-tests"
    named = tmp_path / "all_reduce_perf.nccl-tests.txt"
    named.write_text("hello\n")
    assert problems(read_result(named)) == [f"1:1: error[I101]: {results.NOT_READ}"]


# ------------------------------------------------------------------ inline outputs

HEADER = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1234 on      node1 device  0 [0000:cc:00] NVIDIA H200
NCCL version 2.28.7+cuda13.0
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""
"""An nccl-tests preamble and header: its header is line 9, its first row line 11."""

FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.5\n#\n# Collective test concluded: all_reduce_perf\n"


def row(size: int, busbw: str = "1.00", wrong: str = "0", type_: str = "float", redop: str = "sum", size_text: str | None = None) -> str:
    """One row as nccl-tests prints it (its size ends at column 12)."""
    return (f"{size_text or size:>12}  {size // 4:>12}  {type_:>8}  {redop:>6}  {-1:>6}  {10.0:>7.2f}  {0.5:>6.2f}  {busbw:>6}  {wrong:>6}"
            f"  {10.0:>7.2f}  {0.5:>6.2f}  {busbw:>6}  {wrong:>6}\n")


ROWS = row(8) + row(16) + row(32) + row(64)


def test_a_whole_output() -> None:
    found = parse_text(HEADER + ROWS + FOOTER, "run.txt")
    assert problems(found) == []
    run = collective(found)
    assert (run.file, run.line, run.tool, run.collective, run.threads, run.gpus_per_thread, run.version) == (
        "run.txt", 1, "nccl-tests", "all_reduce", 1, 1, "2.28.7")
    assert run.rows == (Row(8, 11, 12, 10.0, 0.5, 1.0, 1.0, 0), Row(16, 12, 11, 10.0, 0.5, 1.0, 1.0, 0),
                        Row(32, 13, 11, 10.0, 0.5, 1.0, 1.0, 0), Row(64, 14, 11, 10.0, 0.5, 1.0, 1.0, 0))


def test_truncated_row() -> None:
    """The last row cut mid-line (a copy stopped there): a warning, the row left out, never a
    half-parsed number."""
    found = parse_text(HEADER + row(8) + row(16)[:60], "cut.txt")
    assert problems(found) == ["12:11: warning[I103]: row cut short at the end of the file (6 of 13 columns): left out"]
    assert [r.bytes for r in collective(found).rows] == [8]


def test_the_last_row_with_no_line_break() -> None:
    """A whole row with no line break after it is read when its last value is one a cut cannot
    shorten (#wrong 0, N/A); else it may end in a cut number and is left out."""
    assert [r.bytes for r in collective(parse_text(HEADER + row(8) + row(16)[:-1], "end.txt")).rows] == [8, 16]
    short_header = "#  size  count  type  redop  root  time  algbw  busbw\n"
    found = parse_text(short_header + "8  2  float  sum  -1  1.00  0.01  0.01\n16  4  float  sum  -1  1.00  0.02  0.0", "end.txt")
    assert problems(found) == ["3:36: warning[I103]: the file ends in this row with no line break: its last value '0.0' may be cut: row left out"]
    assert [r.bytes for r in collective(found).rows] == [8]


def test_a_row_cut_in_the_middle_of_the_file() -> None:
    found = parse_text(HEADER + row(8) + row(16)[:60] + "\n" + row(32) + FOOTER, "cut.txt")
    assert problems(found) == ["12:11: warning[I103]: row has 6 columns, the table header at line 9 has 13: left out"]
    assert [r.bytes for r in collective(found).rows] == [8, 32]


def test_interleaved_tables_repeat_a_size() -> None:
    """Two identical runs' rows mixed: a size repeats. The table is left out whole."""
    found = parse_text(HEADER + row(8) + row(16) + row(16) + row(32) + FOOTER, "mixed.txt")
    assert problems(found) == [
        "13:11: error[I101]: rows out of order: size 16 after 16 at line 12 (two outputs interleaved?); the table from line 9 is left out"]
    assert found.runs == [] and found.failed


def test_interleaved_tables_fall_back() -> None:
    found = parse_text(HEADER + row(8) + row(16) + row(32) + row(16) + FOOTER, "mixed.txt")
    assert problems(found) == [
        "14:11: error[I101]: rows out of order: size 16 after 32 at line 13 (two outputs interleaved?); the table from line 9 is left out"]
    assert found.runs == []


def test_interleaved_series_come_back() -> None:
    """`-d all` series alternating (float, half, float at another size) are two outputs, not series."""
    mixed = row(8) + row(8, type_="half") + row(16)
    found = parse_text(HEADER + mixed + FOOTER, "mixed.txt")
    assert problems(found) == [
        "13:11: error[I101]: rows out of order: size 16 after 8 at line 12 (two outputs interleaved?); the table from line 9 is left out"]


def test_a_second_header_inside_a_table() -> None:
    header_line = HEADER.splitlines(keepends=True)[8]
    found = parse_text(HEADER + header_line + ROWS + FOOTER, "mixed.txt")
    assert problems(found) == ["9:1: error[I101]: a table header with no rows under it before the next one at line 11 (two outputs "
                               "interleaved?): its run is left out"]
    assert [collective(found).line] == [11]


def test_rank_prefixes() -> None:
    """srun --label and Open MPI's --tag-output prefixes are set aside."""
    for prefix in ("0: ", "[1,0]<stdout>: ", "  3: "):
        text = "".join(prefix + line for line in (HEADER + ROWS + FOOTER).splitlines(keepends=True))
        found = parse_text(text, "prefixed.txt")
        assert problems(found) == [], prefix
        run = collective(found)
        assert (run.collective, [r.bytes for r in run.rows], run.rows[0].col) == ("all_reduce", [8, 16, 32, 64], 12 + len(prefix))


def test_two_ranks_rows_interleaved() -> None:
    lines = (HEADER + ROWS).splitlines(keepends=True)
    text = "".join("0: " + line for line in lines[:-1]) + "1: " + lines[-1]
    found = parse_text(text, "ranks.txt")
    assert problems(found) == ["14:1: error[I101]: a row with rank prefix '1' in a table with rank prefix '0' (two ranks' outputs "
                               "interleaved); the table from line 9 is left out"]
    assert found.runs == []


def test_non_utf8_byte() -> None:
    data = (HEADER + "node1: caf\xe9 ok\n" + ROWS).encode("latin-1")
    found = read_bytes(data, "latin1.txt")
    assert problems(found) == ["11:11: warning[I103]: byte 0xe9 is not UTF-8: it and the undecodable bytes after it are read as U+FFFD"]
    assert [r.bytes for r in collective(found).rows] == [8, 16, 32, 64]


def test_utf16_with_its_byte_order_mark() -> None:
    """PowerShell's `>` saves UTF-16 with a byte-order mark."""
    found = read_bytes((HEADER + ROWS).encode("utf-16"), "windows.txt")
    assert problems(found) == [] and len(collective(found).rows) == 4


def test_a_40_mib_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with open(path, "wb") as stream:
        stream.truncate(40 * 2**20)  # sparse: nothing is written, nothing need be read
    found = read_result(path)
    assert [d.format() for d in found.problems] == [
        f"{path}:0:0: error[I100 input-unreadable]: larger than 32 MiB (41943040 bytes or more): not a benchmark output hwspec reads"]
    assert found.runs == []
    assert problems(read_bytes(b"#" * (32 * 2**20 + 1), "big.txt")) == [
        "0:0: error[I100]: larger than 32 MiB (33554433 bytes or more): not a benchmark output hwspec reads"]


def test_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert problems(read_result(fifo)) == ["0:0: error[I100]: cannot read: not a regular file"]
    assert problems(read_result(tmp_path)) == ["0:0: error[I100]: cannot read: not a regular file"]
    assert problems(read_result(tmp_path / "missing.txt")) == ["0:0: error[I100]: cannot read: no such file or directory"]


def test_a_10000_digit_number() -> None:
    found = parse_text(HEADER + row(8) + row(16, size_text="1" * 10_000) + row(32, busbw="9" * 10_000), "digits.txt")
    assert problems(found) == [
        "12:1: warning[I103]: size has 10000 characters, more than the 32 a number may have: row left out",
        "13:72: warning[I103]: out-of-place busbw has 10000 characters, more than the 32 a number may have: row left out"]
    assert [r.bytes for r in collective(found).rows] == [8]


@pytest.mark.parametrize(("busbw", "message"), [
    ("nan", "75: warning[I103]: out-of-place busbw 'nan' is not a finite non-negative number"),
    ("-nan", "74: warning[I103]: out-of-place busbw '-nan' is not a finite non-negative number"),
    ("inf", "75: warning[I103]: out-of-place busbw 'inf' is not a finite non-negative number"),
    ("1e999", "73: warning[I103]: out-of-place busbw '1e999' is not a finite non-negative number"),
    ("-1.00", "73: warning[I103]: out-of-place busbw '-1.00' is not a finite non-negative number"),
    ("2e+06", "73: warning[I103]: out-of-place busbw '2e+06' is more than 1e+06 GB/s"),
    ("1_000", "73: warning[I103]: out-of-place busbw '1_000' is not a number"),
    ("0x10", "74: warning[I103]: out-of-place busbw '0x10' is not a number"),
])
def test_values_past_their_bounds(busbw: str, message: str) -> None:
    """The value's column: its field of nccl-tests' table ends at column 77."""
    found = parse_text(HEADER + row(8) + row(16, busbw=busbw) + row(32), "bounds.txt")
    assert problems(found) == [f"12:{message}: row left out"]
    assert [r.bytes for r in collective(found).rows] == [8, 32]


def test_sizes_and_counts_past_their_bounds() -> None:
    found = parse_text(HEADER + row(8) + row(2**51) + row(32, wrong="1.5") + row(64, wrong="1e+06"), "bounds.txt")
    assert problems(found) == ["12:1: warning[I103]: size '2251799813685248' is more than 1125899906842624 bytes: row left out",
                               "13:83: warning[I103]: out-of-place #wrong '1.5' is not a whole number: row left out"]
    assert [(r.bytes, r.wrong) for r in collective(found).rows] == [(8, 0), (64, 2_000_000)]


def test_a_header_with_no_rows() -> None:
    found = parse_text(HEADER + FOOTER, "empty-table.txt")
    assert problems(found) == ["9:1: error[I101]: no result rows read under this table header: its run is left out"]
    assert found.runs == []


def test_a_header_whose_rows_are_all_bad() -> None:
    found = parse_text(HEADER + row(8, busbw="nan") + FOOTER, "bad.txt")
    assert problems(found) == ["9:1: error[I101]: no result rows read under this table header: its run is left out",
                               "11:75: warning[I103]: out-of-place busbw 'nan' is not a finite non-negative number: row left out"]


def test_an_empty_file_and_binary_garbage() -> None:
    assert problems(parse_text("", "empty.txt")) == ["1:1: error[I101]: not a benchmark output hwspec reads: the file is empty"]
    assert problems(read_bytes(b" \n\t\n", "blank.txt")) == ["1:1: error[I101]: not a benchmark output hwspec reads: the file is empty"]
    garbage = bytes(range(256)) * 64 + b"\x00\xff" * 1000
    assert problems(read_bytes(garbage, "garbage.bin")) == [f"1:1: error[I101]: {results.NOT_READ}"]
    assert results.NOT_READ.startswith("not a benchmark output hwspec reads: expected nccl-tests or rccl-tests output")


def test_prose_that_names_the_program_but_has_no_table() -> None:
    found = parse_text("We ran all_reduce_perf -b 8 -e 8G and it was fast.\n", "prose.txt")
    assert problems(found) == ["1:1: error[I101]: not a benchmark output hwspec reads: no nccl-tests result found in it"]


def test_json_nested_10000_deep() -> None:
    text = '{"results": ' + "[" * 10_000 + "]" * 10_000 + "}"
    assert problems(parse_text(text, "deep.json")) == ["1:76: error[I101]: JSON not read: arrays and objects nested deeper than 64"]
    assert problems(parse_text("[" * 10_000, "deep.json")) == [f"1:1: error[I101]: {results.NOT_READ}"]


def test_json_that_is_not_json() -> None:
    assert problems(parse_text('{"results": [1, 2,]}', "bad.json")) == ["1:19: error[I101]: not valid JSON: Expecting value"]
    text = '{"results": [{"size": ' + "1" * 10_000 + "}]}"
    assert problems(parse_text(text, "long.json")) == [
        "1:23: error[I101]: JSON not read: a number of 10000 characters, more than the 32 a reader converts"]


# ------------------------------------------------------------------ the shapes of tables


def test_two_runs_one_after_the_other_in_markdown() -> None:
    """Each run keeps its own preamble: the second has no version line and other devices."""
    second = HEADER.replace("all_reduce", "all_gather").replace("H200", "B200").replace("NCCL version 2.28.7+cuda13.0\n", "")
    text = "```\n" + HEADER + ROWS + FOOTER + "```\n\nAnd all_gather:\n\n```\n" + second + ROWS + FOOTER.replace("all_reduce", "all_gather") + "```\n"
    found = parse_text(text, "two.md")
    assert problems(found) == []
    assert [(run.line, run.collective, run.version, [device.name for device in run.devices], len(run.rows))
            for run in found.runs if isinstance(run, CollectiveRun)] == [
        (2, "all_reduce", "2.28.7", ["NVIDIA H200"], 4), (25, "all_gather", None, ["NVIDIA B200"], 4)]


def test_nccl_log_lines_between_rows() -> None:
    """NCCL_DEBUG=INFO lines (a host name may start with a digit, another rank may print them)."""
    text = (HEADER + row(8) + "10-1-2-3:1234:1250 [0] NCCL INFO Channel 00/02 : 0 1\nnode1:1:2 [1] NCCL WARN NET/IB : oops\n" + row(16)
            + "1: node2:1:2 [1] NCCL INFO Connected all rings\n" + row(32) + FOOTER)
    found = parse_text(text, "info.txt")
    assert problems(found) == [] and [r.bytes for r in collective(found).rows] == [8, 16, 32]


def test_data_types_and_cycles_are_runs_of_their_own() -> None:
    """`-d all` restarts the sizes per data type; `-N 2` (or rccl-tests' `# Testing 2 cycle.`) per cycle."""
    text = HEADER + row(8) + row(16) + row(8, type_="half") + row(16, type_="half") + "# Testing 2 cycle.\n" + row(8) + row(16) + FOOTER
    found = parse_text(text, "series.txt")
    assert problems(found) == []
    assert [(run.line, run.data_type, [r.bytes for r in run.rows]) for run in found.runs if isinstance(run, CollectiveRun)] == [
        (1, "float", [8, 16]), (13, "half", [8, 16]), (16, "float", [8, 16])]


def test_columns_are_found_by_name() -> None:
    """rccl-tests' per-iteration and timestamp columns, a missing root, cputime for time."""
    text = ("#  size  count  type  redop  cputime  algbw  busbw  #wrong  i_min  cputime  algbw  busbw  #wrong  timestamp\n"
            "     8      2  float   sum     1.00   0.01   0.02       0   0.50     1.00   0.01   0.03     N/A  2025-01-01 10:00:00\n")
    run = collective(parse_text("# nThread 1 nGpus 1\n" + text, "columns.txt"))
    assert run.rows == (Row(8, 3, 6, 1.0, 0.01, 0.02, 0.03, 0),)


def test_old_rccl_tests_output() -> None:
    """rccl-tests before #wrong: `nThread:` with colons, rank lines without Group, `error` columns."""
    text = ("# nThread: 1 nGpus: 8 minBytes: 8 maxBytes: 16 step: 2(factor) warmupIters: 5 iters: 20 validation: 1\n"
            "#\n# Using devices\n#   Rank  0 Pid  56417 on c42f4555f685 device  0 [0002:00:00.0] AMD Instinct MI300X VF\n"
            "#\n#                                                        out-of-place                       in-place\n"
            "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
            "           8             2   float     sum    30.20    0.00    0.00  0e+00    30.10    0.00    0.00  0e+00\n"
            "          16             4   float     sum    30.40    0.00    0.00  1e-07*   30.20    0.00    0.00  0e+00\n"
            "# Errors with asterisks indicate errors that have exceeded the maximum threshold.\n")
    found = parse_text("$ ./build/all_gather_perf -g 8\n" + text, "old.txt")
    assert problems(found) == []
    run = collective(found)
    assert (run.tool, run.collective, run.gpus_per_thread, run.devices) == (
        "rccl-tests", "all_gather", 8, (RankDevice(0, "c42f4555f685", 0, "0002:00:00.0", "AMD Instinct MI300X VF", 5),))
    assert [(r.bytes, r.wrong) for r in run.rows] == [(8, None), (16, None)]


def test_settings_the_text_states() -> None:
    text = ("export NCCL_PROTO=Simple\nNCCL_ALGO=Tree NCCL_IB_HCA='mlx5_0:1' mpirun -np 8 -x NCCL_DEBUG=INFO "
            "-x NCCL_SOCKET_IFNAME=\"=eth0\" ./all_reduce_perf\nexport NCCL_PROTO=LL128\n")
    run = collective(parse_text(text + HEADER + ROWS + "export NCCL_ALGO=Ring\n", "env.txt"))
    assert run.env == {"NCCL_PROTO": "LL128", "NCCL_ALGO": "Tree", "NCCL_IB_HCA": "mlx5_0:1", "NCCL_DEBUG": "INFO",
                       "NCCL_SOCKET_IFNAME": "=eth0"}


def test_settings_past_their_bounds() -> None:
    names = "".join(f"export NCCL_X{index}=1\n" for index in range(values.MAX_ENV_NAMES + 1))
    found = parse_text(names + f"export NCCL_LONG={'v' * 2000}\n" + HEADER + ROWS, "env.txt")
    assert problems(found) == [f"{values.MAX_ENV_NAMES + 1}:8: warning[I103]: more than 128 NCCL_*/RCCL_* settings: NCCL_X128 is left out",
                               "130:8: warning[I103]: NCCL_LONG is set to a value of 2000 characters, more than the 1024 kept: left out"]
    assert len(collective(found).env) == values.MAX_ENV_NAMES


def test_the_test_from_the_last_program_named() -> None:
    text = "$ mpirun ./build/reduce_scatter_perf_mpi -b 8\n#  size  count  type  redop  root  time  algbw  busbw  #wrong\n"
    run = collective(parse_text(text + "   8   2   float   sum   -1   1.0   0.1   0.1   0\n", "named.txt"))
    assert (run.collective, run.why_unknown, run.rows[0].in_place_busbw_gbps) == ("reduce_scatter", None, None)
    unknown = collective(parse_text(HEADER.replace("all_reduce_perf", "alltoallv_perf") + ROWS, "v.txt"))
    assert (unknown.collective, unknown.why_unknown) == (None, "the run's test 'alltoallv_perf' is not one hwspec reads")


def test_concluded_names_the_run_above() -> None:
    """A run cut above its table still names its test in its last line."""
    found = parse_text("#  size  count  type  redop  root  time  algbw  busbw  #wrong\n   8   2   float   none   -1   1.0   0.1   0.1   0\n"
                       "# Collective test concluded: all_gather_perf\n", "concluded.txt")
    assert [(run.collective, run.redop) for run in found.runs if isinstance(run, CollectiveRun)] == [("all_gather", "none")]


def test_a_run_that_stops_before_its_table() -> None:
    """nccl-tests failing at init prints its preamble and no table: an error, not a silent skip."""
    crashed = HEADER.split("#\n#  ", 1)[0] + "node1: Test NCCL failure common.cu:1279 'unhandled system error'\n"
    found = parse_text(crashed + HEADER + ROWS + crashed.replace("all_reduce", "all_gather"), "crashed.txt")
    assert problems(found) == ["1:1: error[I101]: a run starts here but no result table follows: left out",
                               "22:1: error[I101]: a run starts here but no result table follows: left out"]
    assert [run.line for run in found.runs] == [8]


def test_version_from_the_tests_line_and_after_the_header() -> None:
    """Newer nccl-tests print the library's code first; NCCL prints its version line after the
    header when communicators start in parallel (`-p 1`)."""
    tests_line = "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22703\n"
    no_version = HEADER.replace("NCCL version 2.28.7+cuda13.0\n", "")
    run = collective(parse_text(tests_line + no_version + ROWS, "modern.txt"))
    assert (run.line, run.version, run.version_text) == (1, "2.27.3", tests_line[2:-1])
    run = collective(parse_text(no_version + "NCCL version 2.21.5+cuda12.4\n" + ROWS, "late.txt"))
    assert (run.line, run.version, len(run.rows)) == (1, "2.21.5", 4)
    crashed = tests_line + "# Collective test starting: all_gather_perf\n# nThread 1 nGpus 1\nnode1: Test NCCL failure\n"
    found = parse_text(crashed + tests_line + no_version + ROWS, "crashed.txt")
    assert problems(found) == ["1:1: error[I101]: a run starts here but no result table follows: left out"]
    assert [(run.line, run.collective, run.version) for run in found.runs if isinstance(run, CollectiveRun)] == [(5, "all_reduce", "2.27.3")]


def test_bad_device_lines() -> None:
    text = HEADER.replace("#  Rank  0 Group  0 Pid   1234 on      node1 device  0 [0000:cc:00] NVIDIA H200",
                          "#  Rank  0 Group  0 Pid 1 on node1 device 0 [zz] NVIDIA H200\n#  Rank  9999999 Group 0 Pid 1 on n device 0\n"
                          "#  Rank who knows")
    found = parse_text(text + ROWS, "devices.txt")
    assert problems(found) == ["5:1: warning[I103]: bus id 'zz' is not a PCI bus id: the device line is left out",
                               "6:1: warning[I103]: rank '9999999' is more than 1048575 ranks: the device line is left out",
                               "7:1: warning[I103]: a '#  Rank' line this reader does not understand: 'Rank who knows' is left out"]
    assert collective(found).devices == ()


# ------------------------------------------------------------------ JSON


def nccl_json(results_: list[object], args: list[str] | None = None) -> str:
    """nccl-tests' JSON (version 2, as src/util.cu writes it: one line)."""
    document = {"version": 2, "start_time": "2025-01-01 00:00:00", "args": ["./build/all_gather_perf", "-b", "8"] if args is None else args,
                "env": ["NCCL_ALGO=Ring", "PATH=/usr/bin", "NCCL_DEBUG"], "nccl_version": 22807,
                "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": 8, "maximum_bytes": 16,
                           "devices": [{"rank": 0, "group": 0, "pid": 1, "hostname": "node1", "device": 0, "device_hex": "0000:cc:00",
                                        "device_info": "NVIDIA H200"}]},
                "results": results_, "out_of_bounds": {"count": 0, "okay": "true"}}
    return json.dumps(document, separators=(",", ":"))


def result(size: int, busbw: object = 1.0, nwrong: object = 0.0) -> dict[str, object]:
    half = {"time": 10.0, "alg_bw": 0.5, "bus_bw": busbw, "nwrong": nwrong}
    return {"size": size, "count": size // 4, "type": "float", "redop": "none", "root": "    -1", "out_of_place": half,
            "in_place": {**half, "nwrong": None}, "actual_iterations": 20, "experiment_name": ""}


def test_nccl_tests_json() -> None:
    text = nccl_json([result(8), result(16, busbw="nan"), result(32, nwrong=3.0)])
    found = parse_text(text, "run.json")
    at = text.index('{"size":16') + 1
    assert problems(found) == [f"1:{at}: warning[I103]: results[1]: out_of_place.bus_bw 'nan' is not a finite non-negative number: row left out"]
    run = collective(found)
    assert (run.tool, run.collective, run.version, run.version_text, run.threads, run.env) == (
        "nccl-tests", "all_gather", "2.28.7", "nccl_version 22807", 1, {"NCCL_ALGO": "Ring"})
    assert run.devices == (RankDevice(0, "node1", 0, "0000:cc:00", "NVIDIA H200", 1),)
    assert run.rows == (Row(8, 1, text.index('{"size":8') + 1, 10.0, 0.5, 1.0, 1.0, 0),  # the in-place nwrong null: not counted
                        Row(32, 1, text.index('{"size":32') + 1, 10.0, 0.5, 1.0, 1.0, 3))


def test_nccl_tests_json_without_a_known_program() -> None:
    run = collective(parse_text(nccl_json([result(8)], args=[]), "run.json"))
    assert (run.collective, run.why_unknown) == (None, "the JSON does not say which test ran: its args name no *_perf program")
    assert problems(parse_text('{"results": {}}', "x.json")) == [
        "1:1: error[I101]: not a benchmark output hwspec reads: JSON without nccl-tests' \"results\" list"]
    assert problems(parse_text('{"results": []}', "x.json")) == [
        "1:1: error[I101]: no result read from the JSON's \"results\" list: its run is left out"]


def test_rccl_tests_json_records() -> None:
    records = [{"numCycle": 0, "name": "AllReduce", "nodes": 1, "ranks": 8, "ranksPerNode": 8, "gpusPerRank": 1, "size": size,
                "type": "float", "redop": "sum", "inPlace": half, "time": 1.5, "algBw": 1.0, "busBw": 1.75 + half, "wrong": "0"}
               for size in (8, 16) for half in (0, 1)]
    found = parse_text("[\n" + ",\n".join(json.dumps(record) for record in records) + "\n]\n", "rccl.json")
    assert problems(found) == []
    run = collective(found)
    assert (run.tool, run.collective, run.line) == ("rccl-tests", "all_reduce", 2)
    assert run.rows == (Row(8, 2, 1, 1.5, 1.0, 1.75, 2.75, 0), Row(16, 4, 1, 1.5, 1.0, 1.75, 2.75, 0))


def test_nvbandwidth_json() -> None:
    document = {"nvbandwidth": {"version": "v0.8", "testcases": [
        {"name": "host_to_device_memcpy_ce", "status": "Passed", "bandwidth_description": "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
         "bandwidth_matrix": [["55.20", "N/A"]], "sum": 55.2},
        {"name": "device_to_device_memcpy_read_ce", "status": "Waived"},
        {"name": "device_to_device_memcpy_write_ce", "status": "Error", "error": "out of memory"},
        {"name": "device_to_device_memcpy_read_sm", "status": "Passed", "bandwidth_matrix": [["1"], ["1", "2"]]}]}}
    found = parse_text(json.dumps(document, indent=4), "nvb.json")
    assert problems(found) == ["21:13: error[I101]: testcase 'device_to_device_memcpy_write_ce' reported an error: 'out of memory': left out",
                               "26:13: warning[I103]: testcases[3]: bandwidth_matrix row 1 is not a list of as many values as the rows "
                               "above: left out"]
    assert found.runs == [CopyRun("nvb.json", 5, "host_to_device_memcpy_ce", ((55.2, None),), "CPU", "GPU", 55.2, "v0.8")]


# ------------------------------------------------------------------ nvbandwidth text

NVB = """\
nvbandwidth Version: v0.8
Built from Git version: v0.8

CUDA Runtime Version: 12080
Running device_to_device_memcpy_read_ce.
memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0       N/A    389.12
 1    390.01       N/A

SUM device_to_device_memcpy_read_ce 779.13

Running host_device_latency_sm.
memory latency SM CPU(row) <-> GPU(column) (ns)
           0         1
 0    780.50    781.25

SUM host_device_latency_sm 1561.75
"""


def test_nvbandwidth_text() -> None:
    found = parse_text(NVB, "nvb.txt")
    assert problems(found) == []
    assert found.runs == [CopyRun("nvb.txt", 5, "device_to_device_memcpy_read_ce", ((None, 389.12), (390.01, None)), "GPU", "GPU", 779.13, "v0.8"),
                          CopyRun("nvb.txt", 13, "host_device_latency_sm", ((780.5, 781.25),), "CPU", "GPU", None, "v0.8", "ns", 1561.75)]


def test_nvbandwidth_interleaved_rows() -> None:
    found = parse_text(NVB.replace(" 1    390.01       N/A", " 0    390.01       N/A"), "nvb.txt")
    assert problems(found) == ["9:2: error[I101]: matrix row '0' where row 1 was expected (two outputs interleaved?): testcase "
                               "device_to_device_memcpy_read_ce is left out"]
    assert [run.testcase for run in found.runs if isinstance(run, CopyRun)] == ["host_device_latency_sm"]


def test_nvbandwidth_cut_and_bad_values() -> None:
    cut = parse_text(NVB.split(" 1    390.01")[0] + " 1    390.01", "cut.txt")
    assert problems(cut) == ["5:1: error[I101]: testcase device_to_device_memcpy_read_ce has no results read (no matrix, no SUM line): left out",
                             "9:2: warning[I103]: matrix row 1 cut short at the end of the file: 1 of 2 values: testcase "
                             "device_to_device_memcpy_read_ce's matrix is left out"]
    bad = parse_text(NVB.replace("389.12", "  -inf"), "bad.txt")
    assert problems(bad) == ["8:2: warning[I103]: matrix row 0 column 1 '-inf' is not a finite non-negative number: testcase "
                             "device_to_device_memcpy_read_ce's matrix is left out"]
    assert next((run.matrix, run.sum_gbps) for run in bad.runs if isinstance(run, CopyRun)) == ((), 779.13)


def test_nvbandwidth_ending_with_no_line_break() -> None:
    found = parse_text(NVB.rstrip("\n"), "end.txt")
    assert problems(found) == ["18:28: warning[I103]: the file ends in this SUM line with no line break: its value '1561.75' may be cut: left out"]
    assert [(run.testcase, run.sum_ns) for run in found.runs if isinstance(run, CopyRun)][1] == ("host_device_latency_sm", None)
    found = parse_text(NVB.split("\n\nSUM host_device")[0], "end.txt")
    assert problems(found) == ["13:1: error[I101]: testcase host_device_latency_sm has no results read (no matrix, no SUM line): left out",
                               "16:2: warning[I103]: the file ends in matrix row 0 with no line break: its last value '781.25' may be cut: "
                               "testcase host_device_latency_sm's matrix is left out"]


def test_nvbandwidth_errors_and_orphans() -> None:
    text = "Running host_to_device_memcpy_ce.\nError: cuMemAlloc failed\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n" \
           "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n           0\n 0     1.00\nSUM host_to_all_memcpy_ce nan\n"
    found = parse_text(text, "orphan.txt")
    assert problems(found) == [
        "1:1: error[I101]: testcase host_to_device_memcpy_ce reported an error: 'cuMemAlloc failed': left out",
        "4:1: warning[I103]: the matrix title is not followed by its column numbers: testcase host_to_device_memcpy_ce's matrix is left out",
        "4:1: warning[I103]: a matrix after testcase host_to_device_memcpy_ce's own: left out",
        "7:27: warning[I103]: SUM of host_to_all_memcpy_ce 'nan' is not a finite non-negative number: left out"]
    assert found.runs == []


def test_an_acceptance_sheet_with_both_kinds() -> None:
    found = parse_text(HEADER + ROWS + FOOTER + "\n" + NVB, "sheet.txt")
    assert problems(found) == []
    assert [type(run).__name__ for run in found.runs] == ["CollectiveRun", "CopyRun", "CopyRun"]


# ------------------------------------------------------------------ linear work, and fuzzing

PATTERN_MODULES = (values, nccl_tests, nvbandwidth, results)


class _Counted:
    """A compiled pattern that counts the calls made to it."""

    def __init__(self, pattern: re.Pattern[str], calls: list[int]) -> None:
        self.pattern, self.calls = pattern, calls

    def __getattr__(self, name: str) -> object:
        method = getattr(self.pattern, name)

        def counted(*args: object, **kwargs: object) -> object:
            self.calls[0] += 1
            return method(*args, **kwargs)

        return counted


@contextlib.contextmanager
def regex_calls() -> Iterator[list[int]]:
    """Count every call the readers make to their regular expressions (each is linear in what it
    is given: none has nested repetition)."""
    calls = [0]
    saved = {(module, name): pattern for module in PATTERN_MODULES for name, pattern in vars(module).items()
             if isinstance(pattern, re.Pattern)}
    try:
        for (module, name), pattern in saved.items():
            setattr(module, name, _Counted(pattern, calls))
        yield calls
    finally:
        for (module, name), pattern in saved.items():
            setattr(module, name, pattern)


def test_work_is_linear_in_the_lines() -> None:
    """Twice the output costs twice the regular-expression calls (plus a constant), for tables,
    prose, settings and matrices alike."""
    unit = HEADER + "".join(row(8 * 2**index) for index in range(30)) + FOOTER + "export NCCL_ALGO=Ring x_perf\n" + NVB

    def cost(copies: int) -> int:
        with regex_calls() as calls:
            found = parse_text(unit * copies, "linear.txt")
        assert not found.failed and len(found.runs) == 3 * copies
        return calls[0]

    one, two, eight = cost(10), cost(20), cost(80)
    assert two <= 2 * one + 50 and eight <= 8 * one + 50
    assert one <= 12 * (unit * 10).count("\n")


@pytest.mark.parametrize("line", [
    "#  Rank 1 Pid 1 on " + "a" * 4 * 2**20,
    "all_reduce_perf " + "NCCL_" + "A" * 4 * 2**20 + "=1",
    "# Collective test starting: " + "x" * 4 * 2**20,
    "0: " * 2**20 + "#  size count busbw",
    pytest.param("#  size  busbw " + "algbw " * 700_000 + "\n" + "8 " * 2 * 2**20, marks=pytest.mark.slow),  # a second of CPU
    "SUM a_ce " + "9" * 4 * 2**20,
    "#Rank " * 700_000 + "busbw",
    "nvbandwidth Version: " + "a:" * 2 * 2**20,
    "_perf" * 800_000 + " NCCL version " + "1." * 2**20,
    '{"results": [{"size": 8, "type": "' + "\\\\" * 2 * 2**20 + '"}]}',
    '{"results": [' + "[" * 64 + "]" * 64 + ",0" * 2 * 2**20 + "]}",
])
def test_a_4_mib_pathological_line_reads(line: str) -> None:
    """One 4 MiB line shaped to make a backtracking expression (or a quadratic join) blow up."""
    with hang_guard(30, "the read"), regex_calls() as calls:
        found = parse_text(line, "pathological.txt")
    assert found.failed or found.runs
    assert calls[0] <= 100 + 2 * line.count(",")  # JSON: one look for each item's start


@pytest.mark.slow  # reads 4 MiB of rows
def test_4_mib_of_rows_reads() -> None:
    rows = "".join(f"{8 * index:>12}  {2 * index:>12}  float  sum  -1  1.00  1.00  1.00  0  1.00  1.00  1.00  0\n"
                   for index in range(1, 50_000))
    with hang_guard(30, "the read"):
        found = parse_text(HEADER + rows, "many.txt")
    assert problems(found) == [] and len(collective(found).rows) == 49_999


@pytest.mark.slow  # reads a thousand bad rows
def test_many_bad_rows_list_a_thousand_warnings() -> None:
    """200,000 rows of the wrong width: a thousand warnings and their count; the table's error still listed."""
    found = parse_text(HEADER + "1 1\n" * 200_000, "bad.txt")
    assert len(found.problems) == values.MAX_PROBLEMS + 2
    assert problems(found)[:2] == ["9:1: error[I101]: no result rows read under this table header: its run is left out",
                                   "11:1: warning[I103]: row has 2 columns, the table header at line 9 has 13: left out"]
    assert problems(found)[-1] == "1010:1: warning[I103]: more than 1000 warnings: 199000 more are not listed"


SEEDS = [(HEADER + ROWS + FOOTER).encode(), ("".join("0: " + line for line in (HEADER + ROWS).splitlines(keepends=True))).encode(),
         NVB.encode(), nccl_json([result(8), result(16)]).encode(), (HEADER.replace("#  size", " p4dn  size") + ROWS).encode()]
if REAL_MEASUREMENTS.is_dir():
    SEEDS += [path.read_bytes() for path in sorted(REAL_MEASUREMENTS.glob("*.txt"))]

TOKENS = [b"\n", b" ", b"#", b"0: ", b"[1,0]<stdout>: ", b"N/A", b"nan", b"-1", b"1e999", b"9" * 40, b"\xff", b"\r", b"{", b"[", b"]",
          b'"', b"size", b"busbw", b"# Collective test starting: alltoall_perf\n", b"# Out of bounds values : 0 OK\n", b"Running x_ce.\n",
          b"SUM x_ce 1\n", b"NCCL_ALGO=Ring ", b"#  Rank 0 Group 0 Pid 1 on h device 0 [0000:01:00] GPU\n"]
MUTATION = st.tuples(st.sampled_from(["delete", "duplicate", "insert", "swap", "truncate"]), st.floats(0, 1), st.floats(0, 1),
                     st.sampled_from(TOKENS) | st.binary(max_size=6))


def mutate(data: bytes, mutations: list[tuple[str, float, float, bytes]]) -> bytes:
    for kind, first, second, payload in mutations:
        start, end = sorted((int(first * len(data)), int(second * len(data))))
        if kind == "delete":
            data = data[:start] + data[end:]
        elif kind == "duplicate":
            data = data[:end] + data[start:end] + data[end:]
        elif kind == "insert":
            data = data[:start] + payload + data[start:]
        elif kind == "swap":
            lines = data.split(b"\n")
            a, b = int(first * (len(lines) - 1)), int(second * (len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            data = b"\n".join(lines)
        else:
            data = data[:start]
    return data


def check(found: Results) -> None:
    """What every read guarantees: located problems of the input codes, one line each; a run or
    an error (never a false clean); every value kept within its bound."""
    assert found.runs or found.failed
    for problem in found.problems:
        assert problem.code in ("I100", "I101", "I103") and problem.line >= 0 and problem.col >= 0
        assert "\n" not in problem.message and (problem.severity is Severity.ERROR) == (problem.code != "I103")
    for run in found.runs:
        if isinstance(run, CollectiveRun):
            assert run.rows and run.collective in (None, *nccl_tests.COLLECTIVES)
            for entry in run.rows:
                assert 0 <= entry.bytes <= values.MAX_BYTES and entry.line >= 1
                for bandwidth in (entry.algbw_gbps, entry.busbw_gbps, entry.in_place_busbw_gbps):
                    assert bandwidth is None or (math.isfinite(bandwidth) and 0 <= bandwidth <= values.MAX_GBPS)
                assert entry.time_us is None or 0 <= entry.time_us <= values.MAX_TIME_US
                assert entry.wrong is None or 0 <= entry.wrong <= 2 * values.MAX_WRONG
        else:
            assert all(cell is None or (math.isfinite(cell) and 0 <= cell <= values.MAX_LATENCY_NS) for line in run.matrix for cell in line)
            assert run.matrix or run.sum_gbps is not None or run.sum_ns is not None


@given(st.integers(0, len(SEEDS) - 1), st.lists(MUTATION, max_size=6))
def test_mutated_outputs(seed: int, mutations: list[tuple[str, float, float, bytes]]) -> None:
    """Real and inline outputs cut, doubled, spliced and salted: never an exception, every
    guarantee kept, and work linear in the size (bounded regular-expression calls per line)."""
    data = mutate(SEEDS[seed], mutations)
    with hang_guard(30, "the read"), regex_calls() as calls:
        found = read_bytes(data, "fuzz.txt")
    check(found)
    assert calls[0] <= 40 * (data.count(b"\n") + 1) + 50 * (data.count(b"{") + 1)


@given(st.binary(max_size=3000))
def test_arbitrary_bytes(data: bytes) -> None:
    with hang_guard(30, "the read"):
        check(read_bytes(data, "fuzz.bin"))
