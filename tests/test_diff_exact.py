"""`hwspec diff` compares the whole chain of PCIe bridges above a device with the spec's: a NIC
moved from the CPU into a GPU's switch, or one level deeper under the same switch, is a D103 at
the spec's `upstream` with both chains in the message."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hwspec.diagnostics import HwspecError
from hwspec.live.diff import diff
from hwspec.live.merge import read_inputs
from hwspec.model.load import load_platform
from hwspec.testing import hostile_import_inputs, node_yaml
from hwspec.topology import topology_of
from tests.shared_data import REAL_MACHINES as REAL

ROOT = Path(__file__).resolve().parent.parent
SPEC = "tests/fixtures/rules/base_2gpu.yaml"
DUMP = Path("tests/data/live/base-2gpu.nccl.xml")
FE0 = ('    <pci busid="0000:30:00.0" class="0x020000" link_speed="8.0 GT/s PCIe" link_width="16">\n'
       '      <nic>\n        <net name="eth0" dev="2" speed="100000" port="0" gdr="0"/>\n      </nic>\n    </pci>\n')
NIC0 = ('        <pci busid="0000:16:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="16">\n'
        '          <nic>\n            <net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1"/>\n          </nic>\n'
        '        </pci>\n')


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def findings(tmp_path: Path, dump: str) -> list[str]:
    live = tmp_path / "live.xml"
    live.write_text(dump)
    return [d.format() for d in diff(load_platform(SPEC), read_inputs([live]))]


def test_the_unchanged_dump_diffs_clean(tmp_path):
    assert findings(tmp_path, DUMP.read_text()) == []


def test_a_nic_moved_from_the_cpu_into_a_gpus_switch_is_a_d103_with_both_chains(tmp_path):
    text = DUMP.read_text()
    assert FE0 in text and NIC0 in text
    moved = text.replace(FE0, "").replace(NIC0, NIC0 + FE0)
    at = load_platform(SPEC).locate("fe0", "pcie", "upstream")
    assert findings(tmp_path, moved) == [
        f"{SPEC}:{at.line}:{at.col}: error[D103 device-placement]: fe0 (0000:30:00.0) is under cpu0 in the spec, "
        f"but under 0000:11:00.0 < 0000:10:00.0 < NUMA node 0 in the machine (seen at {tmp_path}/live.xml:15)"]


def test_a_nic_one_bridge_deeper_under_the_same_switch_is_a_d103(tmp_path):
    text = DUMP.read_text()
    assert NIC0 in text
    deeper = text.replace(NIC0, '<pci busid="0000:15:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">\n'
                          + NIC0 + "</pci>\n")
    at = load_platform(SPEC).locate("nic0", "pcie", "upstream")
    assert findings(tmp_path, deeper) == [
        f"{SPEC}:{at.line}:{at.col}: error[D103 device-placement]: nic0 (0000:16:00.0) is under sw0 (0000:11:00.0) < "
        "rp0 (0000:10:00.0) < cpu0 in the spec, but under 0000:15:00.0 < 0000:11:00.0 < 0000:10:00.0 < NUMA node 0 in the machine "
        f"(seen at {tmp_path}/live.xml:11)"]


# ------------------------------------------------------------------ a draft diffs clean against its own input

FABRIC_FAULTS = {"smi-gb200-tray-clique-split.xml", "smi-gb200-tray-registering.xml"}
"""Samples of a node whose GPUs disagree on their NVLink clique or are still registering: a
fault of the machine, not of a spec, so no draft describes it away (D113: tests/test_fabric.py)."""
LIVE_FILES = sorted(p for p in (*(ROOT / "tests/data/live").iterdir(), *(ROOT / "tests/data").glob("*.xml"))
                    if p.suffix in (".xml", ".txt") and p.name not in FABRIC_FAULTS)


def real_inputs(folder: Path) -> list[Path]:
    """Every file under `folder` that `import` reads (by its content, as `import` tells them
    apart: NCCL/RCCL dumps, lstopo, nvidia-smi outputs), a sysfs capture's files apart."""
    from hwspec.live.inputs import sniff

    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and "capture" not in p.relative_to(folder).parts
                  and p.suffix in (".xml", ".txt") and sniff(p.read_bytes()) is not None)


REAL_FILES = real_inputs(REAL)
SYSFS_ROOTS = sorted([ROOT / "tests/data/sysfs/good", ROOT / "tests/data/sysfs/nvswitch-board", *REAL.glob("*/capture")])
"""The sysfs captures of healthy machines (the others hold one fault each: tests/test_live_sysfs.py)."""


def draft_findings(paths: list[Path], importable: bool = False) -> list[str]:
    """`diff` of the draft `import` writes from `paths` against the same inputs; with
    `importable`, an input `import` refuses fails the test instead of comparing nothing."""
    from hwspec import content
    from hwspec.live.draft import draft_text
    from hwspec.model.parts import load_catalogue
    from hwspec.testing import load_node_text

    machine = read_inputs(paths)
    if any(d.code in ("I100", "I101") for d in machine.problems) or not (machine.gpus or machine.nics or machine.numa):
        assert not importable, [d.format() for d in machine.problems]
        return []  # not importable: nothing to compare
    text, _ = draft_text(machine, load_catalogue([content.builtin_dir("parts")]), "drafted")
    try:
        drafted = load_node_text(text, "drafted.yaml")
    except HwspecError:
        return []  # a name the spec refuses: `validate` reports it at its line (tests/test_import_hostile.py)
    return [d.format() for d in diff(drafted, read_inputs(paths))]


@pytest.mark.slow  # imports and diffs every live sample (about 50)
@pytest.mark.parametrize("path", LIVE_FILES, ids=lambda p: p.name)
def test_the_draft_of_every_live_sample_diffs_clean_against_it(path):
    assert draft_findings([path]) == []


@pytest.mark.slow  # imports and diffs every real machine's file
@pytest.mark.parametrize("path", REAL_FILES or [None], ids=lambda p: str(p.relative_to(REAL)) if p else "absent")
def test_the_draft_of_every_real_machine_file_diffs_clean_against_it(path):
    if path is None:
        pytest.skip("../shared/data/real-machines is absent")
    assert draft_findings([path], importable=True) == []


def test_every_real_machine_input_held_is_compared():
    if not REAL_FILES:
        pytest.skip("../shared/data/real-machines is absent")
    held = {str(p.relative_to(REAL)) for p in REAL_FILES}
    assert {"h200-vm/nccl-2.28.9-dump.xml", "h200-vm/lstopo-2.9.xml", "h200-vm/nvidia-smi-topo-m.txt",
            "rwkv-2xrtx4090.nccl.xml", "hwloc-power8-4xp100.lstopo.xml"} <= held


@pytest.mark.parametrize("root", SYSFS_ROOTS, ids=lambda p: p.parent.name + "/" + p.name)
def test_the_draft_of_every_healthy_sysfs_capture_diffs_clean_against_it(root):
    from hwspec import content
    from hwspec.live.draft import draft_text
    from hwspec.live.sysfs import read_sysfs
    from hwspec.model.parts import load_catalogue
    from hwspec.testing import load_node_text

    text, _ = draft_text(read_sysfs(root), load_catalogue([content.builtin_dir("parts")]), "drafted")
    assert [d.format() for d in diff(load_node_text(text, "drafted.yaml"), read_sysfs(root))] == []


@settings(max_examples=settings().max_examples, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(hostile_import_inputs(), st.booleans())
def test_the_draft_of_any_importable_input_diffs_clean_against_it(tmp_path, case, hostile):
    live = tmp_path / "live.input"
    live.write_bytes(case.data if hostile else case.benign_data)
    assert draft_findings([live]) == []


@settings(max_examples=settings().max_examples, suppress_health_check=[HealthCheck.too_slow])
@given(node_yaml(max_gpus=8, max_sockets=4, virtual_links=True, numa_nodes=True), st.sampled_from(
    [("nccl",), ("lstopo",), ("topo-m",), ("nccl", "topo-m"), ("lstopo", "topo-m"), ("nccl", "lstopo", "topo-m"),
     ("smi-xml",), ("topo-m", "smi-xml"), ("nccl", "smi-xml"), ("lstopo", "topo-m", "smi-xml")]))
def test_the_draft_of_every_input_of_a_generated_machine_diffs_clean_against_it(text, formats):
    import importlib.util
    import re
    import tempfile

    from hwspec.generate.engine import plan_for
    from hwspec.testing import load_node_text

    spec = importlib.util.spec_from_file_location("make_samples", ROOT / "tests/data/live/make_samples.py")
    samples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(samples)
    platform = load_node_text(text, "node.yaml")
    plan = plan_for(topology_of(platform), only=["nccl-topo"])
    assume(platform.gpus and plan)
    writers = {"nccl": lambda: re.sub(r"^<!-- Generated by hwspec.*-->\n", "", next(iter(plan.values()))),
               "lstopo": lambda: samples.lstopo_xml(platform), "topo-m": lambda: samples.topo_m(platform),
               "smi-xml": lambda: samples.smi_xml(platform)}
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for fmt in formats:
            path = Path(tmp) / f"input.{fmt}"
            path.write_text(writers[fmt]())
            paths.append(path)
        assert draft_findings(paths) == []


def test_unnamed_topo_m_nics_match_the_drafts_unnamed_nics_and_never_a_named_spec_nic(tmp_path):
    """A `topo -m` without its NIC legend names no NIC: its draft names none either (no placeholder)
    and diffs clean, while a spec that names its NICs is not matched to them by position."""
    topo = (ROOT / "tests/data/live/minimal-node.topo-m.txt").read_text()
    unnamed = tmp_path / "no-legend.topo-m.txt"
    unnamed.write_text(topo[:topo.index("NIC Legend:")])
    assert draft_findings([unnamed]) == []
    named = load_platform(ROOT / "tests/fixtures/spec/minimal_node.yaml")
    assert [d.message for d in diff(named, read_inputs([unnamed])) if d.code == "D101"] == [
        f"nic0 (mlx5_0/eth1, 0000:16:00.0) is not in the machine: no NIC with name mlx5_0/eth1 in {unnamed}",
        f"nic1 (mlx5_1/eth2, 0000:1e:00.0) is not in the machine: no NIC with name mlx5_1/eth2 in {unnamed}"]


# ------------------------------------------------------------------ each NIC port against its own net

CARD_DUMP = Path("tests/data/live/dual-port-pex-gen2-upstream.nccl.xml")
"""Two dual-port ConnectX-7 cards, each port's <net> with gdr="1", as the GPUs."""


def _card_without_gdr(tmp_path: Path) -> Path:
    """The card dump with both ports of the first card at gdr="0" (the GPUs still 1)."""
    text = CARD_DUMP.read_text()
    for name in ("mlx5_0", "mlx5_1"):
        line = next(line for line in text.splitlines() if f'name="{name}"' in line)
        text = text.replace(line, line.replace('gdr="1"', 'gdr="0"'))
    path = tmp_path / "card-gdr0.nccl.xml"
    path.write_text(text)
    return path


def _draft_of(path: Path) -> str:
    from hwspec import content
    from hwspec.live.draft import draft_text
    from hwspec.model.parts import load_catalogue

    text, _ = draft_text(read_inputs([path]), load_catalogue([content.builtin_dir("parts")]), "card")
    return text


def _diff_text(tmp_path: Path, spec_text: str, dump: Path) -> list[str]:
    spec = tmp_path / "card.yaml"
    spec.write_text(spec_text)
    return [d.format().split("\n")[0] for d in diff(load_platform(spec), read_inputs([dump]))]


def test_a_cards_ports_with_their_own_gpudirect_override_diff_clean_against_their_nets(tmp_path):
    dump = _card_without_gdr(tmp_path)
    text = _draft_of(dump)
    assert "  part: connectx-7-2x200g\n  override: {gpudirect: false}\n" in text
    assert _diff_text(tmp_path, text, dump) == []


def test_each_port_is_compared_with_its_own_net_once(tmp_path):
    dump = _card_without_gdr(tmp_path)
    declared = _draft_of(dump).replace("  override: {gpudirect: false}\n", "", 1)
    findings = _diff_text(tmp_path, declared, dump)
    line = next(i for i, text in enumerate(declared.splitlines(), 1) if text.startswith("backend:"))
    col = declared.splitlines()[line - 1].index("gpudirect: true") + len("gpudirect: ") + 1
    assert findings == [
        f"{tmp_path}/card.yaml:{line}:{col}: error[D109 gpudirect]: the spec declares GPUDirect RDMA, but nic0p1 (mlx5_0) "
        f"has gdr=0 in the machine (seen at {dump}:14)",
        f"{tmp_path}/card.yaml:{line}:{col}: error[D109 gpudirect]: the spec declares GPUDirect RDMA, but nic0p2 (mlx5_1) "
        f"has gdr=0 in the machine (seen at {dump}:15)"]


def test_a_port_the_spec_keeps_from_gpudirect_is_a_d109_where_the_machine_does_it(tmp_path):
    text = _draft_of(_card_without_gdr(tmp_path))
    findings = _diff_text(tmp_path, text, CARD_DUMP)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row == "  override: {gpudirect: false}")
    assert findings == [
        f"{tmp_path}/card.yaml:{line}:25: error[D109 gpudirect]: {port} ({name}) has no GPUDirect RDMA in the spec, but gdr=1 "
        f"in the machine: nccl-topo.xml keeps NCCL from using it (seen at {CARD_DUMP}:{at})"
        for port, name, at in (("nic0p1", "mlx5_0", 14), ("nic0p2", "mlx5_1", 15))]
