"""`validate` clean means `generate` succeeds, on real inputs too (issue 34, item 4): every file
`hwspec import` reads in ../shared/data/real-machines/ (real machines as their own tools wrote
them; skipped where the folder is absent) and in tests/data/ is imported; where the draft
validates with no error, generating it must succeed. A limit generate enforces that validate
does not report is a missing located rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.cli.commands import main
from tests.shared_data import REAL_MACHINES as REAL

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SUFFIXES = (".xml", ".txt")


def _inputs() -> list[Path]:
    found = sorted(p for p in (*DATA.glob("*"), *(DATA / "live").glob("*")) if p.suffix in SUFFIXES)
    if REAL.is_dir():
        found += sorted(p for p in (*REAL.glob("*"), *(REAL / "h200-vm").glob("*")) if p.suffix in SUFFIXES)
    return found


INPUTS = _inputs()


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_the_real_machines_are_among_the_inputs_when_present() -> None:
    if not REAL.is_dir():
        pytest.skip(f"{REAL} is absent (the project's shared data)")
    assert any(p.parent == REAL for p in INPUTS)


@pytest.mark.slow  # imports, validates and generates every input file (about 70)
@pytest.mark.parametrize("path", INPUTS, ids=_name)
def test_an_imported_draft_that_validates_generates(path: Path, tmp_path: Path, capsys) -> None:
    draft = tmp_path / "draft.yaml"
    main(["import", str(path), "-o", str(draft)])  # exit 1 when the draft has errors: still judged below
    if not draft.exists():
        capsys.readouterr()
        pytest.skip("not an input import drafts a node from on its own")
    capsys.readouterr()
    if main(["validate", str(draft)]) != 0:
        out = capsys.readouterr().out
        assert "error[" in out  # refused with a located error, which is the promise for a file that does not validate
        return
    capsys.readouterr()
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0, capsys.readouterr().err


def test_a_cpu_of_unknown_architecture_is_a_located_hw901_not_a_refused_generate(tmp_path: Path, capsys) -> None:
    # nvidia-smi -q -x says nothing of the CPU: the draft's socket has no arch, which NCCL's <cpu> requires
    draft = tmp_path / "draft.yaml"
    main(["import", str(DATA / "live" / "smi-h100-8gpu.xml"), "-o", str(draft)])
    capsys.readouterr()
    assert main(["validate", str(draft)]) == 1
    errors = [line for line in capsys.readouterr().out.splitlines() if "error[" in line]
    assert [e.split(": ", 1)[1] for e in errors] == [
        "error[HW901 nccl-topo-writable]: CPU cpu0: its <cpu> in nccl-topo.xml would lack 'arch', which NCCL requires "
        "(its init fails on such a file)"]
    line = int(errors[0].removeprefix(f"{draft}:").split(":")[0])
    assert draft.read_text().splitlines()[line - 1] == "  part: unknown"  # at the CPU's part
    text = draft.read_text().replace("  part: unknown\n", "  part: unknown\n  override: {arch: x86_64, vendor: amd}\n", 1)
    draft.write_text(text)
    assert main(["validate", str(draft)]) == 0
    assert main(["generate", str(draft), "-o", str(tmp_path / "out"), "--no-svg"]) == 0


def test_an_amd_cpu_without_a_model_on_an_rccl_node_is_a_located_hw911_not_a_refused_generate(tmp_path: Path, capsys) -> None:
    # RCCL, unlike NCCL, requires familyid and modelid of an AMD CPU: an unknown part's override without a model
    platform = tmp_path / "amd.yaml"
    text = (ROOT / "platforms" / "mi300x-oam.yaml").read_text()
    platform.write_text(text.replace("    part: epyc-9654\n", "    part: unknown\n    override: {arch: x86_64, vendor: amd, family: 25}\n", 1))
    assert main(["validate", str(platform)]) == 1
    errors = [line for line in capsys.readouterr().out.splitlines() if "error[" in line]
    assert [e.split(": ", 1)[1] for e in errors] == [
        f"error[HW911 rccl-topo-writable]: CPU cpu{i}: its <cpu> in rccl-topo.xml would lack 'modelid', which RCCL requires "
        "(its init fails on such a file)" for i in (0, 1)]
    line = int(errors[0].removeprefix(f"{platform}:").split(":")[0])
    assert platform.read_text().splitlines()[line - 1] == "    part: unknown"  # at the CPU's part
    platform.write_text(platform.read_text().replace("family: 25}", "family: 25, model: 17}"))
    assert main(["validate", str(platform)]) == 0
    assert main(["generate", str(platform), "-o", str(tmp_path / "out"), "--no-svg"]) == 0


def _cluster(tmp_path: Path, second: str, rules: str = "") -> Path:
    """A cluster of hgx-h100 nodes and `second` nodes (shipped platforms, copied beside it)."""
    for name in ("hgx-h100.yaml", second):
        (tmp_path / name).write_text((ROOT / "platforms" / name).read_text())
    path = tmp_path / "cluster.yaml"
    path.write_text(f"hwspec: 1\nkind: cluster\nname: mixed\n{rules}nodes:\n"
                    '  - {platform: hgx-h100.yaml, count: 2, hostname: "h${i}"}\n'
                    f'  - {{platform: {second}, count: 2, hostname: "m${{i}}"}}\n')
    return path


def test_node_platforms_of_two_collective_libraries_are_a_located_hw904_not_a_refused_generate(tmp_path: Path, capsys) -> None:
    cluster = _cluster(tmp_path, "mi300x-oam.yaml")
    assert main(["validate", str(cluster)]) == 1
    errors = [line for line in capsys.readouterr().out.splitlines() if "error[" in line]
    assert errors == [
        f"{cluster}:6:16: error[HW904 cluster-files-writable]: nodes[1] (mi300x-oam) runs RCCL, nodes[0] (hgx-h100) "
        "NCCL: one job's ranks, and the acceptance runs, cannot span both"]
    assert main(["generate", str(cluster), "-o", str(tmp_path / "out"), "--no-svg"]) == 2


def test_gpu_counts_that_differ_cannot_be_switched_off_into_a_refused_generate(tmp_path: Path, capsys) -> None:
    cluster = _cluster(tmp_path, "jupiter-gh200.yaml", 'rules:\n  HW810: {severity: "off", reason: "tried"}\n')
    assert main(["validate", str(cluster)]) == 1
    errors = [line for line in capsys.readouterr().out.splitlines() if "error[" in line]
    assert errors == [f"{cluster}:5:10: error[E304]: rules: HW810 uniform-gpus-per-node cannot be set to off",
                      f"{cluster}:8:16: error[HW810 uniform-gpus-per-node]: nodes[1] (jupiter-gh200) has 4 GPUs per node, "
                      "nodes[0] (hgx-h100) has 8"]
