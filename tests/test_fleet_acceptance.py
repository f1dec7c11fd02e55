"""`hwspec fleet-report` over acceptance reports (`hwspec diff PLATFORM RESULT... --format json`,
whose `acceptance` list holds one record per size of each run): runs tallied, and the node, NIC
(rail) or leaf slow in every run it joined named as A105; hostile records are located E602s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hwspec.cli.commands import main
from hwspec.live import fleet, runs
from hwspec.live.culprits import LeafPlan, RunTally
from hwspec.testing import hostile_texts
from tests.examples import pinned

ROOT = Path(__file__).resolve().parent.parent
EIGHT = tuple(range(8))
NVL72 = "platforms/gb200-nvl72-x4.yaml"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def size(run: str, hosts: tuple[str, ...] | list[str], verdict: str = "within", devices: tuple[int, ...] = EIGHT,
         **extra: Any) -> dict[str, Any]:
    """One record as `Compared.record()` writes it: 16 GiB of an all_reduce of `run` over `hosts`
    (GPU `devices` of each), judged, `verdict` (below: 216 GB/s; else 450)."""
    return {"file": run.rsplit(":", 1)[0], "line": 40, "run": run, "collective": "all_reduce", "bytes": 16 * 2**30,
            "nodes": len(hosts), "gpus_per_node": len(devices), "hosts": list(hosts), "devices": list(devices),
            "measured_busbw_gbps": 216.0 if verdict == "below" else 450.0, "expected_busbw_gbps": 470.0,
            "low_busbw_gbps": 399.5, "high_busbw_gbps": 482.1, "algorithm": "Ring", "protocol": "Simple", "limit": "nic",
            "judged": True, "verdict": verdict, **extra}


def acceptance(*records: dict[str, Any], node: str = "login1", **extra: Any) -> dict[str, Any]:
    """An acceptance report of `records`, run on `node`: drift with an A101 when a judged size is below."""
    slow = any(isinstance(r, dict) and r.get("judged") is True and r.get("verdict") == "below" for r in records)
    findings = [{"code": "A101", "severity": "error", "device": None, "file": "platforms/dgx-h100-16.yaml", "line": 12,
                 "col": 3, "hint": None, "message": "all_reduce reached 216 GB/s at 16 GiB, expected 470 GB/s"}] if slow else []
    return {"hwspec_report": 1, "node": node, "spec": "platforms/dgx-h100-16.yaml", "platform": "dgx-h100-16",
            "status": "drift" if slow else "clean", "exit_code": int(slow), "findings": findings,
            "acceptance": list(records), **extra}


def pair(name: str, a: str, b: str, verdict: str = "within") -> dict[str, Any]:
    return acceptance(size(f"results/{name}.txt:12", (a, b), verdict))


def rail(name: str, device: int, hosts: tuple[str, ...], verdict: str = "within") -> dict[str, Any]:
    return acceptance(size(f"results/{name}.txt:12", hosts, verdict, devices=(device,)))


def write(directory: Path, *reports: dict[str, Any] | str) -> Path:
    """`reports` as `hwspec diff` prints them (indented), one after another in directory/reports.json."""
    path = directory / "reports.json"
    path.write_text("".join(r if isinstance(r, str) else json.dumps(r, indent=2) + "\n" for r in reports))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    status = main(["fleet-report", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


def hosts(*numbers: int) -> tuple[str, ...]:
    return tuple(f"gpu{n:03d}" for n in numbers)


# ---------------------------------------------------------------- naming the slow one


SAMPLES = Path("tests/data/fleet-acceptance")


def sample_reports() -> dict[str, dict[str, Any]]:
    """tests/data/fleet-acceptance: gpu003 is below its band with gpu004 and with gpu005, and the
    rail-3 run it joins is slow; gpu004 and gpu005 are within their bands with other partners."""
    return {"leaf-pairs-even-001.json": pair("leaf-pairs-even/001", "gpu001", "gpu002"),
            "leaf-pairs-even-003.json": pair("leaf-pairs-even/003", "gpu003", "gpu004", "below"),
            "leaf-pairs-odd-001.json": pair("leaf-pairs-odd/001", "gpu005", "gpu001"),
            "leaf-pairs-odd-003.json": pair("leaf-pairs-odd/003", "gpu003", "gpu005", "below"),
            "leaf-pairs-odd-004.json": pair("leaf-pairs-odd/004", "gpu004", "gpu006"),
            "rail-3.json": rail("rail-3", 3, hosts(1, 2, 3, 4, 5, 6), "below")}


def test_the_samples_are_what_this_module_writes():
    assert sorted(p.name for p in SAMPLES.iterdir()) == sorted(sample_reports())
    for name, report in sample_reports().items():
        assert (SAMPLES / name).read_text() == json.dumps(report, indent=2) + "\n"


def test_a_slow_node_is_named_from_two_pair_runs_and_a_rail_run(capsys):
    """gpu003 is named; the rail run's other NICs were slow in their only run: listed, not named."""
    status, out, err = run(capsys, SAMPLES)
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        "hwspec fleet report: 0 node(s): 0 clean, 0 drift, 0 unchecked (6 acceptance report(s), 1 slow-in-every-run finding(s))",
        "",
        "acceptance runs: 6 run(s): 3 slow, 3 within, 0 unchecked; from 6 report(s): 3 clean, 3 drift, 0 unchecked",
        "  A101 error: 3 finding(s) in 3 report(s)",
        "    platforms/dgx-h100-16.yaml:12:3: all_reduce reached 216 GB/s at 16 GiB, expected 470 GB/s",
        "  results/leaf-pairs-even/003.txt:40:1: error[A105 slow-in-every-run]: node gpu003: below its band in each of the 3 "
        "acceptance runs it joined, with partners gpu004, gpu005, gpu001 and others; first: all_reduce at "
        "results/leaf-pairs-even/003.txt:12",
        "    hint: look at gpu003 itself: 'hwspec diff --live' on it, and the suspects its runs' A101 findings name",
        "  slow in every run they joined, not named (too few runs or partners): 5 NIC(s): device 3 (rail 3) of gpu[001-002,004-006]",
    ]


def test_docs_fleet_md_acceptance_example_prints_what_the_page_shows(capsys):
    page = (ROOT / "docs" / "fleet.md").read_text()
    command = f"hwspec fleet-report {SAMPLES}"
    shown = page.split(f"```sh\n{command}\n```\n\n```text\n", 1)[1].split("```", 1)[0]
    assert main(command.split()[1:]) == 1
    assert capsys.readouterr().out == shown


def rail_pairs(with_rail_0: bool) -> list[dict[str, Any]]:
    """Rail 3 run as pairs, two pairings: gpu001's NIC 3 is below its band with gpu002 and with
    gpu003, who are within theirs with gpu004; with rail 0's pairs all within."""
    reports = [rail("rail-3-even/001", 3, hosts(1, 2), "below"), rail("rail-3-even/003", 3, hosts(3, 4)),
               rail("rail-3-odd/001", 3, hosts(1, 3), "below"), rail("rail-3-odd/002", 3, hosts(2, 4))]
    if with_rail_0:
        reports += [rail("rail-0-even/001", 0, hosts(1, 2)), rail("rail-0-odd/001", 0, hosts(1, 3))]
    return reports


def test_a_slow_nic_is_named_from_rail_runs(tmp_path, capsys):
    status, out, _ = run(capsys, write(tmp_path, *rail_pairs(with_rail_0=True)))
    assert status == 1
    assert out.splitlines()[2:] == [
        "acceptance runs: 6 run(s): 2 slow, 4 within, 0 unchecked; from 6 report(s): 4 clean, 2 drift, 0 unchecked",
        "  A101 error: 2 finding(s) in 2 report(s)",
        "    platforms/dgx-h100-16.yaml:12:3: all_reduce reached 216 GB/s at 16 GiB, expected 470 GB/s",
        "  results/rail-3-even/001.txt:40:1: error[A105 slow-in-every-run]: gpu001 device 3 (rail 3): below its band in each "
        "of the 2 one-GPU-per-node runs it joined, with partners gpu002, gpu003; first: all_reduce at results/rail-3-even/001.txt:12",
        "    hint: look at GPU 3 and NIC 3 of gpu001: their PCIe links (D105), the port's speed and state (D110, D112), "
        "GPUDirect RDMA (D109), the cable",
    ]


def test_a_named_nic_s_node_is_not_named_again(tmp_path, capsys):
    """Without rail 0's runs, gpu001 joined only the two slow rail-3 runs: its NIC explains it."""
    status, out, _ = run(capsys, write(tmp_path, *rail_pairs(with_rail_0=False)))
    assert status == 1
    assert [line for line in out.splitlines() if "A105" in line or "not named" in line] == [
        "  results/rail-3-even/001.txt:40:1: error[A105 slow-in-every-run]: gpu001 device 3 (rail 3): below its band in each "
        "of the 2 one-GPU-per-node runs it joined, with partners gpu002, gpu003; first: all_reduce at results/rail-3-even/001.txt:12"]


def test_the_json_report_gives_the_tallies_and_the_named_nic(tmp_path, capsys):
    status, out, _ = run(capsys, write(tmp_path, *rail_pairs(with_rail_0=True)), "--format", "json")
    document = json.loads(out)
    assert status == document["exit_code"] == 1
    assert document["nodes"] == {"total": 0, "clean": 0, "drift": 0, "unchecked": 0}
    assert document["acceptance"] == {
        "reports": {"counted": 6, "clean": 4, "drift": 2, "unchecked": 0, "records_refused": 0, "runs_refused": 0},
        "runs": {"read": 6, "slow": 2, "within": 4, "unchecked": 0, "read_twice": 0, "disagreeing": 0, "without_hosts": 0},
        "findings": [{"code": "A101", "severity": "error", "findings": 2, "reports": 2,
                      "message": "all_reduce reached 216 GB/s at 16 GiB, expected 470 GB/s", "where": "platforms/dgx-h100-16.yaml:12:3"}],
        "findings_not_grouped": 0,
        "slow_in_every_run": [{
            "code": "A105", "severity": "error", "kind": "nic", "subject": "gpu001 device 3 (rail 3)", "hostlist": "gpu001",
            "device": 3, "runs": 2, "partners": ["gpu002", "gpu003"], "more_partners": False,
            "first_run": "results/rail-3-even/001.txt:12", "collective": "all_reduce", "file": "results/rail-3-even/001.txt",
            "line": 40, "column": 1,
            "message": "gpu001 device 3 (rail 3): below its band in each of the 2 one-GPU-per-node runs it joined, with "
                       "partners gpu002, gpu003; first: all_reduce at results/rail-3-even/001.txt:12",
            "hint": "look at GPU 3 and NIC 3 of gpu001: their PCIe links (D105), the port's speed and state (D110, D112), "
                    "GPUDirect RDMA (D109), the cable"}],
        "not_named": {"nodes": {"count": 0, "hostlist": ""}, "nics": [], "leaves": [], "pair_alone": False},
        "everything_slow": False,
        "leaves": None,
    }


def tray(rack: int, slot: int) -> str:
    """gb200-nvl72-x4's host name of tray `slot` of rack `rack` (pod0: racks 0 and 1; pod1: 2 and 3)."""
    return f"gb200-r{rack}-t{slot:02}"


def test_a_slow_leaf_is_named_with_the_cluster(tmp_path, capsys):
    """platforms/gb200-nvl72-x4.yaml: every network run that joins pod1's trays is slow, with no
    tray in all of them, while pod0's own runs are within: pod1 is named, its trays are not.
    The pod0 tray of the slow run across the spine was slow in its only run: listed."""
    path = write(tmp_path, pair("pod1-a", tray(2, 0), tray(3, 0), "below"), pair("pod1-b", tray(2, 1), tray(3, 1), "below"),
                 pair("pod0-a", tray(0, 0), tray(1, 0)), pair("pod0-b", tray(0, 1), tray(1, 1)),
                 pair("spine-a", tray(1, 2), tray(2, 2), "below"))
    status, out, err = run(capsys, "--cluster", NVL72, path)
    assert (status, err) == (1, "")
    assert out.splitlines()[2:] == [
        "NVLink domains of platforms/gb200-nvl72-x4.yaml: 4 domain(s), 72 node(s):",
        "  without a report: 72 node(s): gb200-r0-t[00-17],gb200-r1-t[00-17],gb200-r2-t[00-17],gb200-r3-t[00-17]",
        "  no node's NVLink clique disagrees with the cluster's NVLink domains",
        "",
        "acceptance runs: 5 run(s): 3 slow, 2 within, 0 unchecked; from 5 report(s): 2 clean, 3 drift, 0 unchecked",
        "  A101 error: 3 finding(s) in 3 report(s)",
        "    platforms/dgx-h100-16.yaml:12:3: all_reduce reached 216 GB/s at 16 GiB, expected 470 GB/s",
        "  results/pod1-a.txt:40:1: error[A105 slow-in-every-run]: leaf pod1 of platforms/gb200-nvl72-x4.yaml "
        "(gb200-r2-t[00-17],gb200-r3-t[00-17]): each of the 3 network runs that joined its nodes was below its band, and no one node "
        "joined them all; first: all_reduce at results/pod1-a.txt:12",
        "    hint: look at the leaf switch, its uplinks and its cables ('ibdiagnet'), before its nodes",
        "  slow in every run they joined, not named (too few runs or partners): 1 node(s): gb200-r1-t02; a pair run alone "
        "cannot tell which of its two nodes is slow",
        "  leaf groups of platforms/gb200-nvl72-x4.yaml: 2",
    ]


@pytest.mark.parametrize(("limit", "named"), [("nvswitch", True), ("nic", False)], ids=["over-nvlink", "mnnvl-off"])
def test_a_run_inside_one_nvlink_domain_is_a_run_of_its_leaf_only_when_it_left_the_domain(tmp_path, capsys, limit, named):
    """A pair of rack 2's trays within its band: over NVLink it says nothing of pod1's leaf; by
    the NICs (NCCL_MNNVL_ENABLE=0: limited by a NIC) it clears it."""
    path = write(tmp_path, pair("pod1-a", tray(2, 0), tray(3, 0), "below"), pair("pod1-b", tray(2, 1), tray(3, 1), "below"),
                 pair("pod0-a", tray(0, 0), tray(1, 0)), acceptance(size("results/rack2.txt:12", (tray(2, 5), tray(2, 6)), limit=limit)))
    _, out, _ = run(capsys, "--cluster", NVL72, path)
    assert ("error[A105 slow-in-every-run]: leaf pod1" in out) is named


def test_a_leaf_whose_runs_all_share_one_node_is_not_named(tmp_path, capsys):
    """pod1's two slow runs both hold gb200-r2-t00: the node, not the leaf, is named."""
    path = write(tmp_path, pair("pod1-a", tray(2, 0), tray(3, 0), "below"), pair("pod1-b", tray(2, 0), tray(3, 1), "below"),
                 pair("pod0-a", tray(0, 0), tray(1, 0)))
    status, out, _ = run(capsys, "--cluster", NVL72, path)
    assert status == 1
    assert [line for line in out.splitlines() if "A105" in line or "not named" in line] == [
        "  results/pod1-a.txt:40:1: error[A105 slow-in-every-run]: node gb200-r2-t00: below its band in each of the 2 "
        "acceptance runs it joined, with partners gb200-r3-t00, gb200-r3-t01; first: all_reduce at results/pod1-a.txt:12",
        "  slow in every run they joined, not named (too few runs or partners): 2 node(s): gb200-r3-t[00-01]; a pair run "
        "alone cannot tell which of its two nodes is slow",
        "  slow in every run they joined, not named (one run, or one node in all of them): 1 leaf group(s): pod1"]


def test_a_cluster_without_nvlink_domains_gives_leaves_too(tmp_path, capsys):
    """platforms/dgx-h100-16.yaml: one pod of 16 nodes and no NVLink domain; a host it does not list is said."""
    path = write(tmp_path, pair("a", "dgxh100-00", "dgxh100-01"), pair("b", "dgxh100-02", "gpu999"))
    status, out, _ = run(capsys, "--cluster", "platforms/dgx-h100-16.yaml", path)
    assert status == 0
    assert out.splitlines()[2:] == [
        "NVLink domains of platforms/dgx-h100-16.yaml: none declared: the nodes' NVLink cliques are not compared",
        "",
        "acceptance runs: 2 run(s): 0 slow, 2 within, 0 unchecked; from 2 report(s): 2 clean, 0 drift, 0 unchecked",
        "  leaf groups of platforms/dgx-h100-16.yaml: 1; hosts of the runs it does not list: 1: gpu999",
    ]


# ---------------------------------------------------------------- when no one can be named


def test_when_every_run_is_slow_no_single_culprit_is_named(tmp_path, capsys):
    """Two pairings of four nodes, every run below its band: what they share is at fault."""
    path = write(tmp_path, pair("a", "gpu001", "gpu002", "below"), pair("b", "gpu003", "gpu004", "below"),
                 pair("c", "gpu001", "gpu003", "below"), pair("d", "gpu002", "gpu004", "below"))
    status, out, _ = run(capsys, path)
    assert status == 1
    assert out.splitlines()[2:] == [
        "acceptance runs: 4 run(s): 4 slow, 0 within, 0 unchecked; from 4 report(s): 0 clean, 4 drift, 0 unchecked",
        "  A101 error: 4 finding(s) in 4 report(s)",
        "    platforms/dgx-h100-16.yaml:12:3: all_reduce reached 216 GB/s at 16 GiB, expected 470 GB/s",
        "  slow in every run they joined, not named (too few runs or partners): 4 node(s): gpu[001-004]",
        "  every judged run was below its band: no one node, NIC or leaf can be named (look at what the runs share: the "
        "platform's figures, the software, the spine)",
    ]


def test_one_slow_pair_run_names_both_nodes_as_candidates_only(tmp_path, capsys):
    status, out, _ = run(capsys, write(tmp_path, pair("a", "gpu001", "gpu002", "below"), pair("b", "gpu003", "gpu004")))
    assert status == 1
    assert out.splitlines()[-1] == ("  slow in every run they joined, not named (too few runs or partners): 2 node(s): "
                                    "gpu[001-002]; a pair run alone cannot tell which of its two nodes is slow")


def test_slow_runs_whose_nodes_are_within_elsewhere_name_no_one(tmp_path, capsys):
    path = write(tmp_path, pair("a", "gpu001", "gpu002", "below"), pair("b", "gpu001", "gpu003"), pair("c", "gpu002", "gpu004"))
    status, out, _ = run(capsys, path)
    assert status == 1  # a slow run needs someone to look
    assert out.splitlines()[-1] == "  no node, NIC or leaf was slow in every run it joined"


def test_a_node_slow_with_one_partner_twice_is_not_named(tmp_path, capsys):
    """Two slow runs with the same partner: either of the two may be the slow one."""
    path = write(tmp_path, pair("a", "gpu001", "gpu002", "below"), pair("b", "gpu002", "gpu001", "below"), pair("c", "gpu003", "gpu004"))
    _, out, _ = run(capsys, path)
    assert out.splitlines()[-1] == "  slow in every run they joined, not named (too few runs or partners): 2 node(s): gpu[001-002]"


# ---------------------------------------------------------------- beside node reports


def test_node_reports_read_as_before_beside_acceptance_reports(tmp_path, capsys):
    """An acceptance report run on zx0001 is no report of zx0001's health: zx0001's own report
    still counts (no E603), the node tallies and findings are what they were without it."""
    _, before, _ = run(capsys, "tests/data/fleet")
    status, after, err = run(capsys, "tests/data/fleet", write(tmp_path, pair("a", "zx0001", "zx0002", "below") | {"node": "zx0001"}))
    assert (status, err) == (1, "")
    headline, *rest = before.splitlines()
    assert after.splitlines()[:len(rest) + 1] == [headline + " (1 acceptance report(s))", *rest]
    assert after.splitlines()[len(rest) + 1:] == [
        "",
        "acceptance runs: 1 run(s): 1 slow, 0 within, 0 unchecked; from 1 report(s): 0 clean, 1 drift, 0 unchecked",
        "  A101 error: 1 finding(s) in 1 report(s)",
        "    platforms/dgx-h100-16.yaml:12:3: all_reduce reached 216 GB/s at 16 GiB, expected 470 GB/s",
        "  slow in every run they joined, not named (too few runs or partners): 2 node(s): zx[0001-0002]; a pair run alone "
        "cannot tell which of its two nodes is slow",
        "  every judged run was below its band: no one node, NIC or leaf can be named (look at what the runs share: the "
        "platform's figures, the software, the spine)",
    ]


def test_a_fleet_without_acceptance_reports_has_no_acceptance_key(capsys):
    _, out, _ = run(capsys, "tests/data/fleet", "--format", "json")
    assert "acceptance" not in json.loads(out)


def test_an_acceptance_key_of_null_is_a_node_report(tmp_path, capsys):
    """A node report, so it counts only from its node's file (login1.json)."""
    path = write(tmp_path, {**pair("a", "gpu001", "gpu002"), "acceptance": None})
    status, _, err = run(capsys, path)
    assert (status, err.split(": ", 2)[1]) == (2, "error[E604]")
    status, out, _ = run(capsys, path.rename(tmp_path / "login1.json"))
    assert status == 0
    assert out.splitlines() == ["hwspec fleet report: 1 node(s): 1 clean, 0 drift, 0 unchecked", "", "platforms:",
                                "  dgx-h100-16 (platforms/dgx-h100-16.yaml): 1 node(s): 1 clean, 0 drift, 0 unchecked"]


def test_an_unchecked_acceptance_report_needs_attention(tmp_path, capsys):
    """`hwspec diff` could not judge any size (status unchecked): exit 1, as for an unchecked node."""
    record = size("results/a.txt:12", ("gpu001", "gpu002"), "unjudged", judged=False)
    status, out, _ = run(capsys, write(tmp_path, acceptance(record) | {"status": "unchecked", "exit_code": 2}))
    assert status == 1
    assert out.splitlines()[2] == ("acceptance runs: 1 run(s): 0 slow, 0 within, 1 unchecked; from 1 report(s): 0 clean, "
                                   "0 drift, 1 unchecked")


def test_a_run_read_twice_is_counted_once_and_one_without_hosts_points_at_no_one(tmp_path, capsys):
    """The same run in two reports (diff run twice on one result file), and an nvbandwidth run
    (no host: its output does not name one)."""
    copy = size("results/nvbandwidth.txt:3", (), "below", devices=(), bytes=None, pair=["host", "gpu3"], collective="host_to_device_memcpy_ce",
                nodes=1, gpus_per_node=1)
    path = write(tmp_path, pair("a", "gpu001", "gpu002"), pair("a", "gpu001", "gpu002"), acceptance(copy))
    status, out, _ = run(capsys, path)
    assert status == 1
    assert out.splitlines()[2:5] == [
        "acceptance runs: 2 run(s): 1 slow, 1 within, 0 unchecked; from 3 report(s): 2 clean, 1 drift, 0 unchecked",
        "  1 run(s) read twice: counted once",
        "  1 run(s) name no host: counted, not attributed to a node"]


def test_the_markdown_report_has_an_acceptance_section(tmp_path, capsys):
    _, out, _ = run(capsys, write(tmp_path, *rail_pairs(with_rail_0=True)), "--format", "markdown")
    assert out.split("## Acceptance runs\n", 1)[1].splitlines() == [
        "",
        "6 run(s): 2 slow, 4 within, 0 unchecked; from 6 report(s): 4 clean, 2 drift, 0 unchecked.",
        "",
        "- A101 error: 2 finding(s) in 2 report(s)",
        "  - platforms/dgx-h100-16.yaml:12:3: all\\_reduce reached 216 GB/s at 16 GiB, expected 470 GB/s",
        "- results/rail-3-even/001.txt:40:1: error\\[A105 slow-in-every-run\\]: gpu001 device 3 (rail 3): below its band in "
        "each of the 2 one-GPU-per-node runs it joined, with partners gpu002, gpu003; first: all\\_reduce at results/rail-3-even/001.txt:12",
        "  - hint: look at GPU 3 and NIC 3 of gpu001: their PCIe links (D105), the port's speed and state (D110, D112), "
        "GPUDirect RDMA (D109), the cable",
    ]


# ---------------------------------------------------------------- hostile records


def located(text: str, token: str, after: int) -> tuple[int, int]:
    """1-based line and column of `token` in `text` (its leading blanks left out), at or after index `after`."""
    index = text.index(token, after) + len(token) - len(token.lstrip())
    return text.count("\n", 0, index) + 1, index - text.rfind("\n", 0, index)


def hostile_report(tmp_path: Path, **changes: Any) -> tuple[Path, str, int]:
    """A report of two runs, the second's record changed by `changes` (a key set to None
    removes it); the file, its text and where the second record starts."""
    bad = {**size("results/b.txt:12", ("gpu003", "gpu004"), "below"), **changes}
    bad = {key: value for key, value in bad.items() if value is not REMOVE}
    path = write(tmp_path, acceptance(size("results/a.txt:12", ("gpu001", "gpu002")), bad) | {"status": "drift", "exit_code": 1})
    text = path.read_text().replace('"@1e400@"', "1e400").replace('"@NaN@"', "NaN")
    path.write_text(text)
    return path, text, text.index("{", text.index('"results/b.txt:12"') - 200)


REMOVE = object()
RULE = "(letters, digits, '.', '-', '_'; at most 253 characters)"
DEEP: Any = "gpu003"
for _ in range(50):
    DEEP = [DEEP]


@pytest.mark.parametrize(("changes", "token", "message"), [
    ({"judged": "yes"}, '"yes"', "acceptance[1].judged is a string, not a boolean"),
    ({"verdict": "slowish"}, '"slowish"', "acceptance[1].verdict 'slowish' is not one of: within, below, above, unjudged, unchecked"),
    ({"nodes": True}, "true", "acceptance[1].nodes is a boolean, not an integer"),
    ({"verdict": REMOVE}, None, "acceptance[1].verdict is missing"),
    ({"hosts": ["gpu003", "gpu004\nerror[A105]: forged"]}, '"gpu004\\nerror', f"acceptance[1].hosts[1] 'gpu004\\\\x0aerror[A105]: forged' is not a host name {RULE}"),
    ({"hosts": ["-gpu003", "gpu004"]}, '"-gpu003"', f"acceptance[1].hosts[0] '-gpu003' is not a host name {RULE}"),
    ({"hosts": ["gpu003", "gpu003"]}, '"gpu003"\n', "acceptance[1].hosts[1] 'gpu003' is listed twice"),
    ({"hosts": [f"gpu{n}" for n in range(65_537)]}, "[", "acceptance[1].hosts has 65537 entries, more than 65536"),
    ({"hosts": DEEP}, "\n        [", "acceptance[1].hosts[0] is an array, not a string"),
    ({"measured_busbw_gbps": "@NaN@"}, "NaN", "acceptance[1].measured_busbw_gbps is nan, not a finite number from 0 to 1000000 (GB/s)"),
    ({"low_busbw_gbps": -1.5}, "-1.5", "acceptance[1].low_busbw_gbps is -1.5, not a finite number from 0 to 1000000 (GB/s)"),
    ({"expected_busbw_gbps": "@1e400@"}, "1e400", "acceptance[1].expected_busbw_gbps is inf, not a finite number from 0 to 1000000 (GB/s)"),
    ({"high_busbw_gbps": "482"}, '"482"', "acceptance[1].high_busbw_gbps is a string, not a number or null"),
    ({"bytes": 2**50 + 1}, str(2**50 + 1), "acceptance[1].bytes is 1125899906842625, not an integer from 0 to 1125899906842624"),
    ({"devices": [0, 64]}, "64", "acceptance[1].devices[1] is 64, not a device number from 0 to 63"),
    ({"devices": {"0": 1}}, "{", "acceptance[1].devices is an object, not an array"),
    ({"gpus_per_node": 0}, "0,", "acceptance[1].gpus_per_node is 0, not an integer from 1 to 64"),
    ({"collective": "x" * 300}, '"xxx', "acceptance[1].collective is a string of 300 characters, more than 256"),
    ({"pair": ["host", "gpu1", "gpu2"]}, "[", "acceptance[1].pair is an array of 3, not an array of two names"),
    ({"limit": 3}, "3", "acceptance[1].limit is an integer, not a string or null"),
], ids=["wrong-type", "unknown-verdict", "boolean-integer", "missing-key", "host-with-line-break", "host-with-leading-dash",
        "host-twice", "too-many-hosts", "nested-deep", "nan", "negative", "1e400-is-infinite", "number-as-string",
        "size-past-1-pib", "device-past-63", "devices-not-an-array", "no-gpu-per-node", "long-name", "pair-of-three",
        "tier-not-a-string"])
def test_a_hostile_record_is_an_e602_at_its_key_and_the_other_runs_count(tmp_path, capsys, changes, token, message):
    path, text, start = hostile_report(tmp_path, **changes)
    key = next(iter(changes))
    line, col = located(text, token, text.index(f'"{key}"', start)) if token is not None else located(text, "{", start)
    status, out, err = run(capsys, path)
    assert status == 1
    assert err == f"{path}:{line}:{col}: error[E602]: {message}\n"
    assert out.splitlines()[2:4] == [
        "acceptance runs: 1 run(s): 0 slow, 1 within, 0 unchecked; from 1 report(s): 0 clean, 1 drift, 0 unchecked",
        "  1 record(s) refused (E602): 1 run(s) not counted"]


def test_a_forged_host_is_located_at_its_line(tmp_path, capsys):
    """The location in full, once: line 63 of the file, the host's first character."""
    path, text, _ = hostile_report(tmp_path, hosts=["gpu003", "gpu004\nerror: forged"])
    assert text.splitlines()[62] == '        "gpu004\\nerror: forged"'
    _, _, err = run(capsys, path)
    assert err.startswith(f"{path}:63:9: error[E602]: acceptance[1].hosts[1] 'gpu004\\\\x0aerror: forged' is not a host name")


def test_a_record_whose_run_cannot_be_read_refuses_every_run_of_its_report(tmp_path, capsys):
    """Which run lost a size cannot be told: none of the report's runs counts; the next report does."""
    path = write(tmp_path, acceptance(size("results/a.txt:12", ("gpu001", "gpu002")), size("r" * 5000, ("gpu003", "gpu004"))),
                 pair("c", "gpu005", "gpu006"))
    status, out, err = run(capsys, path)
    assert status == 1
    assert err.split(": error[E602]: ")[1] == "acceptance[1].run is a string of 5000 characters, more than 4096\n"
    assert out.splitlines()[2:4] == [
        "acceptance runs: 1 run(s): 0 slow, 1 within, 0 unchecked; from 2 report(s): 2 clean, 0 drift, 0 unchecked",
        "  1 record(s) refused (E602): 1 run(s) not counted"]


def test_the_sizes_of_one_run_must_name_the_same_hosts(tmp_path, capsys):
    first = size("results/a.txt:12", ("gpu001", "gpu002"))
    path = write(tmp_path, acceptance(first, {**first, "bytes": 2**33, "hosts": ["gpu001", "gpu009"]}, {**first, "judged": None}))
    status, out, err = run(capsys, path)
    assert status == 1
    assert err.split(": error[E602]: ")[1] == ("acceptance[1].hosts differs from the first record of run 'results/a.txt:12': "
                                               "the sizes of one run ran on the same GPUs (and 1 more record(s) of this report refused)\n")
    assert out.splitlines()[2:4] == [
        "acceptance runs: 0 run(s): 0 slow, 0 within, 0 unchecked; from 1 report(s): 1 clean, 0 drift, 0 unchecked",
        "  2 record(s) refused (E602): 1 run(s) not counted"]


@pytest.mark.parametrize(("records", "message"), [
    ({"run": "a"}, "acceptance is an object, not an array"),
    ([size("results/a.txt:12", ("gpu001", "gpu002"))] * 4097, "acceptance has 4097 records, more than the 4096 a report may hold"),
], ids=["not-an-array", "too-many-records"])
def test_an_acceptance_list_that_is_not_one_refuses_the_report(tmp_path, capsys, records, message):
    path = write(tmp_path, {**acceptance(), "acceptance": records})
    status, out, err = run(capsys, path)
    line, col = located(path.read_text(), "[" if isinstance(records, list) else "{", path.read_text().index('"acceptance"'))
    assert status == 2
    assert err.splitlines() == [f"{path}:{line}:{col}: error[E602]: {message}", "hwspec: no node report could be read"]
    assert out.splitlines() == ["hwspec fleet report: 0 node(s): 0 clean, 0 drift, 0 unchecked (1 report(s) not read)"]


def test_nesting_past_the_reader_s_bound_is_an_e601(tmp_path, capsys):
    deep: Any = "gpu003"
    for _ in range(70):
        deep = [deep]
    path, _, _ = hostile_report(tmp_path, hosts=deep)
    status, _, err = run(capsys, path)
    assert status == 2
    assert err.splitlines()[0].endswith("error[E601]: not JSON this reader accepts: arrays and objects nested deeper than 64")


# ---------------------------------------------------------------- properties

HOSTILE_VALUES = (hostile_texts() | st.floats() | st.integers(-2**70, 2**70) | st.booleans() | st.none()
                  | st.lists(st.integers(0, 70), max_size=3) | st.dictionaries(st.text(max_size=3), st.integers(-9, 9), max_size=2)
                  | st.lists(hostile_texts(), max_size=3))
KEYS = tuple(size("r:1", ("a", "b")))


@st.composite
def hostile_records(draw: st.DrawFn) -> list[Any]:
    """Records of a few runs, some with one key set to a hostile value or removed, some not objects at all."""
    records: list[Any] = []
    for index in range(draw(st.integers(1, 6))):
        label = draw(st.sampled_from(["results/a.txt:1", "results/b.txt:9", draw(hostile_texts())]))
        record = size(label, draw(st.sampled_from([("gpu001", "gpu002"), ("gpu001", "gpu003"), ("gpu002",)])),
                      draw(st.sampled_from(runs.VERDICTS)), devices=draw(st.sampled_from([EIGHT, (3,)])), line=index)
        change = draw(st.sampled_from(["none", "set", "remove", "replace"]))
        key = draw(st.sampled_from(KEYS))
        if change == "set":
            record[key] = draw(HOSTILE_VALUES)
        elif change == "remove":
            del record[key]
        records.append(draw(HOSTILE_VALUES) if change == "replace" else record)
    return records


@settings(max_examples=pinned(60))
@given(records=hostile_records())
def test_hostile_records_are_e602s_the_rest_counts_and_every_format_stays_one_line_per_fact(records):
    merged = fleet.Fleet()
    text = json.dumps(acceptance(*records) | {"status": "drift", "exit_code": 1}, indent=2)  # NaN and Infinity as json writes them
    merged.add_text(text, "a.json")
    assert [p.code for p in merged.problems] == (["E602"] if merged.acceptance.records_refused else [])  # one, at the first bad record
    readable = {r["run"] for r in records if isinstance(r, dict) and isinstance(r.get("run"), str) and len(r["run"]) <= runs.MAX_TEXT}
    assert merged.runs.read + merged.acceptance.runs_refused == len(readable)  # every run counted or refused, once
    for fmt in fleet.FORMATS:
        rendered = fleet.render(merged, fmt)
        assert "\x1b" not in rendered and "\r" not in rendered
    summary = json.loads(fleet.render(merged, "json"))
    if merged.acceptance.read:
        assert summary["acceptance"]["runs"]["read"] == merged.runs.read
    text_lines = fleet.render(merged, "text").splitlines()
    assert all(line.startswith(("hwspec fleet report:", "acceptance runs:", "  ")) or not line for line in text_lines)


@st.composite
def plans(draw: st.DrawFn) -> list[tuple[str, tuple[str, ...], tuple[int, ...], bool, bool]]:
    """Runs (label, hosts, devices, slow, over NVLink) over six hosts under two leaves; a label
    may repeat (a run read twice)."""
    plan = []
    for index in range(draw(st.integers(1, 14))):
        members = tuple(draw(st.lists(st.sampled_from(hosts(1, 2, 3, 4, 5, 6)), min_size=1, max_size=4, unique=True)))
        devices = draw(st.sampled_from([EIGHT, (0,), (3,)]))
        label = f"results/{draw(st.integers(0, index))}.txt:1"
        plan.append((label, members, devices, draw(st.booleans()), draw(st.booleans())))
    return plan


LEAVES = LeafPlan("c.yaml", ("leaf0", "leaf1"), (hosts(1, 2, 3), hosts(4, 5, 6)), (hosts(1, 2), hosts(5, 6)))


def expected_judgement(plan: list[tuple[str, tuple[str, ...], tuple[int, ...], bool, bool]]) -> tuple[set[str], set[str], set[str]]:
    """The A105 subjects and the unnamed nodes, computed from the whole plan at once (the
    module's rules, written out without tallies): (named, unnamed nodes, unnamed NICs)."""
    seen, node_runs, nic_runs, leaf_runs = set(), {}, {}, {}
    for label, members, devices, slow, over_nvlink in plan:
        if (label, members, devices) in seen:
            continue
        seen.add((label, members, devices))
        for host in members:
            node_runs.setdefault(host, []).append((slow, set(members) - {host}))
            if len(devices) == 1 and len(members) > 1:
                nic_runs.setdefault((host, devices[0]), []).append((slow, set(members) - {host}))
        in_one_domain = any(set(members) <= set(domain) for domain in LEAVES.domains)
        for leaf, leaf_hosts in enumerate(LEAVES.members):
            inside = set(members) & set(leaf_hosts)
            if inside and len(members) > 1 and not (over_nvlink and in_one_domain):
                leaf_runs.setdefault(leaf, []).append((slow, inside))
    within = any(not run[3] for run in plan)

    def all_slow(found):
        return all(slow for slow, _ in found)

    def told_apart(found):
        return len(found) >= 2 and len(set().union(*(partners for _, partners in found))) >= 2

    named_leaves = {leaf for leaf, found in leaf_runs.items()
                    if within and all_slow(found) and len(found) >= 2 and not set.intersection(*(h for _, h in found))}
    under = {host for leaf in named_leaves for host in LEAVES.members[leaf]}
    named_nics = {key for key, found in nic_runs.items() if within and all_slow(found) and told_apart(found) and key[0] not in under}
    explained = under | {host for host, _ in named_nics}
    named_nodes = {host for host, found in node_runs.items() if within and all_slow(found) and told_apart(found) and host not in explained}
    suspects = {host for host, found in node_runs.items() if all_slow(found)}
    named = ({f"leaf {LEAVES.names[leaf]}" for leaf in named_leaves} | {f"{h} device {d} (rail {d})" for h, d in named_nics}
             | {f"node {host}" for host in named_nodes})
    unnamed_nics = {f"{h} {d}" for (h, d), found in nic_runs.items()
                    if all_slow(found) and (h, d) not in named_nics and h not in suspects and h not in under}
    return named, suspects - named_nodes - explained, unnamed_nics


@settings(max_examples=pinned(150))
@given(plan=plans())
@example(plan=[("results/0.txt:1", hosts(1, 2, 3), EIGHT, True, False), ("results/1.txt:1", hosts(1, 2, 3), EIGHT, True, False),
               ("results/2.txt:1", hosts(4, 5), EIGHT, False, False)])  # two partners met in one run
def test_the_tallies_name_what_the_whole_plan_at_once_names(plan):
    """Read one run at a time, keeping only tallies, the judgement is the one the whole plan gives."""
    tally = RunTally(LEAVES)
    for label, members, devices, slow, over_nvlink in plan:
        tally.add(runs.Run(label, "all_reduce", members, devices, len(devices), "slow" if slow else "within", over_nvlink,
                           ("results/x.txt", 40) if slow else None))
    judgement = tally.judge()
    named, unnamed_nodes, unnamed_nics = expected_judgement(plan)
    assert {c.subject for c in judgement.culprits} == named
    assert set(judgement.unnamed_nodes) == unnamed_nodes
    assert {f"{h} {d}" for h, d in judgement.unnamed_nics} == unnamed_nics


def test_what_compared_record_writes_is_what_fleet_report_reads():
    """The contract with `hwspec diff PLATFORM RESULT...`: a below-band size of a rail run and a
    copy's cell, as `Compared.record()` writes them, read back as two runs, one of them slow."""
    from hwspec.acceptance.compare import Compared
    from hwspec.acceptance.expected import Expected
    from hwspec.acceptance.spans import Link
    from hwspec.diagnostics import Location

    link = Link("nic", 50e9, 0.9, "cited", "gpu3's NIC", Location("platforms/dgx-h100-16.yaml", 30, 5))
    figure = Expected("all_reduce", "nccl-tests", 2, 1, 2**34, 45e9, 40e9, 50e9, "Ring", "Simple", link, True, "", "")
    copy = Expected("host_to_device_memcpy_ce", "nvbandwidth", 1, 1, None, 50e9, 45e9, 55e9, "", "", link, True, "", "",
                    ("host", "gpu3"))
    records = [Compared(Location("r.txt", 40, 1), "all_reduce", 2**34, 2, 1, ("gpu003", "gpu004"), None, 20e9, figure, "below",
                        Location("r.txt", 12), (3,)).record(),
               Compared(Location("c.txt", 3, 1), "host_to_device_memcpy_ce", None, 1, 1, (), ("host", "gpu3"), 52e9, copy,
                        "within", Location("c.txt", 3)).record()]
    parsed = runs.parse_acceptance(json.loads(json.dumps({"acceptance": records})))
    assert parsed.error is None
    assert parsed.runs == (runs.Run("r.txt:12", "all_reduce", ("gpu003", "gpu004"), (3,), 1, "slow", False, ("r.txt", 40)),
                           runs.Run("c.txt:3", "host_to_device_memcpy_ce", (), (), 1, "within", False, None))


def test_one_run_read_again_with_other_results_is_an_error_and_counted_as_first_read(tmp_path, capsys):
    """The same run (label, collective, hosts, devices) within its band in one report, below it in another."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write(tmp_path / "a", pair("a", "gpu001", "gpu002"))
    second = write(tmp_path / "b", pair("a", "gpu001", "gpu002", "below"))
    status, out, err = run(capsys, first, second)
    assert status == 1
    assert err == (f"{second}:1:1: error[E605]: run results/a.txt:12 (all_reduce over 2 host(s)) is slow here but was read "
                   f"otherwise in {first}: reports of one run disagree; this one is not counted\n")
    assert out.splitlines()[2:4] == [
        "acceptance runs: 1 run(s): 0 slow, 1 within, 0 unchecked; from 2 report(s): 1 clean, 1 drift, 0 unchecked",
        "  1 run(s) read again with other results (E605): counted as first read"]
