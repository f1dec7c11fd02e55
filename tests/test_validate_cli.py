"""`hwspec validate`, `hwspec rules` and `hwspec explain` as a user runs them: output formats,
exit codes (0 clean, 1 error findings, 2 unreadable input), --werror, site rules, and a
platform's `rules:` section."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from hwspec.cli.commands import main
from hwspec.pipeline import rule_directories
from hwspec.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path("tests/fixtures/rules")
BASE = FIXTURES / "base_2gpu.yaml"
ON_SOCKET = FIXTURES / "backend_nic_on_socket.yaml"          # one HW202 error
OVERSUBSCRIBED = FIXTURES / "switch_oversubscribed.yaml"    # one HW103 warning
SARIF_SCHEMA = ROOT / "tests/data/sarif-schema-2.1.0.json"

ON_SOCKET_FINDING = (
    f"{ON_SOCKET}:57:22: error[HW202 backend-nic-locality]: gpu0 (sw0, NUMA 0) is served by nic0 (cpu0, NUMA 0): "
    "they share no PCIe switch or root port, so their traffic goes through the CPU\n"
    "  hint: move nic0 under sw0\n")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def with_rules_section(tmp_path: Path, source: Path, section: str) -> Path:
    """A copy of `source` with a `rules:` section appended (in tmp_path, beside no parts/)."""
    return write(tmp_path / source.name, source.read_text() + textwrap.dedent(section))


# ---------------------------------------------------------------- text output and exit codes


def test_clean_file_exits_0_with_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "validate", BASE) == (0, "", "hwspec: 1 file(s) checked: 0 error(s), 0 warning(s): ok\n")


def test_shipped_platforms_are_clean(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "validate", "platforms/zion.yaml", "platforms/zionex.yaml")
    assert (status, out) == (0, "")


def test_error_finding_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "validate", ON_SOCKET) == (
        1, ON_SOCKET_FINDING, "hwspec: 1 file(s) checked: 1 error(s), 0 warning(s): failed\n")


def test_warning_alone_exits_0_and_werror_makes_it_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "validate", OVERSUBSCRIBED)
    assert status == 0 and out.startswith(f"{OVERSUBSCRIBED}:26:11: warning[HW103 pcie-oversubscription]: sw0: ")
    status, out, err = run(capsys, "validate", "--werror", OVERSUBSCRIBED)
    assert status == 1 and out.startswith(f"{OVERSUBSCRIBED}:26:11: error[HW103 pcie-oversubscription]: sw0: ")
    assert err == "hwspec: 1 file(s) checked: 1 error(s), 0 warning(s): failed\n"


def test_yaml_syntax_error_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "hwspec: 1\nkind: [node\nname: x\n")
    status, out, _ = run(capsys, "validate", bad)
    assert status == 2
    assert re.fullmatch(rf"{re.escape(str(bad))}:\d+:\d+: error\[E103\]: invalid YAML: .*\n", out)


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, _ = run(capsys, "validate", tmp_path / "nope.yaml")
    assert status == 2 and "error[E100]: cannot read file" in out


def test_unreadable_file_wins_over_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "kind: [\n")
    status, out, _ = run(capsys, "validate", ON_SOCKET, bad)
    assert status == 2
    assert out.startswith(ON_SOCKET_FINDING) and "error[E103]" in out


def test_directory_is_expanded_to_its_yaml_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", BASE.read_text())
    write(tmp_path / "b.yaml", ON_SOCKET.read_text())
    write(tmp_path / "notes.txt", "not a platform")
    status, out, err = run(capsys, "validate", tmp_path)
    assert status == 1 and out.count("\n") == 2 and out.startswith(f"{tmp_path / 'b.yaml'}:57:22: error[HW202 ")
    assert err == "hwspec: 2 file(s) checked: 1 error(s), 0 warning(s): failed\n"


# ---------------------------------------------------------------- machine formats


def test_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "validate", "--format", "json", ON_SOCKET, OVERSUBSCRIBED)
    assert status == 1 and err == ""
    findings = json.loads(out)
    assert [(f["code"], f["rule"], f["severity"], f["line"], f["column"]) for f in findings] == [
        ("HW202", "backend-nic-locality", "error", 57, 22),
        ("HW103", "pcie-oversubscription", "warning", 26, 11),
    ]
    assert findings[0]["file"] == str(ON_SOCKET)
    assert findings[0]["message"].startswith("gpu0 (sw0, NUMA 0) is served by nic0 (cpu0, NUMA 0)")
    assert findings[0]["hint"] == "move nic0 under sw0"


def test_json_format_clean_is_an_empty_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "validate", "--format", "json", BASE) == (0, "[]\n", "")


def test_github_format(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "validate", "--format", "github", ON_SOCKET, OVERSUBSCRIBED)
    lines = out.splitlines()
    assert status == 1 and len(lines) == 2
    pattern = r"::(error|warning|notice) file=[^,:]+,line=\d+,col=\d+,title=[^:]+::.+"
    assert all(re.fullmatch(pattern, line) for line in lines), lines
    assert lines[0] == (
        f"::error file={ON_SOCKET},line=57,col=22,title=HW202 backend-nic-locality::gpu0 (sw0, NUMA 0) is served "
        "by nic0 (cpu0, NUMA 0): they share no PCIe switch or root port, so their traffic goes through the CPU"
        "%0Ahint: move nic0 under sw0")
    assert lines[1].startswith(f"::warning file={OVERSUBSCRIBED},line=26,col=11,title=HW103 pcie-oversubscription::")


def test_sarif_format_validates_against_the_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = write(tmp_path / "bad file.yaml", "kind: [\n")
    status, out, _ = run(capsys, "validate", "--format", "sarif", ON_SOCKET, OVERSUBSCRIBED, bad)
    assert status == 2
    log = json.loads(out)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(log)
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    results = run_["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("HW202", "error"), ("HW103", "warning"), ("E103", "error")]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    assert {r.id for r in load_rules(rule_directories())} <= {r["id"] for r in rules}
    location = results[0]["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": ON_SOCKET.resolve().relative_to(ROOT).as_posix(), "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": 57, "startColumn": 22}}
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == bad.as_uri()


# ---------------------------------------------------------------- rules and explain


def test_rules_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "rules")
    lines = out.splitlines()
    assert status == 0
    assert [line.split()[0] for line in lines] == [r.id for r in load_rules(rule_directories())]
    hw201 = next(line for line in lines if line.startswith("HW201"))
    assert re.fullmatch(r"HW201  backend-nic-per-gpu +error    node     Where `backend.nic_per_gpu` is declared, .*", hw201)


def test_explain_prints_invariant_and_rationale(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "HW201")
    assert status == 0
    assert out.splitlines()[:6] == [
        "HW201 backend-nic-per-gpu (default severity: error, scope: node)",
        "defined in src/hwspec/rules/builtin/nic.py",
        "",
        "Where `backend.nic_per_gpu` is declared, every GPU has backend NICs of its own: at least one, none shared "
        "with another GPU, and every backend NIC names its GPU.",
        "",
        "With dedicated NICs, NCCL gives each rank its own NICs and rails line up across nodes; a GPU",
    ]
    assert run(capsys, "explain", "backend-nic-per-gpu")[1] == out


def test_explain_unknown_rule_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "explain", "nosuch") == (2, "", "hwspec: unknown rule 'nosuch'; run 'hwspec rules' to list them\n")
    assert run(capsys, "explain", "nic-name") == (2, "", "hwspec: unknown rule 'nic-name' (did you mean 'nic-names'?); run 'hwspec rules' to list them\n")


# ---------------------------------------------------------------- site rules (--rules DIR)

SITE_RULE = '''
    from hwspec.rules import rule

    from ._site import gpu_word


    @rule("SITE001", "four-gpu-nodes", severity="warning")
    def four_gpu_nodes(ctx):
        """Our nodes have four GPUs.

        The site scheduler packs jobs by four GPUs.
        """
        gpus = ctx.platform.gpus
        if len(gpus) != 4:
            yield ctx.finding(f"{len(gpus)} {gpu_word(len(gpus))}, the site runs 4", at=(gpus[0].id, "part"))
'''


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site rules directory whose rule imports a helper from beside it."""
    write(tmp_path / "site" / "_site.py", "def gpu_word(n):\n    return 'GPU' if n == 1 else 'GPUs'\n")
    write(tmp_path / "site" / "gpus.py", SITE_RULE)
    return tmp_path / "site"


def test_site_rules_are_run_with_the_builtin_ones(capsys: pytest.CaptureFixture[str], site: Path) -> None:
    status, out, _ = run(capsys, "validate", "--rules", site, ON_SOCKET)
    assert status == 1
    assert out == (f"{ON_SOCKET}:41:11: warning[SITE001 four-gpu-nodes]: 2 GPUs, the site runs 4\n" + ON_SOCKET_FINDING)


def test_site_rules_are_listed_and_explained(capsys: pytest.CaptureFixture[str], site: Path) -> None:
    status, out, _ = run(capsys, "rules", "--rules", site)
    assert status == 0 and out.splitlines()[-1].split() == ["SITE001", "four-gpu-nodes", "warning", "node",
                                                              "Our", "nodes", "have", "four", "GPUs."]
    status, out, _ = run(capsys, "explain", "--rules", site, "four-gpu-nodes")
    assert status == 0 and out.splitlines()[3:] == ["Our nodes have four GPUs.", "", "The site scheduler packs jobs by four GPUs."]


@pytest.mark.parametrize("body, error", [
    ("return [1 / 0]", "ZeroDivisionError: division by zero"),
    ("yield 'gpu0 is odd'", "TypeError: yielded str, not a Finding made by ctx.finding()"),
])
def test_a_failing_rule_is_an_e900_finding(capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, error: str) -> None:
    rules_dir = write(tmp_path / "site" / "broken.py", f'''
        from hwspec.rules import rule

        @rule("SITE900", "broken")
        def broken(ctx):
            """Always fails."""
            {body}
    ''').parent
    status, out, _ = run(capsys, "validate", "--rules", rules_dir, BASE)
    assert status == 1
    assert out == (f"{BASE}:1:1: error[E900]: rule SITE900 broken failed: {error}\n"
                   f"  hint: this is a bug in {rules_dir / 'broken.py'}\n")


def test_a_rule_module_that_cannot_load_is_an_e900_finding_and_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Like a rule that fails when it runs: the report has it, located at the failing line."""
    rules_dir = write(tmp_path / "site" / "bad.py", "import os\nraise RuntimeError('no config')\n").parent
    status, out, _ = run(capsys, "validate", "--rules", rules_dir, BASE)
    assert (status, out) == (1, f"{rules_dir / 'bad.py'}:2:1: error[E900]: the rule module failed to import: "
                                f"RuntimeError: no config\n  hint: none of its rules ran; this is a bug in {rules_dir / 'bad.py'}\n")


def test_a_rule_clashing_with_a_builtin_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules_dir = write(tmp_path / "site" / "dup.py", '''
        from hwspec.rules import rule

        @rule("HW201", "my-nic-rule")
        def mine(ctx):
            """Clashes."""
            return ()
    ''').parent
    status, _, err = run(capsys, "validate", "--rules", rules_dir, BASE)
    assert status == 2
    assert err == (f"{rules_dir / 'dup.py'}:4:1: error[E302]: rule HW201 my-nic-rule clashes with "
                   "HW201 backend-nic-per-gpu in src/hwspec/rules/builtin/nic.py\n")


def test_a_missing_rules_directory_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        run(capsys, "validate", "--rules", tmp_path / "nope", BASE)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.endswith(f"hwspec: error: --rules {tmp_path / 'nope'}: no such directory\n")


# ---------------------------------------------------------------- a platform's rules: section


def test_platform_turns_a_rule_off_with_a_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = with_rules_section(tmp_path, OVERSUBSCRIBED, '''
        rules:
          HW103: {severity: "off", reason: "the x4 uplink only carries management traffic"}
    ''')
    assert run(capsys, "validate", "--werror", path)[:2] == (0, "")


def test_platform_changes_a_severity_by_rule_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = with_rules_section(tmp_path, OVERSUBSCRIBED, '''
        rules:
          pcie-oversubscription: {severity: error, reason: "this switch must never be oversubscribed"}
    ''')
    status, out, _ = run(capsys, "validate", path)
    assert status == 1 and out.startswith(f"{path}:26:11: error[HW103 pcie-oversubscription]: sw0: ")


def test_platform_lowers_an_error_to_info(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = with_rules_section(tmp_path, ON_SOCKET, '''
        rules:
          HW202: {severity: info, reason: "nic0 is a test NIC on the CPU"}
    ''')
    status, out, _ = run(capsys, "validate", "--werror", path)
    assert status == 0 and out.startswith(f"{path}:57:22: info[HW202 backend-nic-locality]: gpu0 (sw0, NUMA 0) ")


def test_platform_names_an_unknown_rule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = with_rules_section(tmp_path, BASE, '''
        rules:
          pcie-oversubscriptoin: {severity: "off", reason: "typo"}
    ''')
    line = BASE.read_text().count("\n") + 3
    assert run(capsys, "validate", path)[:2] == (1, (
        f"{path}:{line}:26: error[E303]: rules: unknown rule 'pcie-oversubscriptoin'\n"
        "  hint: did you mean 'pcie-oversubscription'? run 'hwspec rules' to list them\n"))


# ---------------------------------------------------------------- as a process


@pytest.mark.slow  # a hwspec process
def test_python_dash_m_reports_instead_of_raising(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "hwspec: 1\nkind: [node\n")
    broken = write(tmp_path / "site" / "broken.py", '''
        from hwspec.rules import rule

        @rule("SITE900", "broken")
        def broken(ctx):
            """Always fails."""
            raise KeyError("gpu9")
    ''').parent
    done = subprocess.run([sys.executable, "-m", "hwspec", "validate", "--rules", str(broken), str(bad), str(BASE)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    assert "error[E103]" in done.stdout and "error[E900]: rule SITE900 broken failed: KeyError: 'gpu9'" in done.stdout


@pytest.mark.slow  # hwspec processes, their collector watched
@pytest.mark.parametrize(("call", "frozen"), [("cli.main()", True), ("cli.main(['validate', 'platforms/zionex.yaml'])", False)],
                         ids=["the-command", "a-library-call"])
def test_the_command_collects_cycles_rarely_and_not_at_exit_and_a_library_call_does_not_change_the_collector(call, frozen):
    """`hwspec` (argv None) ends the process: it runs the cycle collector every 100,000
    allocations and freezes the heap at the end instead of having the interpreter's exit
    collection walk it; a caller in its own process keeps Python's defaults."""
    code = ("import gc, sys; from hwspec import cli; sys.argv = ['hwspec', 'validate', 'platforms/zionex.yaml']; "
            f"status = {call}; print(status, gc.get_freeze_count() > 0, gc.get_threshold()[0])")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.splitlines()[-1]) == (0, f"0 {frozen} {100_000 if frozen else 700}")


# ---------------------------------------------------------------- parts files (platforms/parts/)

SITE_PART = """\
hwspec: 1
kind: parts
nics:
  site-nic-100g:
    source: "the vendor's datasheet"
    vendor: nvidia-mellanox
    model_name: Site NIC 100G
    speed: 100 Gb/s
    ports: 1
    transports: [rocev2, tcp]
    rdma: true
    gpudirect: true
    pci_vendor: "0x15b3"
    pci_device: "0x1017"
    pcie: {gen: 4, width: 16}
"""


def test_validate_checks_a_parts_file_as_a_parts_directory_loads_it(tmp_path, capsys):
    """A site's `platforms/parts/*.yaml` (what the pre-commit hook passes) validates as parts:
    clean when it is, its own error at file:line:col when it is not; a platform beside it
    still uses it."""
    parts = tmp_path / "platforms" / "parts"
    parts.mkdir(parents=True)
    (parts / "nics.yaml").write_text(SITE_PART)
    assert run(capsys, "validate", parts / "nics.yaml") == (0, "", "hwspec: 1 file(s) checked: 0 error(s), 0 warning(s): ok\n")
    (parts / "nics.yaml").write_text(SITE_PART.replace("speed: 100 Gb/s", "speed: 100 GB"))
    status, out, _ = run(capsys, "validate", parts / "nics.yaml")
    assert status == 1 and out.startswith(f"{parts / 'nics.yaml'}:8:12: error[E1")
    assert "E113" not in out


def test_a_parts_file_is_no_platform_for_roofline_estimate_or_generate(tmp_path, capsys):
    part = tmp_path / "nics.yaml"
    part.write_text(SITE_PART)
    assert run(capsys, "roofline", part) == (2, "", f"hwspec: {part} is a parts file; give the platform (node or cluster) file here\n")
    assert run(capsys, "estimate", part, ROOT / "workloads" / next(p.name for p in (ROOT / "workloads").glob("*.yaml")))[::2] == (
        2, f"hwspec: {part} is a parts file; give the platform (node or cluster) file here\n")
    status, _, err = run(capsys, "generate", part, "-o", tmp_path / "out")  # checked, nothing to generate
    assert (status, err) == (0, f"hwspec: 0 file(s) generated in {tmp_path / 'out'} (0 changed)\n")
    assert not any(p.is_file() for p in (tmp_path / "out").rglob("*"))
