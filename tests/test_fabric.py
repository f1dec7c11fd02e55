"""The NVLink fabric clique: `hwspec diff` finds a GPU outside its node's clique, a GPU still
registering with the fabric manager and a multi-node tray with no NVLink domain (D113), the
node report names the node's clique, and `hwspec fleet-report --cluster` compares cliques
across the nodes of the cluster's NVLink domains."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.live.diff import diff, nvlink_leaves_the_node
from hwspec.live.merge import read_inputs
from hwspec.model.load import load_platform

ROOT = Path(__file__).resolve().parent.parent
LIVE = Path("tests/data/live")
TRAY = "platforms/gb200-tray.yaml"
UUID = "00000001-0000-0000-0000-000000000001"
HINT = ("  hint: start the fabric manager and IMEX ('systemctl status nvidia-fabricmanager nvidia-imex') and check "
        "'nvidia-smi -q' (Fabric: State, CliqueId, ClusterUUID)")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def diff_text(capsys: pytest.CaptureFixture[str], spec: str, *inputs: str | Path) -> tuple[int, list[str]]:
    status = main(["diff", spec, *map(str, inputs)])
    return status, capsys.readouterr().out.splitlines()


# ---------------------------------------------------------------- one node


def test_a_gb200_tray_whose_gpus_share_one_registered_clique_matches_its_spec(capsys):
    assert diff_text(capsys, TRAY, LIVE / "smi-gb200-tray.xml") == (0, [])


def test_a_gpu_in_another_clique_is_a_d113_at_its_spec_line_naming_both_cliques(capsys):
    assert diff_text(capsys, TRAY, LIVE / "smi-gb200-tray-clique-split.xml") == (1, [
        f"platforms/gb200-tray.yaml:80:5: error[D113 nvlink-clique]: gpu3 is in NVLink domain {UUID}, clique 3 in the machine, "
        f"but gpu0, gpu1, gpu2 are in NVLink domain {UUID}, clique 2: every GPU of a node is in one clique "
        "(seen at tests/data/live/smi-gb200-tray-clique-split.xml:112)", HINT])


def test_a_gpu_still_registering_with_the_fabric_manager_is_a_d113(capsys):
    assert diff_text(capsys, TRAY, LIVE / "smi-gb200-tray-registering.xml") == (1, [
        "platforms/gb200-tray.yaml:80:5: error[D113 nvlink-clique]: gpu1: fabric state Completed expected (registered with "
        "the fabric manager), but In Progress in the machine (seen at tests/data/live/smi-gb200-tray-registering.xml:56)", HINT])


def test_a_multi_node_tray_without_any_nvlink_domain_is_a_d113_at_its_nvlink_topology(capsys):
    assert diff_text(capsys, TRAY, LIVE / "smi-gb200-tray-no-fabric.xml") == (1, [
        "platforms/gb200-tray.yaml:93:13: error[D113 nvlink-clique]: gpu0, gpu1, gpu2, gpu3: NVLinks to the NVLink switches "
        "of a multi-node domain in the spec, but in no NVLink domain in the machine (no fabric cluster UUID) "
        "(seen at tests/data/live/smi-gb200-tray-no-fabric.xml:7)", HINT])


def test_only_grace_boards_whose_nvswitches_are_off_the_node_need_a_domain():
    """An HGX H100 (NVSwitches on the board) without a domain is clean; the GB200 tray is not."""
    assert nvlink_leaves_the_node(load_platform(TRAY))
    assert not any(nvlink_leaves_the_node(load_platform(f"platforms/{name}.yaml"))
                   for name in ("hgx-h100", "aws-p5-48xlarge", "jupiter-gh200", "zionex"))
    platform = load_platform("platforms/hgx-h100.yaml")
    assert diff(platform, read_inputs([LIVE / "smi-h100-8gpu.xml"])) == []


def test_nvml_answers_of_a_captured_tree_are_compared_the_same(tmp_path, capsys):
    """The sysfs tree's nvml.json with gpu1 in another clique: the D113 points at NVML's line."""
    tree = tmp_path / "tree"
    shutil.copytree("tests/data/sysfs/good", tree, symlinks=True)
    nvml_file = tree / "nvml.json"
    lines = nvml_file.read_text().splitlines()
    for number, clique in ((1, 7), (2, 8)):
        entry = json.loads(lines[number].rstrip(","))
        entry["fabric"] = {"cluster_uuid": UUID, "clique_id": clique, "state": "Completed"}
        lines[number] = json.dumps(entry, sort_keys=True) + ("," if lines[number].endswith(",") else "")
    nvml_file.write_text("\n".join(lines) + "\n")
    status = main(["diff", "tests/data/sysfs/good-node.yaml", "--sysfs-root", str(tree), "--format", "json", "--node", "n1"])
    report = json.loads(capsys.readouterr().out)
    assert (status, report["fabric"]) == (1, None)
    assert [(f["code"], f["device"], f["message"]) for f in report["findings"]] == [
        ("D113", "gpu1", f"gpu1 is in NVLink domain {UUID}, clique 8 in the machine, but gpu0 is in NVLink domain {UUID}, "
                         f"clique 7: every GPU of a node is in one clique (seen at {tree}/nvml.json:3)")]


def test_the_node_report_names_the_clique_its_gpus_agree_on(capsys):
    assert main(["diff", TRAY, str(LIVE / "smi-gb200-tray.xml"), "--format", "json", "--node", "gb200-r0-t00"]) == 0
    assert json.loads(capsys.readouterr().out)["fabric"] == {"cluster_uuid": UUID, "clique_id": 2}
    assert main(["diff", "platforms/hgx-h100.yaml", str(LIVE / "smi-h100-8gpu.xml"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["fabric"] is None
