"""`hwspec fleet-report`: node reports (`hwspec diff --format json`) merged into one: nodes per
platform, findings by code and device with the Slurm hostlist of their nodes; malformed reports
are located errors, counted, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwspec.cli import fleet as fleet_cli
from hwspec.cli.commands import main
from hwspec.live import fleet
from hwspec.testing import hostile_texts
from tests.examples import pinned

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = Path("tests/data/fleet")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def report(node: str, status: str = "clean", findings: tuple[dict, ...] = (), **extra: Any) -> dict:
    """A version-1 node report of `node` on zionex."""
    return {"hwspec_report": 1, "node": node, "spec": "platforms/zionex.yaml", "platform": "zionex", "status": status,
            "exit_code": fleet.STATUS_EXIT[status], "findings": list(findings), **extra}


def finding(code: str = "D105", device: str | None = "gpu3", message: str = "gpu3: PCIe link is x8") -> dict:
    return {"code": code, "severity": "error", "device": device, "message": message,
            "file": "platforms/zionex.yaml", "line": 70, "col": 11, "hint": None}


def write(directory: Path, name: str, *documents: dict | str) -> Path:
    """`documents` (dicts as indented JSON, strings as they are) one after another in directory/name."""
    path = directory / name
    path.write_text("".join(d if isinstance(d, str) else json.dumps(d, indent=2) + "\n" for d in documents))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    status = main(["fleet-report", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


# ---------------------------------------------------------------- merging


def test_the_samples_merge_into_platforms_and_findings_with_hostlists(capsys):
    """tests/data/fleet: five zionex nodes (one clean, three with gpu3 at x8, one of them with a
    slow NIC, one that could not be checked) and a clean zion node; exit 1."""
    status, out, err = run(capsys, SAMPLES)
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        "hwspec fleet report: 6 node(s): 2 clean, 3 drift, 1 unchecked",
        "",
        "platforms:",
        "  zion (platforms/zion.yaml): 1 node(s): 1 clean, 0 drift, 0 unchecked",
        "  zionex (platforms/zionex.yaml): 5 node(s): 1 clean, 3 drift, 1 unchecked",
        "    drift: zx[0002-0004]",
        "    unchecked: zx0005",
        "",
        "findings (by code and device; most nodes first):",
        "  D105 error: zionex gpu3 on 3 node(s): zx[0002-0004]",
        "    platforms/zionex.yaml:70:11: gpu3: PCIe link is Gen4 x16 in the spec, but Gen4 x8 in the machine (narrower) "
        "(seen at /sys/bus/pci/devices/0000:89:00.0/current_link_width)",
        "  D110 error: zionex nic1 on 1 node(s): zx0003",
        "    platforms/zionex.yaml:95:9: nic1: speed is 200 Gb/s in the spec, but 100 Gb/s in the machine",
        "  I100 error: zionex (no device) on 1 node(s): zx0005",
        "    /sys/bus/pci/devices:0:0: cannot read /sys/bus/pci/devices: permission denied",
    ]


def test_the_json_report_names_every_count_and_hostlist(capsys):
    status, out, _ = run(capsys, SAMPLES, "--format", "json")
    document = json.loads(out)
    assert status == document["exit_code"] == 1
    assert document["nodes"] == {"total": 6, "clean": 2, "drift": 3, "unchecked": 1}
    assert document["reports"] == {"counted": 6, "refused": 0, "duplicates": 0, "from_another_nodes_file": 0, "disagreeing": 0}
    zionex = next(p for p in document["platforms"] if p["platform"] == "zionex")
    assert (zionex["hostlist"], zionex["drift_hostlist"], zionex["unchecked_hostlist"]) == ("zx[0001-0005]", "zx[0002-0004]", "zx0005")
    assert [(f["code"], f["device"], f["nodes"], f["hostlist"], f["where"]) for f in document["findings"]] == [
        ("D105", "gpu3", 3, "zx[0002-0004]", "platforms/zionex.yaml:70:11"),
        ("D110", "nic1", 1, "zx0003", "platforms/zionex.yaml:95:9"),
        ("I100", None, 1, "zx0005", "/sys/bus/pci/devices:0:0"),
    ]
    assert document["findings"][0]["distinct_messages"] == 1  # the same slot's link on each node
    assert document["problems"] == [] and document["problems_not_listed"] == 0


def test_a_fleet_of_clean_nodes_exits_0(tmp_path, capsys):
    for number in range(1, 4):
        write(tmp_path, f"n{number}.json", report(f"n{number}"))
    status, out, _ = run(capsys, tmp_path)
    assert status == 0
    assert out.splitlines()[0] == "hwspec fleet report: 3 node(s): 3 clean, 0 drift, 0 unchecked"


def test_an_unchecked_node_alone_exits_1(tmp_path, capsys):
    """A node that could not check itself needs someone to look, as a drifted one does."""
    write(tmp_path, "n1.json", report("n1"))
    write(tmp_path, "n2.json", report("n2", "unchecked"))
    assert run(capsys, tmp_path)[0] == 1


def test_the_same_device_on_two_platforms_is_two_groups_most_nodes_first(tmp_path, capsys):
    path = write(tmp_path, "a.json", report("a1", "drift", (finding(),)),
                 {**report("b1", "drift", (finding(),)), "platform": "zion", "spec": "platforms/zion.yaml"},
                 {**report("b2", "drift", (finding(),)), "platform": "zion", "spec": "platforms/zion.yaml"})
    status, out, _ = run(capsys, "--collected", path)
    assert status == 1
    assert [line for line in out.splitlines() if line.startswith("  D105")] == [
        "  D105 error: zion gpu3 on 2 node(s): b[1-2]", "  D105 error: zionex gpu3 on 1 node(s): a1"]


def test_two_findings_of_one_kind_on_one_node_count_the_node_once(tmp_path, capsys):
    write(tmp_path, "n1.json", report("n1", "drift", (finding(message="one"), finding(message="two"))))
    _, out, _ = run(capsys, tmp_path)
    assert "  D105 error: zionex gpu3 on 1 node(s): n1" in out.splitlines()
    assert "    platforms/zionex.yaml:70:11: one (and 1 other message(s))" in out.splitlines()


def test_a_collected_file_may_hold_several_reports_json_lines_or_concatenated(tmp_path, capsys):
    lines = "".join(json.dumps(report(f"n{n}")) + "\n" for n in range(1, 4))
    write(tmp_path, "lines.jsonl", lines, report("n4"), report("n5"))
    status, out, _ = run(capsys, "--collected", tmp_path / "lines.jsonl")
    assert status == 0
    assert out.splitlines()[0] == "hwspec fleet report: 5 node(s): 5 clean, 0 drift, 0 unchecked"


def test_unknown_keys_are_ignored(tmp_path, capsys):
    write(tmp_path, "n1.json", report("n1", "drift", ({**finding(), "related": [1, 2]},), runner="srun", took_ms=412))
    assert run(capsys, tmp_path)[0] == 1


def test_a_quoted_glob_pattern_is_expanded_and_one_that_matches_nothing_is_an_e601(tmp_path, capsys):
    for number in range(1, 4):
        write(tmp_path, f"n{number}.json", report(f"n{number}"))
    status, out, err = run(capsys, str(tmp_path / "n[12].json"), str(tmp_path / "m*.json"))
    assert status == 1
    assert out.splitlines()[0] == "hwspec fleet report: 2 node(s): 2 clean, 0 drift, 0 unchecked (1 report(s) not read)"
    assert err == f"{tmp_path}/m*.json:0:0: error[E601]: the pattern matches no file\n"


# ---------------------------------------------------------------- what cannot be counted


def test_a_truncated_report_is_a_located_e601_and_the_others_still_count(tmp_path, capsys):
    write(tmp_path, "n1.json", report("n1", "drift", (finding(),)))
    write(tmp_path, "n2.json", '{"hwspec_report": 1,\n  "node": "n2",\n')
    status, out, err = run(capsys, tmp_path)
    assert status == 1
    assert err == f"{tmp_path}/n2.json:3:1: error[E601]: not JSON: Expecting property name enclosed in double quotes\n"
    assert out.splitlines()[0] == "hwspec fleet report: 1 node(s): 0 clean, 1 drift, 0 unchecked (1 report(s) not read)"


def test_a_wrong_typed_value_is_an_e602_located_at_its_key(tmp_path, capsys):
    """The second report of the file, its second finding's line: line 34, column 15 of the file."""
    bad = report("n2", "drift", (finding(), {**finding(), "line": "70"}))
    path = write(tmp_path, "a.json", report("n1"), bad)
    lines = path.read_text().splitlines()
    assert lines[33] == '      "line": "70",'
    status, out, err = run(capsys, "--collected", path)
    assert status == 1
    assert err == f"{path}:34:15: error[E602]: findings[1].line is a string, not an integer or null\n"
    assert out.splitlines()[0] == "hwspec fleet report: 1 node(s): 1 clean, 0 drift, 0 unchecked (1 report(s) not read)"


@pytest.mark.parametrize(("document", "message"), [
    ({**report("n1"), "hwspec_report": 2}, "hwspec_report is 2, this hwspec reads version 1 (newer than this hwspec reads: upgrade it)"),
    ({**report("n1"), "exit_code": 1}, "exit_code 1 disagrees with status clean (exit code 0)"),
    ({**report("n1"), "status": "ok"}, "status 'ok' is not one of: clean, drift, unchecked"),
    ({**report("n1"), "exit_code": True}, "exit_code is a boolean, not an integer"),
    ({k: v for k, v in report("n1").items() if k != "findings"}, "findings is missing"),
    (report("n[1-3]"), "node 'n[1-3]' is not a host name (letters, digits, '.', '-', '_'; at most 253 characters)"),
    (report("n1\nerror: forged"), "node 'n1\\\\x0aerror: forged' is not a host name (letters, digits, '.', '-', '_'; "
                                  "at most 253 characters)"),
    (report("n1", "drift", ({"code": "D105", "message": "m"},)), "findings[0].severity is missing"),
    (report("n1", "drift", ("D105",)), "findings[0] is a string, not an object"),
    ([report("n1")], "a node report is a JSON object, not an array"),
], ids=["newer-version", "exit-code-disagrees", "unknown-status", "boolean-exit-code", "no-findings", "hostlist-syntax",
        "line-break-in-node", "finding-without-severity", "finding-not-an-object", "an-array"])
def test_what_is_not_a_version_1_node_report_is_an_e602(tmp_path, capsys, document, message):
    path = write(tmp_path, "a.json", document)
    status, out, err = run(capsys, path)
    assert status == 2  # the only report: nothing read
    assert err.splitlines()[0].split(": error[E602]: ", 1)[1] == message
    assert err.splitlines()[-1] == "hwspec: no node report could be read"
    assert out.splitlines()[0] == "hwspec fleet report: 0 node(s): 0 clean, 0 drift, 0 unchecked (1 report(s) not read)"


def test_a_node_reported_twice_the_same_is_counted_once_with_an_e603_warning(tmp_path, capsys):
    """A copy of a report in another directory, or a file named twice: the same evidence again."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write(tmp_path / "a", "n1.json", report("n1"))
    write(tmp_path / "b", "n1.json", report("n1"))
    status, out, err = run(capsys, tmp_path / "a", tmp_path / "b")
    assert status == 0  # the first report counts; a warning does not fail the fleet
    assert err == f"{tmp_path}/b/n1.json:1:1: warning[E603]: node n1 was reported in {tmp_path}/a/n1.json already: this report is not counted\n"
    assert out.splitlines()[0] == "hwspec fleet report: 1 node(s): 1 clean, 0 drift, 0 unchecked (1 duplicate(s) not counted)"


def test_no_readable_report_exits_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    status, _, err = run(capsys, tmp_path / "empty", tmp_path / "missing.json")
    assert status == 2
    assert err.splitlines() == [f"{tmp_path}/empty:0:0: error[E601]: the directory holds no *.json report",
                                f"{tmp_path}/missing.json:0:0: error[E601]: cannot read: no such file or directory",
                                "hwspec: no node report could be read"]


def test_hostile_files_are_e601s_not_tracebacks_or_hangs(tmp_path, capsys):
    """A FIFO (reading it would block), a file over 16 MiB (sparse), bytes that are not UTF-8,
    an empty file and nesting deeper than the JSON parser's recursion."""
    os.mkfifo(tmp_path / "fifo.json")
    with open(tmp_path / "huge.json", "wb") as stream:
        stream.truncate(fleet.MAX_REPORT_BYTES + 1)
    (tmp_path / "latin1.json").write_bytes(b'{"node": "caf\xe9"}')
    (tmp_path / "nothing.json").write_text("\n")
    (tmp_path / "deep.json").write_text("[" * 100_000)
    status, _, err = run(capsys, tmp_path)
    assert status == 2
    assert err.splitlines() == [
        f"{tmp_path}/deep.json:1:65: error[E601]: not JSON this reader accepts: arrays and objects nested deeper than 64",
        f"{tmp_path}/fifo.json:0:0: error[E601]: cannot read: not a regular file",
        f"{tmp_path}/huge.json:0:0: error[E601]: larger than the 16 MiB limit for a node report",
        f"{tmp_path}/latin1.json:1:14: error[E601]: not UTF-8 (byte 0xe9)",
        f"{tmp_path}/nothing.json:1:1: error[E601]: the file is empty",
        "hwspec: no node report could be read",
    ]


def test_a_report_past_a_bound_is_counted_and_the_next_one_in_the_file_still_counts(tmp_path, capsys):
    """A 5,000-digit number (int() of it raises) and nesting past 64 levels: each is a located
    E601 of its own report, and the reports after them in the same file are read."""
    long_number = json.dumps(report("n1"), indent=2).replace('"exit_code": 0', '"exit_code": ' + "9" * 5000)
    deep = '{"hwspec_report": 1, "extra": ' + "[" * 65 + "]" * 65 + "}\n"
    path = write(tmp_path, "a.json", long_number + "\n", deep, report("n3"))
    status, out, err = run(capsys, "--collected", path)
    assert status == 1  # reports not read: the fleet needs attention
    assert err.splitlines() == [
        f"{path}:7:16: error[E601]: not JSON this reader accepts: a number of 5000 characters, more than the 32 a reader converts",
        f"{path}:10:94: error[E601]: not JSON this reader accepts: arrays and objects nested deeper than 64",
    ]
    assert out.splitlines()[0] == "hwspec fleet report: 1 node(s): 1 clean, 0 drift, 0 unchecked (2 report(s) not read)"


@settings(max_examples=pinned(30))
@given(text=hostile_texts())
def test_hostile_text_in_a_report_is_shown_on_one_line_in_every_format(text):
    """A message, device, platform or spec holding line breaks, terminal escapes or Markdown
    stays on its line: the text report has its fixed lines, the Markdown table its cells, and
    the JSON report carries the text as `visible` shows it."""
    hostile = fleet.Fleet()
    hostile.add_text(json.dumps({**report("n1", "drift", (finding(device=text, message=text),)),
                                 "platform": text, "spec": text}), "n1.json")
    assert hostile.reports_read == 1 and not hostile.problems
    assert len(fleet.render(hostile, "text").splitlines()) == 9
    table_row = fleet.render(hostile, "markdown").splitlines()[-1]
    assert table_row.count("|") - table_row.count("\\|") == 9  # eight cells
    assert "\x1b" not in table_row and "<" not in table_row.replace("\\<", "")
    assert json.loads(fleet.render(hostile, "json"))["findings"][0]["message"] == fleet.visible(text)


def test_the_markdown_report_escapes_what_markdown_would_read(tmp_path, capsys):
    write(tmp_path, "n1.json", report("n1", "drift", (finding(message="a | b <script> `x` *y*"),)))
    _, out, _ = run(capsys, tmp_path, "--format", "markdown")
    assert out.splitlines()[-1] == ("| D105 | error | zionex | gpu3 | 1 | `n1` | platforms/zionex.yaml:70:11 "
                                    "| a \\| b \\<script\\> \\`x\\` \\*y\\* |")


def test_the_command_line_s_formats_are_the_module_s():
    assert fleet_cli.FORMATS == fleet.FORMATS


def test_the_console_command_reads_a_directory_and_exits_1_on_drift():
    """`hwspec fleet-report` as installed (tests/test_live.py needs `hwspec` on PATH too)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-m", "hwspec", "fleet-report", str(SAMPLES), "--format", "json"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["nodes"]["drift"] == 3


@given(nodes=st.lists(st.integers(0, 9999), min_size=1, max_size=40, unique=True))
def test_each_group_s_hostlist_expands_to_exactly_its_nodes(nodes):
    from hwspec.hostlist import expand

    merged = fleet.Fleet()
    for number in nodes:
        merged.add_report(fleet.parse_report(report(f"gpu{number:04d}", "drift", (finding(),))), "a.json")
    (group,) = merged.sorted_groups()
    summary = merged.summary()
    assert sorted(expand(summary["findings"][0]["hostlist"])) == sorted(group.nodes) == sorted(f"gpu{n:04d}" for n in nodes)


def test_a_report_in_a_json_lines_file_is_located_at_its_own_line(tmp_path, capsys):
    """Locations in a file of many reports are counted once through the file (linear), and right."""
    lines = [json.dumps(report(f"n{n}")) for n in range(1, 4)] + [json.dumps(report("n2")), json.dumps({**report("n9"), "status": 3})]
    path = write(tmp_path, "all.json", "\n".join(lines) + "\n")
    status, _, err = run(capsys, "--collected", path)
    assert status == 1
    column = lines[4].index('"status"') + len('"status": ') + 1
    assert err.splitlines() == [
        f"{path}:4:1: warning[E603]: node n2 was reported in {path} already: this report is not counted",
        f"{path}:5:{column}: error[E602]: status is an integer, not a string",
    ]


def test_docs_fleet_md_shows_the_samples_report_as_it_is_printed(capsys):
    """docs/fleet.md's example output is what `hwspec fleet-report tests/data/fleet` prints."""
    docs = (ROOT / "docs" / "fleet.md").read_text()
    shown = docs.split("```\nhwspec fleet-report tests/data/fleet\n", 1)[1].split("```", 1)[0]
    _, out, _ = run(capsys, SAMPLES)
    assert shown == out


def test_fleet_report_loads_neither_the_model_nor_yaml():
    """Merging JSON needs the diagnostics, the hostlist code and this module: no pydantic
    (150 ms), PyYAML, jinja2 or networkx."""
    code = ("import json, sys; from hwspec.cli import main; main(['fleet-report', 'tests/data/fleet']); "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    loaded = set(json.loads(result.stderr.splitlines()[-1]))
    assert "hwspec" in loaded
    assert not loaded & {"pydantic", "yaml", "jinja2", "networkx"}


# ---------------------------------------------------------------- which report speaks for a node


def samples_with(directory: Path, name: str, *documents: dict) -> Path:
    """tests/data/fleet's six files copied into `directory`, and `documents` in directory/name."""
    for sample in sorted(SAMPLES.iterdir()):
        (directory / sample.name).write_bytes(sample.read_bytes())
    return write(directory, name, *documents)


def test_a_file_that_sorts_first_cannot_speak_for_other_nodes(tmp_path, capsys):
    """The fleet of the samples (3 drifted, 1 unchecked) and a file holding "clean" reports of
    those four: each is an E604 at its line, not counted, and the fleet is what its own files say."""
    forged = samples_with(tmp_path, "0-forged.json", *(report(node) for node in ("zx0002", "zx0003", "zx0004", "zx0005")))
    status, out, err = run(capsys, tmp_path)
    assert status == 1
    assert out.splitlines()[0] == ("hwspec fleet report: 6 node(s): 2 clean, 3 drift, 1 unchecked "
                                   "(4 report(s) in another node's file not counted)")
    assert err.splitlines() == [
        f"{forged}:{line}:1: error[E604]: node {node}'s report in 0-forged.json, which is not {node}.json: not counted (a node's "
        "report counts only from its own file; give a file of several nodes' reports with --collected)"
        for line, node in ((1, "zx0002"), (10, "zx0003"), (19, "zx0004"), (28, "zx0005"))]


def test_a_report_in_a_file_named_for_no_node_is_not_counted(tmp_path, capsys):
    path = write(tmp_path, "report of n1.json", report("n1"))
    status, _, err = run(capsys, path)
    assert status == 2  # nothing counted
    assert err.splitlines()[0] == (f"{path}:1:1: error[E604]: node n1's report in report of n1.json, which is not n1.json: not "
                                   "counted (a node's report counts only from its own file; give a file of several nodes' "
                                   "reports with --collected)")


def test_two_reports_of_one_node_that_disagree_are_an_error(tmp_path, capsys):
    (tmp_path / "monday").mkdir()
    (tmp_path / "tuesday").mkdir()
    write(tmp_path / "monday", "n1.json", report("n1"))
    write(tmp_path / "tuesday", "n1.json", report("n1", "drift", (finding(),)))
    status, out, err = run(capsys, tmp_path / "monday", tmp_path / "tuesday")
    assert status == 1
    assert err == (f"{tmp_path}/tuesday/n1.json:1:1: error[E605]: node n1 is drift here but clean in {tmp_path}/monday/n1.json:1: "
                   "reports of one node disagree; this one is not counted\n")
    assert out.splitlines()[0] == "hwspec fleet report: 1 node(s): 1 clean, 0 drift, 0 unchecked (1 disagreeing report(s) not counted)"


def test_two_reports_of_one_node_with_the_same_status_and_other_findings_disagree(tmp_path, capsys):
    path = write(tmp_path, "n1.json", report("n1", "drift", (finding(),)), report("n1", "drift", (finding(code="D110"),)))
    status, _, err = run(capsys, path)
    assert status == 1
    assert err == (f"{path}:21:1: error[E605]: node n1 is drift here and in {path}:1, with other findings: reports of one node "
                   "disagree; this one is not counted\n")


def test_a_collected_file_speaks_for_every_node_it_names(tmp_path, capsys):
    path = write(tmp_path, "kubectl-logs.json", *(report(f"n{n}") for n in range(1, 4)), report("n4", "drift", (finding(),)))
    status, out, err = run(capsys, "--collected", path)
    assert (status, err) == (1, "")
    assert out.splitlines()[0] == "hwspec fleet report: 4 node(s): 3 clean, 1 drift, 0 unchecked"


def test_a_collected_file_that_disagrees_with_a_nodes_own_file_is_an_error(tmp_path, capsys):
    (tmp_path / "reports").mkdir()
    write(tmp_path / "reports", "n1.json", report("n1", "drift", (finding(),)))
    collected = write(tmp_path, "logs.json", report("n1"))
    status, _, err = run(capsys, tmp_path / "reports", "--collected", collected)
    assert status == 1
    assert err == (f"{collected}:1:1: error[E605]: node n1 is clean here but drift in {tmp_path}/reports/n1.json:1: reports of one "
                   "node disagree; this one is not counted\n")


def test_fleet_report_without_a_report_is_bad_usage(capsys):
    assert run(capsys) == (2, "", "hwspec fleet-report: error: give at least one REPORT or --collected FILE\n")


# ---------------------------------------------------------------- what is kept does not grow with a report's size


def test_a_long_text_is_kept_cut_with_its_length(tmp_path, capsys):
    write(tmp_path, "n1.json", {**report("n1", "drift", (finding(device="d" * 300, message="m" * 20_000),)), "spec": "s" * 5000})
    _, out, _ = run(capsys, tmp_path, "--format", "json")
    (group,) = json.loads(out)["findings"]
    assert (group["message"], group["device"], group["spec"]) == (
        "m" * 1000 + "... (20000 characters)", "d" * 256 + "... (300 characters)", "s" * 1000 + "... (5000 characters)")


def test_distinct_messages_are_counted_up_to_a_hundred(tmp_path, capsys):
    for n in range(150):
        write(tmp_path, f"n{n}.json", report(f"n{n}", "drift", (finding(message=f"gpu3: {n} replay errors"),)))
    _, out, _ = run(capsys, tmp_path, "--format", "json")
    (group,) = json.loads(out)["findings"]
    assert (group["nodes"], group["distinct_messages"], group["more_messages"]) == (150, 100, True)
    _, out, _ = run(capsys, tmp_path)
    assert "    platforms/zionex.yaml:70:11: gpu3: 0 replay errors (and 99 or more other message(s))" in out.splitlines()


def test_findings_past_the_groups_kept_are_counted(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fleet, "MAX_GROUPS", 2)
    write(tmp_path, "n1.json", report("n1", "drift", tuple(finding(device=f"gpu{d}") for d in range(5))))
    _, out, _ = run(capsys, tmp_path)
    assert out.splitlines()[-1] == "  3 finding(s) not grouped: the first 2 groups are listed"
    _, out, _ = run(capsys, tmp_path, "--format", "json")
    assert (len(json.loads(out)["findings"]), json.loads(out)["findings_not_grouped"]) == (2, 3)


@settings(max_examples=pinned(200))
@given(entries=st.lists(st.tuples(st.sampled_from(["n1", "n2", "n3"]), st.sampled_from(["n1", "n2", "n3"]),
                                  st.sampled_from(list(fleet.STATUS_EXIT))), max_size=10))
def test_a_node_counts_from_its_own_files_first_report_and_a_fleet_is_never_clean_on_a_report_it_did_not_count(entries):
    """Reports of any node in the files of any node, in any order: each node counts as the first
    report of it read from its own file says; any other report leaves the exit status at 1 or more."""
    merged = fleet.Fleet()
    for owner, node, status in entries:
        merged.add_text(json.dumps(report(node, status)), f"{owner}.json")
    first: dict[str, str] = {}
    for owner, node, status in entries:
        if owner == node:
            first.setdefault(node, status)
    assert {node: status for status in fleet.STATUS_EXIT for tally in merged.platforms.values()
            for node in tally.nodes[status]} == first
    others = [(owner, node, status) for owner, node, status in entries if owner != node or status != first[node]]
    assert (merged.misplaced + merged.conflicts, merged.misplaced) == (len(others), sum(o != n for o, n, _ in others))
    if not first:
        assert merged.exit_code == 2
    else:
        assert merged.exit_code == (0 if not others and set(first.values()) == {"clean"} else 1)
