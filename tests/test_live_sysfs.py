"""`--live`, `--sysfs-root` and `hwspec capture`: this machine read from sysfs (and NVML's answers),
the five drift faults found at the spec's line from synthetic captured trees, hostile trees
refused cleanly, and the CI machine itself imported and diffed live."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.live import nvml
from hwspec.live.capture import read_live
from hwspec.live.sysfs import MAX_ATTRIBUTE_BYTES

ROOT = Path(__file__).resolve().parent.parent
TREES = Path("tests/data/sysfs")
SPEC = "tests/data/sysfs/good-node.yaml"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def hwspec(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hwspec", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})


def github_findings(tree: str, capsys) -> tuple[int, list[str]]:
    status = main(["diff", SPEC, "--sysfs-root", str(TREES / tree), "--format", "github"])
    return status, [line.split("::")[1] + "::" + line.split("::")[2].split("%0A")[0] for line in capsys.readouterr().out.splitlines()]


def test_the_healthy_captured_node_matches_the_spec_drafted_from_it(capsys):
    assert main(["diff", SPEC, "--sysfs-root", str(TREES / "good")]) == 0
    assert capsys.readouterr().out == ""


FAULTS = {
    "gpu-x8": ["error file=tests/data/sysfs/good-node.yaml,line=93,col=9,title=D105 pcie-link::gpu0: PCIe link is Gen5 x16 "
               "in the spec, but Gen5 x8 in the machine (narrower) (seen at tests/data/sysfs/gpu-x8/sys/bus/pci/devices/0000:03:00.0/class:1)"],
    "nvlink-down": ["error file=tests/data/sysfs/good-node.yaml,line=98,col=9,title=D106 nvlink-count::gpu0-gpu1: 4 NVLinks in "
                    "the spec, but 3 in the machine (seen at tests/data/sysfs/nvlink-down/nvml.json:2)"],
    "nic-moved": ["error file=tests/data/sysfs/good-node.yaml,line=111,col=20,title=D103 device-placement::nic1 (0000:84:00.0) is "
                  "under sw5 (0000:82:01.0) < sw3 (0000:81:00.0) < rp1 (0000:80:01.0) < cpu1 in the spec, but 0000:05:00.0 under "
                  "0000:02:01.0 < 0000:01:00.0 < 0000:00:01.0 < NUMA node 0 in the machine "
                  "(seen at tests/data/sysfs/nic-moved/sys/bus/pci/devices/0000:05:00.0/class:1)",
                  "error file=tests/data/sysfs/good-node.yaml,line=111,col=20,title=D104 numa-node::nic1 is on NUMA node 1 in the "
                  "spec, but on NUMA node 0 in the machine (seen at tests/data/sysfs/nic-moved/sys/bus/pci/devices/0000:05:00.0/class:1)"],
    "gpu-link-down": ["error file=tests/data/sysfs/good-node.yaml,line=93,col=9,title=D105 pcie-link::gpu0: PCIe link is Gen5 x16 "
                      "in the spec, but down in the machine (speed Unknown, width 63) "
                      "(seen at tests/data/sysfs/gpu-link-down/sys/bus/pci/devices/0000:03:00.0/class:1)"],
    "hca-port-missing": ["error file=tests/data/sysfs/good-node.yaml,line=110,col=11,title=D112 nic-port::nic1: port 1 of mlx5_1 is "
                         "not in the machine (its ports: none) (seen at tests/data/sysfs/hca-port-missing/sys/bus/pci/devices/0000:84:00.0/class:1)"],
}


@pytest.mark.parametrize("tree", sorted(FAULTS))
def test_each_fault_of_a_captured_tree_is_one_located_finding_with_both_values(tree, capsys):
    assert github_findings(tree, capsys) == (1, FAULTS[tree])


def test_sub_numa_clustering_turned_on_is_found_as_the_extra_nodes_and_the_split_cpu_lists(capsys):
    status, findings = github_findings("snc-on", capsys)
    assert status == 1
    assert [f.split("title=")[1].split("::")[0] for f in findings] == [
        "D102 extra-device", "D102 extra-device", "D108 cpu-list", "D108 cpu-list", "D108 cpu-list", "D108 cpu-list",
        "D104 numa-node", "D104 numa-node"]
    assert "line=11,col=1,title=D102 extra-device::the machine has NUMA node 2, which no socket of the spec is" in findings[0]
    assert "line=14,col=9,title=D108 cpu-list::cpu0: NUMA node 0 has CPUs 0-3 in the spec, but 0-1 in the machine" in findings[2]


def test_a_port_that_is_down_is_a_d112_at_the_nic_device_line(tmp_path, capsys):
    tree = good_copy(tmp_path)
    state = next(tree.glob("sys/devices/pci0000:80/**/mlx5_1/ports/1/state"))
    state.write_text("1: DOWN\n")
    assert main(["diff", SPEC, "--sysfs-root", str(tree), "--format", "github"]) == 1
    out = capsys.readouterr().out
    assert "line=110,col=11,title=D112 nic-port::nic1: port 1 of mlx5_1 is up in the spec, but not up in the machine" in out


@pytest.mark.slow  # writes all eight synthetic trees
def test_the_committed_trees_are_what_build_py_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("sysfs_build", ROOT / TREES / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    build.main(tmp_path)
    for tree in ("good", "gpu-x8", "nvlink-down", "nic-moved", "snc-on", "hca-port-missing", "gpu-link-down", "nvswitch-board"):
        assert snapshot(tmp_path / tree) == snapshot(TREES / tree), tree


def snapshot(root: Path) -> dict[str, str | bytes]:
    out: dict[str, str | bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = f"-> {os.readlink(path)}" if path.is_symlink() else path.read_bytes() if path.is_file() else "dir"
    return out


# ------------------------------------------------------------ the CI machine itself, and capture


@pytest.mark.slow  # two hwspec processes on this machine
def test_the_ci_machine_is_imported_live_and_its_draft_diffs_live_clean(tmp_path):
    drafted = hwspec("import", "--live", "-o", "node.yaml", cwd=tmp_path)
    assert drafted.returncode == 0, drafted.stderr
    assert "validates with no error" in drafted.stderr
    checked = hwspec("diff", "node.yaml", "--live", cwd=tmp_path)
    assert (checked.returncode, checked.stdout) == (0, "")
    assert checked.stderr.endswith("hwspec: node.yaml against this machine (/): the machine matches its spec\n")


@pytest.mark.slow  # three hwspec processes on this machine
def test_a_capture_of_this_machine_replays_as_the_live_read_and_holds_only_links_inside_it(tmp_path):
    assert hwspec("capture", "cap", cwd=tmp_path).returncode == 0
    assert hwspec("import", "--live", "-o", "node.yaml", cwd=tmp_path).returncode == 0
    assert hwspec("diff", "node.yaml", "--sysfs-root", "cap", cwd=tmp_path).returncode == 0
    capture = (tmp_path / "cap").resolve()
    for link in (p for p in capture.rglob("*") if p.is_symlink()):
        assert not os.readlink(link).startswith("/") and capture in link.resolve().parents, link
    live, replayed = read_live(Path("/")).machine, read_live(capture).machine
    assert (sorted(live.numa), sorted(live.nics), sorted(live.gpus)) == (sorted(replayed.numa), sorted(replayed.nics), sorted(replayed.gpus))


def test_capture_of_a_capture_is_the_same_capture_with_its_nvml_answers(tmp_path):
    assert main(["capture", str(tmp_path / "again"), "--sysfs-root", str(TREES / "nvlink-down")]) == 0
    again = snapshot(tmp_path / "again")
    assert again == {k: v for k, v in snapshot(TREES / "nvlink-down").items() if k in again}
    assert (tmp_path / "again" / "nvml.json").read_bytes() == (TREES / "nvlink-down" / "nvml.json").read_bytes()


def test_capture_into_an_existing_directory_writes_nothing_and_exits_2(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    assert main(["capture", str(tmp_path / "out"), "--sysfs-root", str(TREES / "good")]) == 2
    assert f"{tmp_path}/out:1:1: error[I100 input-unreadable]: already exists: give a new directory" in capsys.readouterr().err
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize(("args", "message"), [
    (["diff", SPEC], "<command line>:1:1: error[I100 input-unreadable]: nothing to read: give LIVE files, or --live"),
    (["diff", SPEC, "x.xml", "--live"],
     "<command line>:1:1: error[I100 input-unreadable]: --live reads this machine: give LIVE files or --live, not both"),
])
def test_diff_needs_live_files_or_live_and_not_both(args, message, capsys):
    assert main(args) == 2
    captured = capsys.readouterr()
    assert message in captured.out + captured.err


# ------------------------------------------------------------ hostile trees


def good_copy(tmp_path: Path) -> Path:
    """A copy of the committed `good` tree, to break (what build.py writes: test_the_committed_trees_are_what_build_py_writes)."""
    shutil.copytree(ROOT / TREES / "good", tmp_path / "good", symlinks=True)
    return tmp_path / "good"


def diff_of(tree: Path, capsys) -> tuple[int, str]:
    status = main(["diff", SPEC, "--sysfs-root", str(tree)])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_a_symbolic_link_loop_is_a_located_i101_not_a_hang(tmp_path, capsys):
    tree = good_copy(tmp_path)
    loop = tree / "sys/bus/pci/devices/0000:03:00.0"
    loop.unlink()
    loop.symlink_to("0000:03:00.0")
    status, out = diff_of(tree, capsys)
    assert status == 2
    assert f"{tree}/sys/bus/pci/devices/0000:03:00.0:1:1: error[I101 input-syntax]: too many levels of symbolic links: not a sysfs tree" in out


def test_a_link_out_of_the_root_is_refused_and_never_followed(tmp_path, capsys):
    tree = good_copy(tmp_path)
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "class").write_text("0x030200\n")
    escape = tree / "sys/bus/pci/devices/0000:03:00.0"
    escape.unlink()
    escape.symlink_to("../../../../../secret")
    status, out = diff_of(tree, capsys)
    assert status == 2
    assert "error[I101 input-syntax]: a symbolic link leads out of the root: not a sysfs tree" in out


def flatten_links(tree: Path) -> int:
    """Write every symbolic link under `tree` as a file holding its target, as a copy that
    does not keep links does (git with core.symlinks=false); the number of links flattened."""
    links = [path for path in tree.rglob("*") if path.is_symlink()]
    for link in links:
        target = os.readlink(link)
        link.unlink()
        link.write_text(target)
    return len(links)


def test_a_capture_whose_links_were_copied_as_files_reads_as_the_capture(tmp_path, capsys):
    tree = good_copy(tmp_path)
    assert flatten_links(tree) > 0
    assert main(["diff", SPEC, "--sysfs-root", str(tree)]) == 0
    flat, original = read_live(tree).machine, read_live(TREES / "good").machine
    assert (sorted(flat.gpus), sorted(flat.nics), sorted(flat.bridges)) == (
        sorted(original.gpus), sorted(original.nics), sorted(original.bridges))


def test_a_link_copied_as_a_file_is_held_to_a_links_bounds(tmp_path, capsys):
    tree = good_copy(tmp_path)
    flatten_links(tree)
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "class").write_text("0x030200\n")
    (tree / "sys/bus/pci/devices/0000:03:00.0").write_text("../../../../../secret")
    status, out = diff_of(tree, capsys)
    assert status == 2
    assert "error[I101 input-syntax]: a symbolic link leads out of the root: not a sysfs tree" in out


def test_an_attribute_that_reads_like_a_path_is_not_taken_for_a_link(tmp_path):
    tree = good_copy(tmp_path)
    (tree / "sys/bus/pci/devices/0000:03:00.0/numa_node").unlink()
    target = next(tree.glob("sys/devices/**/0000:03:00.0"))
    (target / "numa_node").write_text("../0\n")
    assert read_live(tree).machine.gpus["0000:03:00.0"].numa is None


def test_an_absolute_link_is_taken_from_the_root_as_chroot_does(tmp_path):
    tree = good_copy(tmp_path)
    link = tree / "sys/bus/pci/devices/0000:03:00.0"
    target = os.readlink(link)
    link.unlink()
    link.symlink_to("/sys/devices/" + target.split("devices/", 1)[1])
    assert "0000:03:00.0" in read_live(tree).machine.gpus


def test_a_huge_attribute_is_refused_after_its_bound(tmp_path, capsys):
    tree = good_copy(tmp_path)
    with open(tree / "proc/cpuinfo", "wb") as handle:
        handle.truncate(MAX_ATTRIBUTE_BYTES + 1)  # sparse: nothing is written
    status, out = diff_of(tree, capsys)
    assert status == 2
    assert f"{tree}/proc/cpuinfo:1:1: error[I101 input-syntax]: larger than 4 MiB: not a sysfs attribute" in out


def test_a_fifo_where_an_attribute_should_be_is_refused_without_blocking(tmp_path, capsys):
    tree = good_copy(tmp_path)
    vendor = next(tree.glob("sys/devices/pci0000:00/**/0000:03:00.0/vendor"))
    vendor.unlink()
    os.mkfifo(vendor)
    status, out = diff_of(tree, capsys)
    assert status == 2
    assert "0000:03:00.0/vendor:1:1: error[I101 input-syntax]: not a regular file: not a sysfs attribute" in out


def test_a_name_that_is_not_utf8_is_left_out_with_a_warning(tmp_path, capsys):
    tree = good_copy(tmp_path)
    os.symlink(b"eth\xff", os.path.join(os.fsencode(tree), b"sys/class/net/eth\xff"))
    status, out = diff_of(tree, capsys)
    assert status == 0
    assert f"{tree}/sys/class/net:1:1: warning[I103 input-value]: entry eth\\xff is not a printable ASCII name: left out" in out


def test_a_directory_that_is_not_a_sysfs_root_is_an_i100(tmp_path, capsys):
    status, out = diff_of(tmp_path, capsys)
    assert status == 2
    assert (f"{tmp_path}/sys/bus/pci/devices:1:1: error[I100 input-unreadable]: no such directory: not a sysfs root "
            "(give --sysfs-root the directory 'hwspec capture' wrote)") in out


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "nvml.json:1:2: error[I101 input-syntax]: not NVML's answers as 'hwspec capture' saves them"),
    ('{"nvml": 2, "gpus": []}', 'nvml.json:1:1: error[I101 input-syntax]: not NVML\'s answers: expected {"nvml": 1, "gpus": [...]}'),
    ('{"nvml": 1, "gpus": [{"bus": "0000:03:00.0", "nvlinks": [{"link": "x"}]}]}',
     "nvml.json:1:1: warning[I103 input-value]: 0000:03:00.0: an NVLink entry without a link number and state: left out"),
])
def test_hostile_nvml_answers_are_located_problems(text, message, tmp_path, capsys):
    tree = good_copy(tmp_path)
    (tree / "nvml.json").write_text(text)
    _, out = diff_of(tree, capsys)
    assert message in out
    assert "Traceback" not in out


def test_without_nvidia_ml_py_nvml_is_a_note_not_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert nvml.query() == (None, ["nvidia-ml-py is not installed: NVLink state not read (pip install nvidia-ml-py)"])


def test_nvml_answers_round_trip_through_dump_one_gpu_per_line():
    answers = {"nvml": 1, "gpus": [{"bus": "0000:03:00.0", "name": "X", "nvlinks": [], "fabric": None},
                                   {"bus": "0000:83:00.0", "name": "Y", "nvlinks": [], "fabric": None}]}
    text = nvml.dump(answers)
    assert text.splitlines()[1].startswith('{"bus": "0000:03:00.0"') and text.splitlines()[2].startswith('{"bus": "0000:83:00.0"')
    import json

    assert json.loads(text) == answers


# ------------------------------------------------------------ docs/live.md's examples, run


def docs_blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```$", (ROOT / "docs" / "live.md").read_text(), re.M | re.S)


@pytest.mark.slow  # runs the page's blocks in a shell, each running hwspec on this machine
def test_the_live_and_capture_examples_of_docs_live_md_run_clean_on_this_machine(tmp_path):
    live, capture, *_ = docs_blocks("sh")  # the first two; the fault example is the last
    for block in (live, capture):
        result = subprocess.run(["bash", "-ec", block], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                                env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "node.yaml").is_file() and (tmp_path / "node-capture" / "proc" / "cpuinfo").is_file()


@pytest.mark.slow  # runs the page's command in a shell, running hwspec
def test_the_fault_example_of_docs_live_md_prints_what_the_page_shows():
    *_, fault = docs_blocks("sh")
    result = subprocess.run(["bash", "-c", fault], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    shown = (ROOT / "docs" / "live.md").read_text().split(f"```sh\n{fault}```\n\n```text\n", 1)[1].split("```", 1)[0]
    assert (result.returncode, result.stdout) == (1, shown)  # the output block right after the command


def test_a_root_port_without_a_numa_node_is_drafted_on_the_socket_its_devices_name_and_diffs_clean(tmp_path, capsys):
    """A root port reading numa_node -1 over a GPU and a NIC that read 1: the draft hangs it from
    cpu1, where they say they are (the first socket, cpu0, gave gpu1 cpu0's close CPUs: a D108
    on the machine the draft was made from, which a health check drains)."""
    tree = good_copy(tmp_path)
    (Path(os.path.realpath(tree / "sys/bus/pci/devices/0000:80:01.0")) / "numa_node").write_text("-1\n")
    draft = tmp_path / "draft.yaml"
    assert main(["import", "--sysfs-root", str(tree), "-o", str(draft)]) == 0
    ports = [line for line in draft.read_text().splitlines() if "assumed: 'the input gives no NUMA node" in line]
    assert ports == ["  upstream: {value: cpu1, assumed: 'the input gives no NUMA node here (numa:-1): attached to cpu1, "
                     "where the devices below it say they are'}"]
    capsys.readouterr()
    assert main(["diff", str(draft), "--sysfs-root", str(tree)]) == 0, capsys.readouterr().out
