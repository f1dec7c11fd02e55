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
    assert json.loads(capsys.readouterr().out)["fabric"] == {"cluster_uuid": None, "clique_id": None}  # asked: in none
    assert main(["diff", "tests/fixtures/spec/minimal_node.yaml", str(LIVE / "minimal-node.nccl.xml"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["fabric"] is None  # an NCCL dump does not say: not known


# ---------------------------------------------------------------- a fleet against its NVLink domains

CLUSTER = "platforms/gb200-nvl72-x4.yaml"
SAMPLE = Path("tests/data/fleet-nvl72/split-rack.json")


def tray(rack: int, slot: int) -> str:
    """gb200-nvl72-x4's host name of tray `slot` of rack `rack`."""
    return f"gb200-r{rack}-t{slot:02}"


UNKNOWN = "unknown"
"""A tray whose report does not know its clique (`"fabric": null`: NVML not asked)."""


def nvl72_reports(clique=lambda rack, slot: rack + 1, missing=()) -> str:
    """The clean node reports of gb200-nvl72-x4's 72 trays, one per line, each with the clique
    `clique(rack, slot)` (None: in no NVLink domain; UNKNOWN: not known), less the trays in `missing`."""
    lines = []
    for rack in range(4):
        for slot in range(18):
            if tray(rack, slot) in missing:
                continue
            found = clique(rack, slot)
            fabric = None if found == UNKNOWN else {"cluster_uuid": UUID if found is not None else None, "clique_id": found}
            lines.append(json.dumps({
                "hwspec_report": 1, "node": tray(rack, slot), "spec": TRAY, "platform": "gb200-tray", "status": "clean",
                "exit_code": 0, "fabric": fabric, "findings": []}))
    return "\n".join(lines) + "\n"


def split_rack(rack: int, slot: int) -> int:
    """Rack 1's second half in clique 9: the rack's NVLink switch trays partitioned in two."""
    return 9 if (rack, slot) >= (1, 9) and rack == 1 else rack + 1


def fleet_report(capsys, tmp_path, text: str, *options: str) -> tuple[int, str, str]:
    reports = tmp_path / "reports.json"
    reports.write_text(text)
    status = main(["fleet-report", "--cluster", CLUSTER, "--collected", str(reports), *options])
    out, err = capsys.readouterr()
    return status, out, err


def domains_section(out: str) -> list[str]:
    return out.split("\nNVLink domains of ", 1)[1].splitlines()


def test_racks_each_in_a_clique_of_their_own_are_clean(capsys, tmp_path):
    status, out, err = fleet_report(capsys, tmp_path, nvl72_reports())
    assert (status, err) == (0, "")
    assert domains_section(out) == ["platforms/gb200-nvl72-x4.yaml: 4 domain(s), 72 node(s):",
                                    "  without a report: 0 node(s)",
                                    "  no node's NVLink clique disagrees with the cluster's NVLink domains"]


def test_a_rack_split_into_two_cliques_is_a_d114_at_the_nvlink_domain_line_with_both_hostlists(capsys, tmp_path):
    status, out, _ = fleet_report(capsys, tmp_path, nvl72_reports(split_rack))
    assert status == 1
    assert domains_section(out)[2:] == [
        "  platforms/gb200-nvl72-x4.yaml:25:1: error[D114 nvlink-domain-clique]: nvl72-rack1: its nodes are in 2 NVLink "
        f"cliques (NVLink domain {UUID}, clique 2: gb200-r1-t[00-08]; NVLink domain {UUID}, clique 9: gb200-r1-t[09-17]), "
        "but the cluster puts them in one NVLink domain: one clique expected"]


def test_two_racks_in_one_clique_is_a_d114_naming_both_domains(capsys, tmp_path):
    status, out, _ = fleet_report(capsys, tmp_path, nvl72_reports(lambda rack, slot: 3 if rack in (2, 3) else rack + 1))
    assert status == 1
    assert domains_section(out)[2:] == [
        f"  platforms/gb200-nvl72-x4.yaml:25:1: error[D114 nvlink-domain-clique]: NVLink domain {UUID}, clique 3 holds "
        "nodes of 2 NVLink domains of the cluster (nvl72-rack2: gb200-r2-t[00-17]; nvl72-rack3: gb200-r3-t[00-17]): "
        "one clique per domain expected"]


def test_trays_in_no_domain_split_their_rack_and_a_rack_with_none_is_left_to_diff(capsys, tmp_path):
    """Rack 0's tray 5 without fabric splits rack 0; rack 2, with no clique at all, is the nodes' own D113."""
    status, out, _ = fleet_report(capsys, tmp_path, nvl72_reports(
        lambda rack, slot: None if rack == 2 or (rack, slot) == (0, 5) else rack + 1))
    assert status == 1
    assert domains_section(out)[2:] == [
        "  platforms/gb200-nvl72-x4.yaml:25:1: error[D114 nvlink-domain-clique]: nvl72-rack0: its nodes are in 2 NVLink "
        f"cliques (NVLink domain {UUID}, clique 1: gb200-r0-t[00-04,06-17]; no NVLink domain: gb200-r0-t05), "
        "but the cluster puts them in one NVLink domain: one clique expected"]


def test_trays_whose_reports_do_not_know_their_clique_are_left_out_not_a_split(capsys, tmp_path):
    """`"fabric": null` (a node checked without NVML) is no evidence of another clique."""
    status, out, _ = fleet_report(capsys, tmp_path, nvl72_reports(
        lambda rack, slot: UNKNOWN if (rack, slot) in {(0, 5), (1, 0), (1, 1)} else rack + 1))
    assert status == 0
    assert not any("D114" in line for line in domains_section(out))


def test_cluster_nodes_without_a_report_are_listed_not_an_error(capsys, tmp_path):
    status, out, _ = fleet_report(capsys, tmp_path, nvl72_reports(missing={tray(3, 16), tray(3, 17), tray(0, 0)}))
    assert status == 0
    assert domains_section(out)[1] == "  without a report: 3 node(s): gb200-r0-t00,gb200-r3-t[16-17]"


def test_the_json_report_gives_each_clique_with_its_hostlist(capsys, tmp_path):
    status, out, _ = fleet_report(capsys, tmp_path, nvl72_reports(split_rack, missing={tray(3, 17)}), "--format", "json")
    cluster = json.loads(out)["cluster"]
    assert (status, cluster["missing"], cluster["not_in_cluster"]) == (
        1, {"nodes": 1, "hostlist": "gb200-r3-t17"}, {"nodes": 0, "hostlist": ""})
    assert [(f["code"], f["line"], f["domain"], f["cliques"]) for f in cluster["findings"]] == [
        ("D114", 25, "nvl72-rack1", [
            {"cluster_uuid": UUID, "clique_id": 2, "nodes": 9, "hostlist": "gb200-r1-t[00-08]"},
            {"cluster_uuid": UUID, "clique_id": 9, "nodes": 9, "hostlist": "gb200-r1-t[09-17]"}])]


def test_without_cluster_the_fleet_report_is_what_it_was(capsys, tmp_path):
    reports = tmp_path / "reports.json"
    reports.write_text(nvl72_reports(split_rack))
    assert main(["fleet-report", "--collected", str(reports), "--format", "json"]) == 0
    assert "cluster" not in json.loads(capsys.readouterr().out)
    assert main(["fleet-report", "--collected", str(reports)]) == 0
    assert "NVLink" not in capsys.readouterr().out


def test_a_fabric_that_is_not_an_object_is_a_located_e602(capsys, tmp_path):
    text = nvl72_reports().replace('"fabric": {"cluster_uuid": "' + UUID + '", "clique_id": 1}', '"fabric": "rack0"', 1)
    status, _, err = fleet_report(capsys, tmp_path, text)
    column = text.index('"rack0"') + 1  # on the first line
    assert status == 1
    assert err.startswith(f"{tmp_path}/reports.json:1:{column}: error[E602]: fabric is a string, not an object or null\n")


def without_fabric(tmp_path: Path) -> str:
    """platforms/zion-16.yaml without its `backend:` (beside a copy of its node platform): a
    cluster with neither NVLink domains nor leaves."""
    shutil.copy(ROOT / "platforms" / "zion.yaml", tmp_path / "zion.yaml")
    text = (ROOT / "platforms" / "zion-16.yaml").read_text()
    start = text.index("backend:")
    (tmp_path / "no-fabric.yaml").write_text(text[:start] + text[text.index("frontend:", start):])
    return str(tmp_path / "no-fabric.yaml")


@pytest.mark.parametrize(("cluster", "message"), [
    (TRAY, "hwspec: platforms/gb200-tray.yaml is not a cluster file: no NVLink domains to compare the nodes' cliques with\n"),
    (without_fabric, "hwspec: {tmp}/no-fabric.yaml declares no nvlink_domain and no backend fabric: no NVLink domains or "
                     "leaves to compare the reports with\n"),
], ids=["a-node-platform", "no-domains-no-fabric"])
def test_a_cluster_option_without_nvlink_domains_or_leaves_is_bad_usage(capsys, tmp_path, cluster, message):
    reports = tmp_path / "reports.json"
    reports.write_text(nvl72_reports())
    path = cluster(tmp_path) if callable(cluster) else cluster
    assert main(["fleet-report", "--cluster", path, str(reports)]) == 2
    assert capsys.readouterr().err == message.format(tmp=tmp_path)


def test_a_cluster_without_nvlink_domains_gives_its_leaves_and_says_cliques_are_not_compared(capsys):
    """platforms/zion-16.yaml: one switch, no NVLink domain; the fleet report reads as without
    --cluster but for the line saying so."""
    assert main(["fleet-report", "--cluster", "platforms/zion-16.yaml", "tests/data/fleet"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-2:] == [
        "", "NVLink domains of platforms/zion-16.yaml: none declared: the nodes' NVLink cliques are not compared"]


def test_the_split_rack_sample_is_what_this_module_writes():
    assert SAMPLE.read_text() == nvl72_reports(split_rack, missing={tray(3, 16), tray(3, 17)})


def test_docs_fleet_md_cluster_example_prints_what_the_page_shows(capsys):
    page = (ROOT / "docs" / "fleet.md").read_text()
    command = f"hwspec fleet-report --cluster {CLUSTER} --collected {SAMPLE}"
    shown = page.split(f"```sh\n{command}\n```\n\n```text\n", 1)[1].split("```", 1)[0]
    assert main(command.split()[1:]) == 1
    assert capsys.readouterr().out == shown


def test_docs_live_md_fabric_example_prints_what_the_page_shows(capsys):
    page = (ROOT / "docs" / "live.md").read_text()
    command = f"hwspec diff {TRAY} {LIVE / 'smi-gb200-tray-clique-split.xml'}"
    shown = page.split(f"```sh\n{command}\n```\n\n```text\n", 1)[1].split("```", 1)[0]
    assert main(command.split()[1:]) == 1
    assert capsys.readouterr().out == shown
