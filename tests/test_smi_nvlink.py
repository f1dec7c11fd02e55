"""`nvidia-smi nvlink -R` / `-s` as live inputs: each active link's remote device by bus id,
each link's state, merged with `nvidia-smi -q -x` by bus id; hostile lines are located warnings.
Fixtures are written here in the tools' own layout (a header per GPU, a tab-indented line per link)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec import content
from hwspec.live.diff import diff
from hwspec.live.draft import draft_text
from hwspec.live.inputs import read_input, sniff
from hwspec.live.merge import read_inputs
from hwspec.live.observed import NVSWITCH, Machine
from hwspec.live.smi_nvlink import parse
from hwspec.model.load import load_platform
from hwspec.model.parts import load_catalogue
from tests.cpu_time import grows_linearly

ROOT = Path(__file__).resolve().parent.parent
SMI_H100 = ROOT / "tests/data/live/smi-h100-8gpu.xml"
"""`nvidia-smi -q -x` of platforms/hgx-h100.yaml: GPU n at bus 0000:18, 28, 58, 68, 98, a8, d8, e8."""
H100_BUSES = ("18", "28", "58", "68", "98", "A8", "D8", "E8")
SWITCHES = (("F3", 5), ("F4", 4), ("F5", 4), ("F6", 5))
"""hgx-h100.yaml's NVSwitches and each GPU's links to them."""


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def header(gpu: int, name: str = "NVIDIA H100 80GB HBM3") -> str:
    return f"GPU {gpu}: {name} (UUID: GPU-{gpu:08x}-1111-2222-3333-444444444444)\n"


def remote(links: list[str]) -> str:
    """`-R` lines: the local link numbers run 0, 1, ... as nvidia-smi numbers the active links."""
    return "".join(f"\t Link {n}: Remote Device {target}\n" for n, target in enumerate(links))


def hgx_remote(skip: tuple[int, str] | None = None) -> str:
    """`nvlink -R` of an HGX H100 board, without GPU `skip[0]`'s first link to switch `skip[1]`."""
    out = ""
    for gpu in range(8):
        links = []
        for switch, count in SWITCHES:
            first = 1 if skip == (gpu, switch) else 0
            links += [f"00000000:{switch}:00.0: Link {gpu * count + k}" for k in range(first, count)]
        out += header(gpu) + remote(links)
    return out


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def two_gpu_smi(tmp_path: Path) -> Path:
    """`nvidia-smi -q -x` of the H100 sample's first two GPUs (0000:18:00.0, 0000:28:00.0)."""
    text = SMI_H100.read_text()
    cut, end = text.index('<gpu id="00000000:58'), text.rindex("</nvidia_smi_log>")
    return write(tmp_path, "smi.xml", text[:cut].replace("<attached_gpus>8<", "<attached_gpus>2<") + text[end:])


BRIDGE_REMOTE = (header(0, "NVIDIA H100 PCIe") + remote(["00000000:28:00.0: Link 0", "00000000:28:00.0: Link 2"])
                 + header(1, "NVIDIA H100 PCIe") + remote(["00000000:18:00.0: Link 0", "00000000:18:00.0: Link 2"]))
"""Two H100 PCIe cards on an NVLink bridge, each link 1 inactive: -R numbers the active links 0, 1."""
BRIDGE_STATUS = "".join(header(g, "NVIDIA H100 PCIe") + "\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n\t Link 2: 26.562 GB/s\n"
                        for g in range(2))


def messages(machine: Machine) -> list[str]:
    return [Path(d.file).name + d.format()[len(d.file):] for d in machine.problems]


def test_nvlink_remote_and_status_outputs_are_recognised_by_their_content():
    assert sniff(BRIDGE_REMOTE.encode()) == "nvlink-remote"
    assert sniff(BRIDGE_STATUS.encode()) == "nvlink-status"
    assert sniff(header(0).encode()) is None  # 'nvidia-smi -L' has the same header and no links


def test_links_to_a_gpus_bus_id_are_gpu_pairs_with_their_count_and_inactive_links_are_noted(tmp_path):
    inputs = [two_gpu_smi(tmp_path), write(tmp_path, "r.txt", BRIDGE_REMOTE), write(tmp_path, "s.txt", BRIDGE_STATUS)]
    m = read_inputs(inputs)
    assert messages(m) == []
    assert {(a, b): c for (a, b), (c, _) in m.nvlink_counts().items()} == {
        ("0000:18:00.0", "0000:28:00.0"): 2, ("0000:28:00.0", "0000:18:00.0"): 2}
    text, notes = draft_text(m, load_catalogue([content.builtin_dir("parts")]), "bridge")
    assert "nvlink: {topology: fully-connected, links_per_pair: 2" in text
    assert [n for n in notes if "inactive" in n] == [
        f"gpu{g}: NVLink 1 inactive, 2 active (nvidia-smi nvlink -s): the draft describes the active ones" for g in range(2)]


def test_links_to_other_bus_ids_are_nvswitch_links_and_diff_names_the_pair_with_a_link_down(tmp_path):
    whole = read_inputs([SMI_H100, write(tmp_path, "r.txt", hgx_remote())])
    assert sorted(whole.nvswitches) == [f"0000:{s.lower()}:00.0" for s, _ in SWITCHES]
    assert {c for (_, t), (c, _) in whole.nvlink_counts().items() if t == NVSWITCH} == {18}
    platform = load_platform("platforms/hgx-h100.yaml")
    assert diff(platform, whole) == []
    down = read_inputs([SMI_H100, write(tmp_path, "down.txt", hgx_remote(skip=(3, "F4")))])
    assert [f.format() for f in diff(platform, down)] == [
        "platforms/hgx-h100.yaml:67:7: error[D106 nvlink-count]: gpu3 has 4 NVLinks to NVSwitch nvs1 (0000:f4:00.0) in the "
        f"spec, but 3 in the machine (seen at {tmp_path}/down.txt:64)\n"
        "  hint: an NVLink down: check 'nvidia-smi nvlink --status' and the baseboard"]


def test_without_gpu_bus_ids_the_links_are_left_out_with_one_warning(tmp_path):
    m = read_inputs([write(tmp_path, "r.txt", BRIDGE_REMOTE)])
    assert m.nvlinks == [] and "nvlinks" not in m.listed
    assert messages(m) == [
        "r.txt:2:3: warning[I103 input-value]: the GPUs' bus ids are unknown, so a link's remote device cannot be told GPU "
        "from NVSwitch: NVLinks left out\n  hint: import nvidia-smi -q -x (or an NCCL dump, lstopo) with it"]


def test_a_topo_m_pair_count_other_than_nvlink_r_s_is_a_located_contradiction(tmp_path):
    topo = write(tmp_path, "topo.txt", "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                                       "GPU0\t X \tNV4\t0-15\t0\nGPU1\tNV4\t X \t0-15\t0\n\nLegend:\n\n  X    = Self\n")
    m = read_inputs([topo, two_gpu_smi(tmp_path), write(tmp_path, "r.txt", BRIDGE_REMOTE)])
    assert [line for line in messages(m) if "r.txt" in line] == [
        f"r.txt:2:3: warning[I104 input-contradiction]: NVLinks from GPU0 to GPU1: 2 here, but 4 in {tmp_path}/topo.txt:2; keeping 4",
        f"r.txt:5:3: warning[I104 input-contradiction]: NVLinks from GPU1 to GPU0: 2 here, but 4 in {tmp_path}/topo.txt:3; keeping 4"]


def test_hostile_lines_are_located_warnings_and_the_rest_is_read(tmp_path):
    text = (header(0) + "\t Link 0: Remote Device 00000000:18:00.0: Link 0\n"  # itself
            "\t Link 1: Remote Device 0x18 ; rm -rf: Link 1\n"
            "\t Link 2: Remote Device 00010000:28:00.0: Link 1\n"  # a domain of more than 16 bits
            "\t Link 99: Remote Device 00000000:28:00.0: Link 1\n"
            "\t Link 3: Remote Device 00000000:28:00.0: Link 3\n"
            "\t Link 3: Remote Device 00000000:28:00.0: Link 4\n"
            "\t Link 4: 26.562 GB/s\x1b[31m\n"
            "\tgarbage\u2028here\n"
            "GPU 4096: x\n")
    m = read_inputs([two_gpu_smi(tmp_path), write(tmp_path, "r.txt", text)])
    assert messages(m) == [
        "r.txt:3:3: warning[I103 input-value]: GPU0 link 1: 'Remote Device 0x18 ; rm -rf: Link 1' is not "
        "'Remote Device <bus id>: Link <n>': left out",
        "r.txt:4:3: warning[I103 input-value]: GPU0 link 2: 'Remote Device 00010000:28:00.0: Link 1' is not "
        "'Remote Device <bus id>: Link <n>': left out",
        "r.txt:5:3: warning[I103 input-value]: GPU0 link 99: more links than a GPU has: left out",
        "r.txt:7:3: warning[I104 input-contradiction]: GPU0 link 3 is listed twice: the first is kept",
        "r.txt:8:3: warning[I103 input-value]: GPU0 link 4: '26.562 GB/s\\x1b[31m' is not a speed such as '26.562 GB/s' "
        "or <inactive>",
        "r.txt:9:2: warning[I103 input-value]: 'garbage' is not a 'GPU n: name' header or a 'Link n: ...' line of "
        "'nvidia-smi nvlink'",
        "r.txt:10:1: warning[I103 input-value]: 'here' is not a 'GPU n: name' header or a 'Link n: ...' line of "
        "'nvidia-smi nvlink'",
        "r.txt:11:1: warning[I103 input-value]: GPU 4096: more than the 64 GPUs one node has: left out",
        f"r.txt:1:1: warning[I104 input-contradiction]: 1 GPUs here, but 2 in {tmp_path}/smi.xml: GPUs are matched by order",
        "r.txt:2:3: warning[I103 input-value]: GPU 0000:18:00.0: its link 0 reaches the GPU itself: left out"]
    assert [(l.gpu, l.target, l.count) for l in m.nvlinks] == [("0000:18:00.0", "0000:28:00.0", 1)]


NOT_NVLINK_OUTPUT = ("x.txt:1:1: error[I101 input-syntax]: no 'GPU n: name' line: not 'nvidia-smi nvlink' output\n"
                     "  hint: capture it with: nvidia-smi nvlink -R > nvlink-remote.txt (and nvidia-smi nvlink -s > nvlink-status.txt)")


@pytest.mark.parametrize("text, errors", [(b"", [NOT_NVLINK_OUTPUT]), (b"\xff\xfe\x00", [NOT_NVLINK_OUTPUT]),
                                          (b"Link 0: <inactive>\n", [NOT_NVLINK_OUTPUT]), (b"GPU 0: x\n" * 3, [])])
def test_text_without_a_gpu_header_is_one_located_error_and_gpus_without_links_are_none(tmp_path, text, errors):
    m = Machine()
    parse(text, "x.txt", m)
    assert [d.format() for d in m.problems if d.code == "I101"] == errors


def test_every_truncation_gives_located_diagnostics_never_a_traceback():
    data = (BRIDGE_REMOTE + BRIDGE_STATUS).encode()
    for cut in range(len(data)):
        m = Machine()
        parse(data[:cut], "cut.txt", m)
        assert all(d.file == "cut.txt" and d.line >= 1 and d.col >= 1 for d in m.problems), cut


@pytest.mark.slow  # grows the input to show its reader linear
def test_parsing_is_linear_in_the_input(tmp_path):
    """Long lines and many of them: no regular expression or merge step grows faster than the input."""
    def body(n: int) -> str:
        return header(0) + "".join(f"\t Link 1: Remote Device {'0' * 4000}\n" for _ in range(n))

    paths = {n: write(tmp_path, f"long{n}.txt", body(n)) for n in (1000, 4000)}
    assert grows_linearly(lambda n: read_input(paths[n]), 1000, 4000)
