"""NVML through the real nvidia-ml-py binding, with only its C library replaced
(tests/nvml_library.py): `capture`, `import --live` and `diff --live` on an NVSwitch board and on
the real H200 VM's layout, a GPU that supports nothing, a library that fails in unexpected ways,
and a crash anywhere in a command being "could not check" (exit 2, one line), never drift.

The binding is whichever nvidia-ml-py the environment has: the test extra installs the newest,
CI's oldest-dependency run the oldest hwspec supports (`nvml.SUPPORTED_BINDING`)."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.live import capture, nvml
from tests.consumers import HWSPEC, ROOT
from tests.nvml_library import GPU_IS_LOST, NOT_SUPPORTED, UNKNOWN, FakeNvmlLibrary, answers_of, installed
from tests.shared_data import REAL_MACHINES

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is in the test extra")
BOARD = ROOT / "tests" / "data" / "sysfs" / "nvswitch-board"
H200_VM = REAL_MACHINES / "h200-vm" / "capture"
DEVICE_QUERIES = ("nvmlDeviceGetName", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetNvLinkState",
                  "nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetGpuFabricInfo")


def node(name: str) -> Path:
    if name == "h200-vm" and not H200_VM.is_dir():
        pytest.skip("the real H200 capture (shared/data/real-machines/h200-vm) is not beside this checkout")
    return {"nvswitch-board": BOARD, "h200-vm": H200_VM}[name]


@pytest.fixture
def live_nvml(monkeypatch: pytest.MonkeyPatch):
    """While its block runs: read sysfs from a tree but ask NVML live (as `--live` on `/`
    does), through the real binding over `library`."""
    @contextmanager
    def use(library: FakeNvmlLibrary) -> Iterator[FakeNvmlLibrary]:
        with monkeypatch.context() as patch, installed(pynvml, library):
            patch.setattr(capture, "is_live_root", lambda root: True)
            yield library
    return use


def test_the_supported_binding_range_includes_the_installed_one():
    low, high = nvml.SUPPORTED_BINDING
    assert low <= nvml.binding_version() < high


@pytest.mark.parametrize("name", ["nvswitch-board", "h200-vm"])
def test_the_real_binding_reads_what_the_library_says_without_a_note(name):
    answers = answers_of(node(name))
    with installed(pynvml, FakeNvmlLibrary(answers)) as library:
        assert nvml.query() == (answers, [])
    assert library.calls[0] == "nvmlInitWithFlags" and library.calls[-1] == "nvmlShutdown"
    # every link number the binding knows is asked, the fabric by reference
    assert library.calls.count("nvmlDeviceGetNvLinkState") == len(answers["gpus"]) * pynvml.NVML_NVLINK_MAX_LINKS
    assert library.calls.count("nvmlDeviceGetGpuFabricInfo") == len(answers["gpus"])


@pytest.mark.parametrize("name", ["nvswitch-board", "h200-vm"])
def test_capture_import_and_diff_live_run_clean_with_the_real_binding(name, live_nvml, tmp_path, capsys):
    tree = node(name)
    answers = answers_of(tree)
    with live_nvml(FakeNvmlLibrary(answers)):
        assert main(["capture", str(tmp_path / "cap"), "--sysfs-root", str(tree)]) == 0
        assert main(["import", "--sysfs-root", str(tree), "-o", str(tmp_path / "draft.yaml")]) == 0
        assert main(["diff", str(tmp_path / "draft.yaml"), "--sysfs-root", str(tree)]) == 0
    assert (tmp_path / "cap" / "nvml.json").read_text() == nvml.dump(answers)
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "not read" in line or "not compared" in line or "Traceback" in line] == []
    assert err.endswith(f"hwspec: {tmp_path / 'draft.yaml'} against {tree}: the machine matches its spec\n")


def test_a_gpu_whose_every_query_is_not_supported_is_left_out_with_a_note(live_nvml, tmp_path, capsys):
    answers = answers_of(BOARD)
    silent = answers["gpus"][2]["bus"]
    assert main(["import", "--sysfs-root", str(BOARD), "-o", str(tmp_path / "draft.yaml")]) == 0
    library = FakeNvmlLibrary(answers, errors={name: {silent: NOT_SUPPORTED} for name in DEVICE_QUERIES})
    capsys.readouterr()
    with live_nvml(library):
        assert main(["diff", str(tmp_path / "draft.yaml"), "--sysfs-root", str(BOARD)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hwspec: note:")]
    assert notes == ["hwspec: note: NVML's GPU 2: its PCI bus id cannot be read (NVMLError_NotSupported: Not Supported): left out",
                     f"hwspec: note: {silent}: not among NVML's GPUs: its NVLinks and NVLink domain are not compared"]


def test_an_unexpected_library_failure_leaves_that_fact_unknown_for_that_gpu(live_nvml, tmp_path, capsys):
    """A GPU lost while its links are read, and a fabric symbol the library cannot give (no
    NVML call fails that way): the other facts and GPUs are still compared."""
    answers = answers_of(BOARD)
    lost = answers["gpus"][5]["bus"]
    assert main(["import", "--sysfs-root", str(BOARD), "-o", str(tmp_path / "draft.yaml")]) == 0
    library = FakeNvmlLibrary(answers, errors={"nvmlDeviceGetNvLinkState": {lost: GPU_IS_LOST}},
                              broken=("nvmlDeviceGetGpuFabricInfo",))
    capsys.readouterr()
    with live_nvml(library):
        read = capture.read_live(BOARD)
        assert main(["diff", str(tmp_path / "draft.yaml"), "--sysfs-root", str(BOARD), "--format", "json"]) == 0
    assert read.nvml["gpus"][5]["unknown"] == {
        "nvlinks": "NVMLError_GpuIsLost: GPU is lost",
        "fabric": "RuntimeError: nvmlDeviceGetGpuFabricInfo: the library's symbol table is unreadable"}
    assert "nvlinks" not in read.nvml["gpus"][5] and "fabric" not in read.nvml["gpus"][5]
    assert read.machine.gpus[lost].unknown == {"nvlinks", "fabric"}
    buses = ", ".join(gpu["bus"] for gpu in answers["gpus"])
    assert read.notes == [
        f"NVML gave no NVLink domain of {buses} (RuntimeError: nvmlDeviceGetGpuFabricInfo: the library's symbol table is "
        "unreadable): not compared",
        f"NVML gave no NVLink state of {lost} (NVMLError_GpuIsLost: GPU is lost): not compared"]
    assert json.loads(capsys.readouterr().out)["status"] == "clean"


def test_a_link_lost_among_answered_links_is_still_drift(live_nvml, tmp_path, capsys):
    """Unknown is not clean: a link NVML answers for as inactive is a D106 at the spec's line."""
    answers = answers_of(BOARD)
    assert main(["import", "--sysfs-root", str(BOARD), "-o", str(tmp_path / "draft.yaml")]) == 0
    answers["gpus"][0]["nvlinks"][0] = {"link": 0, "active": False, "remote": None}
    capsys.readouterr()
    with live_nvml(FakeNvmlLibrary(answers)):
        assert main(["diff", str(tmp_path / "draft.yaml"), "--sysfs-root", str(BOARD), "--format", "json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["code"], finding["device"]) == ("D106", "gpu0")
    assert finding["message"] == "gpu0 has 5 NVLinks to NVSwitch nvs0 (0000:c5:00.0) in the spec, but 4 in the machine (seen at NVML:1)"


@pytest.mark.parametrize(("library", "note"), [
    (FakeNvmlLibrary({"gpus": []}, broken=("nvmlInitWithFlags",)),
     "NVML cannot be initialised (RuntimeError: nvmlInitWithFlags: the library's symbol table is unreadable): NVLink state not read"),
    (FakeNvmlLibrary({"gpus": []}, errors={"nvmlDeviceGetCount_v2": UNKNOWN}),
     "NVML cannot list the GPUs (NVMLError_Unknown: Unknown Error): NVLink state not read"),
])
def test_nvml_that_cannot_start_or_list_its_gpus_is_one_note(library, note):
    with installed(pynvml, library):
        assert nvml.query() == (None, [note])


def test_a_binding_outside_the_supported_range_is_not_called(monkeypatch):
    monkeypatch.setattr(nvml, "binding_version", lambda: (11, 525, 150))
    library = FakeNvmlLibrary(answers_of(BOARD))
    with installed(pynvml, library):
        assert nvml.query() == (None, ["the NVML binding is 11.525.150, hwspec calls nvidia-ml-py >=12.535.77,<14: "
                                       "NVLink state not read"])
    assert library.calls == []


# ---------------------------------------------------------------- a crash is "could not check"

CRASH = "TypeError: nvmlDeviceGetGpuFabricInfo() missing 1 required positional argument: 'gpuFabricInfo'"


def crash(*args, **kwargs):
    raise TypeError("nvmlDeviceGetGpuFabricInfo() missing 1 required positional argument: 'gpuFabricInfo'")


@pytest.mark.parametrize("command", [["capture", "{tmp}/cap"], ["import", "--live"], ["diff", "{spec}", "--live"]])
def test_an_unexpected_exception_in_a_live_command_exits_2_with_one_line(command, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(capture, "read_sysfs", crash)
    argv = [word.format(tmp=tmp_path, spec="tests/data/sysfs/good-node.yaml") for word in command]
    monkeypatch.chdir(ROOT)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"hwspec: error[E903]: hwspec {argv[0]} could not check: internal error: {CRASH} "
                            "(a bug in hwspec: HWSPEC_DEBUG=1 shows the traceback; please report it)\n")
    assert captured.out == ""
    assert not (tmp_path / "cap").exists()


def crashing_hwspec(tmp_path: Path) -> dict[str, str]:
    """The environment of an hwspec process whose diff raises (a sitecustomize breaks it)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import hwspec.live.diff\n"
        "def crash(*args, **kwargs):\n"
        f"    raise TypeError({CRASH.split(': ', 1)[1]!r})\n"
        "hwspec.live.diff.diff = crash\n")
    return {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT / 'src'}"}


@pytest.mark.slow  # a hwspec process per format, crashed
@pytest.mark.parametrize("fmt", ["json", "prometheus", "sarif", "github", "text"])
def test_the_hwspec_process_that_crashes_exits_2_and_its_report_says_unchecked(fmt, tmp_path):
    result = subprocess.run([*HWSPEC, "diff", "tests/data/sysfs/good-node.yaml", "--sysfs-root", "tests/data/sysfs/good",
                             "--format", fmt, "--node", "n1"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env=crashing_hwspec(tmp_path))
    assert (result.returncode, result.stderr.splitlines()) == (2, [
        f"hwspec: error[E903]: hwspec diff could not check: internal error: {CRASH} "
        "(a bug in hwspec: HWSPEC_DEBUG=1 shows the traceback; please report it)"])
    if fmt == "json":
        report = json.loads(result.stdout)
        assert (report["status"], report["exit_code"], report["findings"][0]["code"]) == ("unchecked", 2, "E903")
    elif fmt == "prometheus":
        assert 'hwspec_check_ok{node="n1",spec="tests/data/sysfs/good-node.yaml"} 0' in result.stdout.splitlines()
    elif fmt == "sarif":
        (run,) = json.loads(result.stdout)["runs"]
        assert [(r["ruleId"], r["level"]) for r in run["results"]] == [("E903", "error")]
    elif fmt == "github":
        assert result.stdout.startswith("::error file=<hwspec>,line=1,col=1,title=E903")
    else:
        assert result.stdout == ""


@pytest.mark.slow  # a hwspec process
def test_hwspec_debug_shows_the_traceback(tmp_path):
    result = subprocess.run([*HWSPEC, "diff", "tests/data/sysfs/good-node.yaml", "--sysfs-root", "tests/data/sysfs/good"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**crashing_hwspec(tmp_path), "HWSPEC_DEBUG": "1"})
    assert result.returncode == 2
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert result.stderr.splitlines()[-1].startswith("hwspec: error[E903]: hwspec diff could not check")


def test_the_fabric_struct_is_laid_out_as_nvml_h_whatever_the_bindings_own_says():
    """clusterUuid[16] at 0, status at 16, cliqueId at 20, the state (unsigned char) at 24: 28 bytes."""
    layout = {name: getattr(nvml.GpuFabricInfo, name).offset for name, _ in nvml.GpuFabricInfo._fields_}
    assert (layout, ctypes.sizeof(nvml.GpuFabricInfo)) == ({"clusterUuid": 0, "status": 16, "cliqueId": 20, "state": 24}, 28)
