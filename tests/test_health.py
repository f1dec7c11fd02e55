"""Health-check outputs of `hwspec diff` and the generated integrations: the node report
(`--format json`, the contract `hwspec fleet-report` reads), the Prometheus text exposition
format as prometheus_client parses it, the Slurm HealthCheckProgram run by a real slurmd that
drains and resumes the node through a real slurmctld, and the Node Problem Detector plugin and
config (checked against a schema derived from NPD's Go types).

The scripts run this checkout's hwspec on a captured dump (HWSPEC_INPUT, tests/data/live) instead
of this machine (`--live`), so they act on a real node report without a GPU. docs/health.md's
examples are run here too (`docs_block`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest
import yaml

from hwspec.cli.commands import main
from hwspec.diagnostics import Diagnostic, Severity
from hwspec.diagnostics.report import SUMMARY_LIMIT, prometheus, summary
from hwspec.live.health import device_of
from tests import test_consumer_slurm
from tests.cli import run_hwspec
from tests.consumers import HWSPEC, ROOT, loopback_slurm_conf
from tests.test_consumer_slurm import slurmctld

LIVE = Path("tests/data/live")
ZIONEX = Path("platforms/zionex.yaml")
CLEAN, GPU_X8 = LIVE / "zionex.nccl.xml", LIVE / "zionex-gpu-x8.nccl.xml"
slurm_programs = test_consumer_slurm.slurm_programs
"""The fixture: slurmd, slurmctld and scontrol, or skip (not root, or not installed)."""
NPD_SCHEMA = ROOT / "tests" / "data" / "npd-custom-plugin-config.schema.json"
GPU_X8_SUMMARY = ("D105 gpu3: PCIe link is Gen4 x16 in the spec, but Gen4 x8 in the machine (narrower) "
                  "(seen at tests/data/live/zionex-gpu-x8.nccl.xml:61)")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def docs_block(start: str) -> str:
    """The fenced example of docs/health.md whose body starts with `start`."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", (ROOT / "docs" / "health.md").read_text(), re.M | re.S)
    (block,) = [b for b in blocks if b.startswith(start)]
    return block


def diff(capsys, *args: str) -> tuple[int, str]:
    status = main(["diff", *map(str, args)])
    return status, capsys.readouterr().out


def finding(message: str, code: str = "D105", severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic("spec.yaml", 3, 5, severity, code, message)


# ---------------------------------------------------------------- the node report


def test_diff_json_is_the_node_report_naming_node_spec_status_and_each_findings_device(capsys) -> None:
    status, out = diff(capsys, ZIONEX, GPU_X8, "--format", "json", "--node", "gpu-node-7")
    report = json.loads(out)
    assert status == 1
    assert {k: report[k] for k in ("hwspec_report", "node", "spec", "platform", "status", "exit_code", "summary")} == {
        "hwspec_report": 1, "node": "gpu-node-7", "spec": "platforms/zionex.yaml", "platform": "zionex",
        "status": "drift", "exit_code": 1, "summary": GPU_X8_SUMMARY}
    assert report["findings"] == [{
        "code": "D105", "severity": "error", "device": "gpu3", "file": "platforms/zionex.yaml", "line": 70, "col": 11,
        "message": "gpu3: PCIe link is Gen4 x16 in the spec, but Gen4 x8 in the machine (narrower) "
                   "(seen at tests/data/live/zionex-gpu-x8.nccl.xml:61)",
        "hint": "reseat the card, check the slot's lanes and the BIOS link settings", "rule": "pcie-link"}]


def test_a_clean_node_reports_status_clean_and_exit_code_0(capsys) -> None:
    status, out = diff(capsys, ZIONEX, CLEAN, "--format", "json", "--node", "n1")
    report = json.loads(out)
    assert (status, report["status"], report["exit_code"], report["findings"]) == (0, "clean", 0, [])
    assert report["summary"] == "the node matches its spec"


def test_a_spec_that_cannot_be_read_is_an_unchecked_report_with_exit_code_2(capsys, tmp_path) -> None:
    status, out = diff(capsys, tmp_path / "missing.yaml", CLEAN, "--format", "json", "--node", "n1")
    report = json.loads(out)
    assert (status, report["status"], report["exit_code"], report["platform"]) == (2, "unchecked", 2, None)
    assert [(f["code"], f["device"], f["line"]) for f in report["findings"]] == [("E100", None, 1)]


def test_the_node_defaults_to_the_short_host_name(capsys, monkeypatch) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "gpu-node-7.cluster.example.org")
    _, out = diff(capsys, ZIONEX, CLEAN, "--format", "json")
    assert json.loads(out)["node"] == "gpu-node-7"


def test_a_finding_is_about_the_device_its_message_names_first_longest_id_winning() -> None:
    ids = ["gpu1", "gpu10", "nic-a", "cpu0"]
    assert device_of(finding("gpu10: PCIe link is Gen4 x16 in the spec"), ids) == "gpu10"
    assert device_of(finding("gpu1-gpu10: 12 NVLinks in the spec, but 6"), ids) == "gpu1"
    assert device_of(finding("the spec declares GPUDirect RDMA, but nic-a (mlx5_0) has gdr=0"), ids) == "nic-a"
    assert device_of(finding("the machine has a GPU the spec does not describe: 0000:07:00.0"), ids) is None


def test_the_summary_is_one_bounded_line_of_shell_and_slurm_safe_characters() -> None:
    hostile = finding("gpu0: name 'x\"; rm -rf / #' `reboot` $(id) \\x0a" + "y" * 300)
    text = summary([hostile, finding("gpu1: another")], 1)
    assert len(text) == SUMMARY_LIMIT and text.endswith("... (+1 more)")
    assert text.startswith("D105 gpu0: name _x__ rm -rf / __ _reboot_ _(id) _x0a")
    assert not set(text) - set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _.:,=/@%+()-")


# ---------------------------------------------------------------- Prometheus


@pytest.mark.consumer
def test_prometheus_output_parses_with_prometheus_client_and_escapes_label_values(capsys) -> None:
    parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client is in the consumers extra")
    status, out = diff(capsys, ZIONEX, GPU_X8, "--format", "prometheus", "--node", 'n"1\\x')
    families = {f.name: f for f in parser.text_string_to_metric_families(out)}
    assert status == 1 and {name: f.type for name, f in families.items()} == {
        "hwspec_check_ok": "gauge", "hwspec_node_drift": "gauge", "hwspec_finding": "gauge"}
    node = {"node": 'n"1\\x', "spec": "platforms/zionex.yaml"}
    assert [(s.labels, s.value) for s in families["hwspec_check_ok"].samples] == [(node, 1.0)]
    assert [(s.labels, s.value) for s in families["hwspec_node_drift"].samples] == [(node, 1.0)]
    assert [(s.labels, s.value) for s in families["hwspec_finding"].samples] == [
        ({"node": 'n"1\\x', "code": "D105", "device": "gpu3", "severity": "error"}, 1.0)]


def test_prometheus_counts_findings_that_share_labels_in_one_sample() -> None:
    text = prometheus([(finding("gpu0: a"), "gpu0"), (finding("gpu0: b"), "gpu0"), (finding("x", "I103", Severity.WARNING), None)],
                      "n1", "s.yaml", 1)
    assert text.splitlines()[-2:] == ['hwspec_finding{node="n1",code="D105",device="gpu0",severity="error"} 2',
                                      'hwspec_finding{node="n1",code="I103",device="",severity="warning"} 1']


def test_an_unchecked_node_has_check_ok_0_and_drift_0(capsys, tmp_path) -> None:
    status, out = diff(capsys, tmp_path / "missing.yaml", CLEAN, "--format", "prometheus", "--node", "n1")
    assert status == 2
    assert f'hwspec_check_ok{{node="n1",spec="{tmp_path}/missing.yaml"}} 0' in out.splitlines()
    assert f'hwspec_node_drift{{node="n1",spec="{tmp_path}/missing.yaml"}} 0' in out.splitlines()


# ---------------------------------------------------------------- the generated scripts


def install(tmp: Path, platform: Path = ZIONEX) -> Path:
    """`platform` generated with its install root at `tmp` and installed there as
    `platform.yaml`. Returns the platform's install dir; `replay` says what its scripts compare."""
    result = run_hwspec("generate", str(platform), "-o", str(tmp), "--no-svg", "--install-root", str(tmp), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    installed = tmp / "zionex"
    shutil.copy(platform, installed / "platform.yaml")
    return installed


def replay(installed: Path, dump: Path | str, **settings: str) -> None:
    """health/site.env making the scripts run this checkout's hwspec on `dump` (HWSPEC_INPUT)
    instead of this machine, with `settings` besides: the scripts see a real node report."""
    lines = {"HWSPEC": shlex.join(HWSPEC), "PYTHONPATH": str(ROOT / "src"), "HWSPEC_INPUT": str(dump), **settings}
    (installed / "health" / "site.env").write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in lines.items()))


def summary_of(installed: Path, dump: Path | str) -> str:
    """The node report's summary for `dump` against the installed spec, as hwspec writes it."""
    result = subprocess.run([*HWSPEC, "diff", str(installed / "platform.yaml"), str(dump), "--format", "json"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return json.loads(result.stdout)["summary"]


def run_plugin(plugin: Path, cwd: Path = ROOT) -> tuple[int, str]:
    result = subprocess.run([str(plugin)], capture_output=True, text=True, timeout=120, cwd=cwd,
                            env={"PATH": os.environ["PATH"], "NODE_NAME": "n1"})
    return result.returncode, result.stdout


@pytest.mark.slow  # runs the NPD plugin three times, each running hwspec
def test_the_npd_plugin_prints_one_line_and_exits_as_npd_expects(tmp_path) -> None:
    installed = install(tmp_path)
    plugin = installed / "health" / "npd-plugin.sh"
    outcomes = []
    for dump in (CLEAN, GPU_X8, tmp_path / "no-such-dump.xml"):
        replay(installed, ROOT / dump)
        outcomes.append(run_plugin(plugin))
    assert outcomes == [(0, "hwspec: the node matches its spec\n"), (1, f"hwspec: {summary_of(installed, ROOT / GPU_X8)}\n"),
                        (2, "hwspec: could not check the node: I100 cannot read: no such file or directory\n")]
    assert outcomes[1][1].startswith("hwspec: D105 gpu3: PCIe link is Gen4 x16 in the spec, but Gen4 x8 in the machine")


def test_without_hwspec_input_the_scripts_check_this_machine_with_live_and_the_sysfs_root(tmp_path) -> None:
    """The command line the scripts run, seen by a stand-in hwspec that prints its arguments."""
    installed = install(tmp_path)
    echo, seen = tmp_path / "echo-args", tmp_path / "args"
    echo.write_text(f"#!/bin/sh\nfor arg; do printf '[%s]' \"$arg\"; done >{seen}\nexit 2\n")
    echo.chmod(0o755)
    settings = {"HWSPEC": str(echo), "HWSPEC_SYSFS_ROOT": "/captures/n 1", "SLURMD_NODENAME": "-n1", "PATH": os.environ["PATH"]}
    (installed / "health" / "site.env").write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in settings.items()))
    status = subprocess.run([str(installed / "health" / "slurm-healthcheck.sh")], capture_output=True, timeout=60, env={})
    assert status.returncode == 2
    assert seen.read_text() == f"[diff][{installed}/platform.yaml][--live][--sysfs-root=/captures/n 1][--format=json][--node=-n1]"


@pytest.mark.slow  # runs the NPD plugin, which runs hwspec
def test_hostile_input_paths_reach_hwspec_as_one_argument_and_run_nothing(tmp_path) -> None:
    installed = install(tmp_path)
    hostile = "-$(touch PWNED); `touch PWNED` *'\".xml"
    shutil.copy(GPU_X8, tmp_path / hostile)
    replay(installed, hostile)
    status, out = run_plugin(installed / "health" / "npd-plugin.sh", cwd=tmp_path)
    assert (status, out.split(" (seen at ")[0]) == (1, "hwspec: D105 gpu3: PCIe link is Gen4 x16 in the spec, but Gen4 x8 "
                                                        "in the machine (narrower)")
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.slow  # a hwspec process
def test_a_platform_named_with_shell_text_is_a_located_e110_and_nothing_is_generated(tmp_path) -> None:
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(ZIONEX.read_text().replace("\nname: zionex\n", '\nname: "zx$(touch PWNED);`id`"\n', 1))
    result = subprocess.run([*HWSPEC, "generate", str(hostile), "-o", str(tmp_path / "out"), "--no-svg"], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    line = next(n for n, text in enumerate(hostile.read_text().splitlines(), 1) if text.startswith("name:"))
    assert result.returncode == 2
    assert result.stderr == (f"hostile.yaml:{line}:7: error[E110]: name: 'zx$(touch PWNED);`id`' is not an id (lower-case "
                             "letters, digits, '-' and '_', starting with a letter), e.g. 'gpu0'\n"
                             "hwspec: nothing written: fix the errors above first\n")
    assert not (tmp_path / "out").exists() and not (tmp_path / "PWNED").exists()


@pytest.mark.slow  # runs the installed checks
def test_a_hostile_platform_path_reaches_the_scripts_in_comments_only_and_runs_nothing(tmp_path) -> None:
    where = tmp_path / "we ird\n$(touch PWNED);`touch PWNED`'\""
    where.mkdir()
    shutil.copy(ZIONEX, where / "zionex.yaml")
    installed = install(tmp_path, where / "zionex.yaml")
    for script in ("slurm-healthcheck.sh", "npd-plugin.sh"):
        text = (installed / "health" / script).read_text()
        assert all(line.startswith("#") for line in text.splitlines() if "PWNED" in line), script
    replay(installed, ROOT / CLEAN)
    assert run_plugin(installed / "health" / "npd-plugin.sh", cwd=tmp_path) == (0, "hwspec: the node matches its spec\n")
    assert not (tmp_path / "PWNED").exists()


def test_the_npd_config_meets_npds_schema_and_its_validate_rules(installed_zionex) -> None:
    config = json.loads((installed_zionex / "health" / "npd-config.json").read_text())
    jsonschema.validate(config, json.loads(NPD_SCHEMA.read_text()))
    # CustomPluginConfig.Validate(): plugin "custom", rule timeouts within the global one, and
    # each permanent rule's condition among the default conditions
    assert config["plugin"] == "custom"
    assert all(rule["timeout"] == config["pluginConfig"]["timeout"] for rule in config["rules"])
    assert {r["condition"] for r in config["rules"] if r["type"] == "permanent"} <= {c["type"] for c in config["conditions"]}
    # the rule's path is inside NPD's container, where the DaemonSet mounts the host's root at /host
    assert config["rules"][0]["path"] == f"/host{installed_zionex}/health/npd-plugin.sh"


@pytest.mark.parametrize(("mistake", "where"), [
    ({"plugin": "kmsg"}, "plugin"), ({"pluginConfig": {"invoke_intervall": "300s"}}, "pluginConfig"),
    ({"rules": [{"type": "permanent", "reason": "R", "path": "/p"}]}, "rules/0"),
    ({"pluginConfig": {"timeout": "60 seconds"}}, "pluginConfig/timeout")])
def test_the_npd_schema_refuses_what_npd_would_refuse_or_ignore(installed_zionex, mistake, where) -> None:
    config = {**json.loads((installed_zionex / "health" / "npd-config.json").read_text()), **mistake}
    with pytest.raises(jsonschema.ValidationError) as error:
        jsonschema.validate(config, json.loads(NPD_SCHEMA.read_text()))
    assert "/".join(map(str, error.value.absolute_path)) == where


def test_the_npd_daemonset_runs_npd_with_the_hwspec_config_on_the_platforms_nodes(installed_zionex) -> None:
    documents = list(yaml.safe_load_all((installed_zionex / "health" / "npd-daemonset.yaml").read_text()))
    assert [(d["apiVersion"], d["kind"]) for d in documents] == [
        ("v1", "ServiceAccount"), ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ("apps/v1", "DaemonSet")]
    pod = documents[2]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["nodeSelector"] == {"topology.hwspec.io/platform": "zionex"}
    assert f"--config.custom-plugin-monitor=/host{installed_zionex}/health/npd-config.json" in container["command"]
    assert {"name": "HWSPEC_HOST_ROOT", "value": "/host"} in container["env"]
    assert pod["volumes"] == [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}]
    assert documents[2]["spec"]["selector"]["matchLabels"] == documents[2]["spec"]["template"]["metadata"]["labels"]


# ---------------------------------------------------------------- acting only on what the report says

NODE_SHOWN = """NodeName=n1 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.00
   State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=p
{reason}"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """Real node reports (`hwspec diff --format json`) and what a crash or a cut leaves."""
    out = tmp_path_factory.mktemp("reports")
    made = {}
    for name, dump in (("clean", CLEAN), ("drift", GPU_X8), ("unchecked", Path("no-such-dump.xml"))):
        result = run_hwspec("diff", str(ZIONEX), str(dump), "--format", "json", "--node", "n1", cwd=ROOT)
        made[name] = out / f"{name}.json"
        made[name].write_text(result.stdout)
    made["cut"] = out / "cut.json"  # a drift report whose writer died half-way
    made["cut"].write_text(made["drift"].read_text()[:200])
    made["none"] = out / "none.json"
    made["none"].write_text("")
    return made


def stub_node(tmp: Path, installed: Path, report: Path, status: int, state: str, reason: str = "") -> Path:
    """site.env for a stand-in hwspec that prints `report` and exits `status` (a traceback on
    stderr), and a stand-in scontrol that shows the node in `state` with `reason` and records
    its updates. Returns the file the updates are recorded in."""
    bin_dir, calls = tmp / "bin", tmp / "scontrol-calls"
    bin_dir.mkdir(exist_ok=True)
    shown = tmp / "shown"
    reason_line = f"   Reason={reason} [root@2026-11-28T03:00:00]" if reason else ""
    shown.write_text(NODE_SHOWN.format(state=state, reason=reason_line))
    (bin_dir / "scontrol").write_text(f"""#!/bin/sh
case $1 in
show) cat {shlex.quote(str(shown))} ;;
*) printf '%s\\n' "$*" >>{shlex.quote(str(calls))} ;;
esac
""")
    (bin_dir / "hwspec").write_text(f"""#!/bin/sh
cat {shlex.quote(str(report))}
echo 'Traceback (most recent call last):' >&2
exit {status}
""")
    for program in ("scontrol", "hwspec"):
        (bin_dir / program).chmod(0o755)
    settings = {"HWSPEC": str(bin_dir / "hwspec"), "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURMD_NODENAME": "n1"}
    (installed / "health" / "site.env").write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in settings.items()))
    calls.unlink(missing_ok=True)
    return calls


@pytest.fixture(scope="module")
def installed_zionex(tmp_path_factory) -> Path:
    return install(tmp_path_factory.mktemp("installed"))


DRIFT_REASON = f"hwspec: {GPU_X8_SUMMARY}"
CASES = {
    # (report, hwspec's exit status, State, Reason) -> (the scontrol updates, the script's exit status)
    "a crash of a clean node changes nothing": (("none", 1, "IDLE", ""), ([], 2)),
    "a crash of a node hwspec drained changes nothing": (("none", 1, "IDLE+DRAIN", DRIFT_REASON), ([], 2)),
    "a cut drift report changes nothing": (("cut", 1, "IDLE", ""), ([], 2)),
    "exit 1 with a clean report changes nothing": (("clean", 1, "IDLE", ""), ([], 2)),
    "exit 0 with a drift report changes nothing": (("drift", 0, "IDLE+DRAIN", DRIFT_REASON), ([], 2)),
    "unchecked changes nothing": (("unchecked", 2, "IDLE+DRAIN", DRIFT_REASON), ([], 2)),
    "drift drains the node": (("drift", 1, "IDLE", ""), ([f"update NodeName=n1 State=DRAIN Reason={DRIFT_REASON}"], 1)),
    "drift keeps an admin's reason": (("drift", 1, "IDLE+DRAIN", "admin: bad DIMM"), ([], 1)),
    "clean resumes its own drain": (("clean", 0, "IDLE+DRAIN", DRIFT_REASON), (["update NodeName=n1 State=RESUME"], 0)),
    "clean resumes its own drain of a busy node": (("clean", 0, "MIXED+DRAIN", DRIFT_REASON), (["update NodeName=n1 State=RESUME"], 0)),
    "clean leaves a node Slurm set down": (("clean", 0, "DOWN+DRAIN", DRIFT_REASON), ([], 0)),
    "clean leaves a node down and not responding": (("clean", 0, "DOWN+DRAIN+NOT_RESPONDING", DRIFT_REASON), ([], 0)),
    "clean leaves a failed node": (("clean", 0, "IDLE+FAIL", DRIFT_REASON), ([], 0)),
    "clean leaves a failing node": (("clean", 0, "MIXED+DRAIN+FAIL", DRIFT_REASON), ([], 0)),
    "clean leaves an admin's drain": (("clean", 0, "IDLE+DRAIN", "admin: bad DIMM"), ([], 0)),
    "clean leaves an undrained node": (("clean", 0, "IDLE", DRIFT_REASON), ([], 0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_slurm_health_check_acts_only_on_what_the_report_says(case, reports, installed_zionex, tmp_path) -> None:
    (report, status, state, reason), (updates, exit_status) = CASES[case]
    calls = stub_node(tmp_path, installed_zionex, reports[report], status, state, reason)
    result = subprocess.run([str(installed_zionex / "health" / "slurm-healthcheck.sh")], capture_output=True, text=True,
                            timeout=60, env={})
    assert (calls.read_text().splitlines() if calls.exists() else [], result.returncode) == (updates, exit_status), result.stderr


@pytest.mark.slow  # runs the installed check, which runs hwspec
def test_a_pcie_link_that_is_down_drains_the_node(installed_zionex, tmp_path) -> None:
    """The real hwspec on a captured tree whose GPU 0 link never trained (tests/data/sysfs)."""
    calls = stub_node(tmp_path, installed_zionex, Path("/dev/null"), 0, "IDLE")
    site = installed_zionex / "health" / "site.env"
    site.write_text(site.read_text() + "".join(f"{k}={shlex.quote(v)}\n" for k, v in {
        "HWSPEC": shlex.join(HWSPEC), "PYTHONPATH": str(ROOT / "src"), "HWSPEC_SPEC": str(ROOT / "tests/data/sysfs/good-node.yaml"),
        "HWSPEC_SYSFS_ROOT": str(ROOT / "tests/data/sysfs/gpu-link-down")}.items()))
    result = subprocess.run([str(installed_zionex / "health" / "slurm-healthcheck.sh")], capture_output=True, text=True,
                            timeout=120, env={}, cwd=ROOT)
    assert result.returncode == 1, result.stderr
    assert calls.read_text().startswith("update NodeName=n1 State=DRAIN Reason=hwspec: D105 gpu0: PCIe link is Gen5 x16 in the "
                                        "spec, but down in the machine (speed Unknown, width 63)")


def test_a_crash_is_logged_as_could_not_check_naming_the_missing_report(reports, installed_zionex, tmp_path) -> None:
    stub_node(tmp_path, installed_zionex, reports["none"], 1, "IDLE")
    result = subprocess.run([str(installed_zionex / "health" / "slurm-healthcheck.sh")], capture_output=True, text=True,
                            timeout=60, env={})
    assert result.stderr == (f"hwspec-healthcheck: could not check n1 against {installed_zionex}/platform.yaml (nothing changed): "
                             "hwspec exited 1 without a node report: Traceback (most recent call last):\n")


def run_with(installed: Path, hwspec: str, npd: bool = True, **settings: str) -> tuple[str, str]:
    """The Slurm check's log and (with `npd`) the NPD plugin's line, with HWSPEC=`hwspec` and
    `settings`; each must have exited 2."""
    values = {"HWSPEC": hwspec, "SLURMD_NODENAME": "n1", "PATH": os.environ["PATH"], **settings}
    (installed / "health" / "site.env").write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items()))
    slurm = subprocess.run([str(installed / "health" / "slurm-healthcheck.sh")], capture_output=True, text=True, timeout=60, env={})
    assert slurm.returncode == 2
    if not npd:
        return slurm.stderr, ""
    plugin = subprocess.run([str(installed / "health" / "npd-plugin.sh")], capture_output=True, text=True, timeout=60,
                            env={"PATH": os.environ["PATH"], "NODE_NAME": "n1"})
    assert plugin.returncode == 2
    return slurm.stderr, plugin.stdout


def test_every_could_not_check_line_names_its_cause(installed_zionex, tmp_path) -> None:
    spec = f"{installed_zionex}/platform.yaml"
    missing = str(tmp_path / "no-hwspec")
    slow = tmp_path / "slow-hwspec"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    stray = tmp_path / "stray"
    stray.write_text("#!/bin/sh\necho 'usage: stray [-x]' >&2\nexit 64\n")
    stray.chmod(0o755)
    slurm_log, npd_line = run_with(installed_zionex, missing)
    assert slurm_log.startswith(f"hwspec-healthcheck: could not check n1 against {spec} (nothing changed): hwspec exited 127 "
                                f"without a node report: ")
    assert missing in slurm_log and "No such file or directory" in slurm_log  # timeout(1) says it could not run it
    assert npd_line.endswith(f"{missing}: not found\n")  # the shell says it
    assert npd_line.startswith("hwspec: could not check the node: hwspec exited 127 without a node report: ")
    slurm_log, _ = run_with(installed_zionex, str(slow), npd=False, HWSPEC_TIMEOUT="1")  # NPD times its plugin out itself
    assert slurm_log == f"hwspec-healthcheck: could not check n1 against {spec} (nothing changed): hwspec did not finish within 1 s (HWSPEC_TIMEOUT)\n"
    assert run_with(installed_zionex, str(stray)) == (  # its last line on stderr, kept to safe characters
        f"hwspec-healthcheck: could not check n1 against {spec} (nothing changed): hwspec exited 64 without a node report: usage: stray -x\n",
        "hwspec: could not check the node: hwspec exited 64 without a node report: usage: stray -x\n")


@pytest.mark.parametrize(("report", "status", "expected"), [
    ("none", 1, (2, "hwspec: could not check the node: hwspec exited 1 without a node report: Traceback (most recent call last):\n")),
    ("cut", 1, (2, "hwspec: could not check the node: hwspec exited 1 without a node report: Traceback (most recent call last):\n")),
    ("clean", 1, (2, "hwspec: could not check the node: hwspec exited 1, but its node report says clean (exit code 0)\n")),
    ("unchecked", 2, (2, "hwspec: could not check the node: I100 cannot read: no such file or directory\n")),
    ("drift", 1, (1, f"hwspec: {GPU_X8_SUMMARY}\n")),
    ("clean", 0, (0, "hwspec: the node matches its spec\n")),
])
def test_the_npd_plugin_reports_a_problem_only_on_a_drift_report(report, status, expected, reports, installed_zionex,
                                                                tmp_path) -> None:
    stub_node(tmp_path, installed_zionex, reports[report], status, "IDLE")
    result = subprocess.run([str(installed_zionex / "health" / "npd-plugin.sh")], capture_output=True, text=True, timeout=60,
                            env={"PATH": os.environ["PATH"], "NODE_NAME": "n1"})
    assert (result.returncode, result.stdout) == expected


# ---------------------------------------------------------------- a real slurmd runs the Slurm health check


def slurm_conf(tmp: Path, health_check: Path) -> Path:
    """A one-node cluster on loopback (node1), in tmp/etc/slurm.conf, whose slurmd runs
    `health_check` every 2 s with docs/health.md's settings. Returns tmp/etc."""
    conf = tmp / "etc"
    for sub in (conf, tmp / "state", tmp / "spool"):
        sub.mkdir()
    settings = docs_block("HealthCheckProgram=").replace("/etc/hwspec/zionex/", f"{health_check.parent.parent}/")
    health = settings.replace("HealthCheckInterval=300", "HealthCheckInterval=2").strip().splitlines()
    (conf / "slurm.conf").write_text(loopback_slurm_conf(
        tmp, "hwspechealth", *health, "NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN",
        "PartitionName=p Nodes=node1 Default=YES State=UP"))
    return conf


def node_state(scontrol) -> tuple[str, str]:
    """node1's (State, Reason) as scontrol shows them (the reason without its `[user@time]`)."""
    shown = scontrol("show", "node", "node1")
    state = next((word.split("=", 1)[1] for word in shown.split() if word.startswith("State=")), "")
    reason = next((line.strip()[len("Reason="):] for line in shown.splitlines() if line.strip().startswith("Reason=")), "")
    return state, reason.rsplit(" [", 1)[0]


def wait_for(predicate, what: str, seconds: float = 180):
    deadline = time.monotonic() + seconds
    while not (value := predicate()):
        assert time.monotonic() < deadline, what
        time.sleep(0.3)
    return value


def checks_ran(report: Path, status: str, times: int = 2) -> None:
    """Wait until the health check has run `times` more times, each reporting `status` (its
    HWSPEC_REPORT copy; "none": an empty one); once the second has started, the first one's
    scontrol calls are done."""
    def reported() -> bool:
        try:
            text = report.read_text()
            return (text == "") if status == "none" else json.loads(text)["status"] == status
        except (OSError, ValueError):
            return False

    for _ in range(times):
        report.unlink(missing_ok=True)
        wait_for(reported, f"the health check did not report {status}")


@pytest.mark.consumer
def test_slurmd_runs_the_health_check_which_drains_on_drift_and_resumes_its_own_drain_only(slurm_programs, tmp_path) -> None:
    installed = install(tmp_path / "install")
    health_check = installed / "health" / "slurm-healthcheck.sh"
    conf = slurm_conf(tmp_path, health_check)
    report = tmp_path / "report.json"
    missing = tmp_path / "no-such-dump.xml"

    def check(dump: Path) -> None:  # slurmd runs the check with SLURMD_NODENAME only: the rest is in site.env
        replay(installed, dump, SLURM_CONF=str(conf / "slurm.conf"), HWSPEC_REPORT=str(report))

    check(ROOT / GPU_X8)
    with slurmctld(slurm_programs, conf) as scontrol:
        env = {**os.environ, "SLURM_CONF": str(conf / "slurm.conf")}
        slurmd = subprocess.Popen([slurm_programs["slurmd"], "-D", "-N", "node1", "-f", str(conf / "slurm.conf")],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            drift = f"hwspec: {summary_of(installed, ROOT / GPU_X8)}"
            # the drain's reason can show before slurmd has registered the node (UNKNOWN+DRAIN): wait for both
            wait_for(lambda: node_state(scontrol) == ("IDLE+DRAIN", drift), f"node1 was not drained: {node_state(scontrol)}")
            check(missing)  # could not check: a drained node stays drained
            checks_ran(report, "unchecked")
            assert node_state(scontrol) == ("IDLE+DRAIN", drift)

            check(ROOT / CLEAN)
            wait_for(lambda: node_state(scontrol) == ("IDLE", ""), "node1 was not resumed")
            check(missing)  # could not check: a clean node is not drained
            checks_ran(report, "unchecked")
            assert node_state(scontrol) == ("IDLE", "")

            scontrol("update", "NodeName=node1", "State=DRAIN", "Reason=admin: bad DIMM")
            check(ROOT / CLEAN)  # an admin's drain is not resumed ...
            checks_ran(report, "clean")
            assert node_state(scontrol) == ("IDLE+DRAIN", "admin: bad DIMM")
            check(ROOT / GPU_X8)  # ... nor its reason overwritten
            checks_ran(report, "drift")
            assert node_state(scontrol) == ("IDLE+DRAIN", "admin: bad DIMM")

            crashing = tmp_path / "crashing-hwspec"  # exits 1 with a traceback and no report: no drift
            crashing.write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\nexit 1\n")
            crashing.chmod(0o755)
            replay(installed, ROOT / GPU_X8, SLURM_CONF=str(conf / "slurm.conf"), HWSPEC_REPORT=str(report), HWSPEC=str(crashing))
            checks_ran(report, "none")  # no check of the drifted dump is still running: it would drain the resumed node
            scontrol("update", "NodeName=node1", "State=RESUME")
            checks_ran(report, "none")
            assert node_state(scontrol) == ("IDLE", "")

            check(ROOT / GPU_X8)
            wait_for(lambda: node_state(scontrol) == ("IDLE+DRAIN", drift), "node1 was not drained again")
            # failed (as Slurm keeps the reason): not resumed, though the reason is hwspec's. (A node set
            # DOWN comes back by itself here, ReturnToService=2: the stand-in scontrol tests show DOWN.)
            scontrol("update", "NodeName=node1", "State=FAIL", f"Reason={drift}")
            wait_for(lambda: "FAIL" in node_state(scontrol)[0], "node1 did not fail")
            failed = node_state(scontrol)
            check(ROOT / CLEAN)
            checks_ran(report, "clean")
            assert node_state(scontrol) == failed == (failed[0], drift)
        finally:
            slurmd.terminate()
            log = slurmd.communicate(timeout=30)[0]
    assert "fatal" not in log, log


# ---------------------------------------------------------------- docs/health.md's examples, run


def test_docs_install_block_installs_the_generated_files_and_the_spec(tmp_path) -> None:
    block = docs_block("mkdir -p /etc/hwspec\n").replace("/etc/hwspec", f"{tmp_path}/etc-hwspec")
    subprocess.run(["sh", "-ec", block], cwd=ROOT, check=True, timeout=60)
    installed = tmp_path / "etc-hwspec" / "zionex"
    assert (installed / "platform.yaml").read_text() == ZIONEX.read_text()
    for script in ("slurm-healthcheck.sh", "npd-plugin.sh"):
        assert os.access(installed / "health" / script, os.X_OK), script


SITE_PARTS = """hwspec: 1
kind: parts
nics:
  site-hdr-hca:
    source: "the site's procurement sheet: ConnectX-6 VPI HDR HCAs (MCX653105A-HDAT)"
    vendor: nvidia-mellanox
    model_name: ConnectX-6 VPI 200Gb/s
    speed: 200 Gb/s
    transports: [infiniband, rocev2, tcp]
    rdma: true
    gpudirect: true
    pci_vendor: "0x15b3"
    pci_device: "0x101b"
    pcie: {gen: 4, width: 16}
"""
"""A site's part: zionex's backend HCAs under a name only the site's parts/ directory defines."""


def site_checkout(tmp: Path, etc: Path) -> Path:
    """A checkout's layout holding zionex with its backend NICs a site part (platforms/parts/),
    generated into generated/ for install root `etc`, as docs/health.md's install block expects."""
    repo = tmp / "checkout"
    (repo / "platforms" / "parts").mkdir(parents=True)
    (repo / "platforms" / "parts" / "site.yaml").write_text(SITE_PARTS)
    (repo / "platforms" / "zionex.yaml").write_text(ZIONEX.read_text().replace("part: connectx-6-200g", "part: site-hdr-hca"))
    result = subprocess.run([*HWSPEC, "generate", "platforms/zionex.yaml", "-o", "generated", "--no-svg", "--install-root", str(etc)],
                            capture_output=True, text=True, timeout=300, cwd=repo, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert result.returncode == 0, result.stderr
    return repo


def both_checks(installed: Path, tmp: Path) -> list[tuple[int, str, int, str]]:
    """The NPD plugin's (exit status, line) and the Slurm check's (exit status, log) on zionex's
    clean and x8 dumps, with a stand-in scontrol."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "scontrol").write_text("#!/bin/sh\n[ \"$1\" = show ] && echo '   State=IDLE'\nexit 0\n")
    (bin_dir / "scontrol").chmod(0o755)
    outcomes = []
    for dump in (CLEAN, GPU_X8):
        replay(installed, ROOT / dump, PATH=f"{bin_dir}:{os.environ['PATH']}", SLURMD_NODENAME="n1")
        npd = run_plugin(installed / "health" / "npd-plugin.sh")
        slurm = subprocess.run([str(installed / "health" / "slurm-healthcheck.sh")], capture_output=True, text=True,
                               timeout=120, env={})
        outcomes.append((*npd, slurm.returncode, slurm.stderr))
    return outcomes


@pytest.mark.slow  # installs a site checkout and runs both health checks, each running hwspec
def test_docs_install_block_installs_a_platform_with_site_parts_that_both_checks_validate(tmp_path) -> None:
    etc = tmp_path / "etc-hwspec"
    repo = site_checkout(tmp_path, etc)
    block = docs_block("mkdir -p /etc/hwspec\n").replace("/etc/hwspec", str(etc))
    subprocess.run(["sh", "-ec", block], cwd=repo, check=True, timeout=60)
    installed = etc / "zionex"
    assert "  site-hdr-hca:\n" in (installed / "parts" / "platform-parts.yaml").read_text()
    assert not (installed / "platform-parts").exists() and not (etc / "parts").exists()
    (clean, x8) = both_checks(installed, tmp_path)
    assert clean == (0, "hwspec: the node matches its spec\n", 0, "")
    assert x8[:3] == (1, f"hwspec: {GPU_X8_SUMMARY}\n", 1)
    assert "n1 differs from its spec: draining it: hwspec: D105 gpu3" in x8[3]


@pytest.mark.slow  # installs a site checkout and runs both health checks, each running hwspec
def test_an_install_without_the_bundled_parts_says_which_part_it_lacks(tmp_path) -> None:
    etc = tmp_path / "etc-hwspec"
    repo = site_checkout(tmp_path, etc)
    subprocess.run(["sh", "-ec", docs_block("mkdir -p /etc/hwspec\n").replace("/etc/hwspec", str(etc))], cwd=repo, check=True)
    installed = etc / "zionex"
    shutil.rmtree(installed / "parts")  # as installed before the parts were bundled
    npd_status, npd_line, slurm_status, slurm_log = both_checks(installed, tmp_path)[0]
    lacks = "E203 nics_0_: unknown NIC part _site-hdr-hca_ (+7 more)"  # the report's summary: one line of safe characters
    assert (npd_status, npd_line) == (2, f"hwspec: could not check the node: {lacks}\n")
    assert (slurm_status, slurm_log) == (2, f"hwspec-healthcheck: could not check n1 against {installed}/platform.yaml "
                                            f"(nothing changed): {lacks}\n")


@pytest.mark.slow  # runs the installed check, which runs hwspec
def test_docs_replay_block_runs_the_check_on_a_capture(tmp_path) -> None:
    installed = install(tmp_path)
    block = docs_block("HWSPEC_INPUT=").replace("/etc/hwspec/", f"{tmp_path}/")
    result = subprocess.run(["sh", "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=120, env=os.environ)
    assert result.returncode == 1
    assert result.stdout == f"hwspec: {summary_of(installed, GPU_X8)}\n"


@pytest.mark.slow  # runs the installed check, which runs hwspec
def test_docs_nhc_line_runs_the_check_nhc_expects_exit_0_from(tmp_path) -> None:
    installed = install(tmp_path)
    line = docs_block("* || check_cmd_status").strip()
    prefix = "* || check_cmd_status -t 60 -r 0 /etc/hwspec/zionex/"
    assert line.startswith(prefix)
    command = [f"{installed}/{line[len(prefix):]}"]
    outcomes = []
    for dump in (CLEAN, GPU_X8):
        replay(installed, ROOT / dump)
        outcomes.append(subprocess.run(command, capture_output=True, timeout=120, env={}).returncode)
    assert outcomes == [0, 1]


def test_docs_kubectl_block_labels_nodes_as_the_daemonset_selects_and_reads_its_condition(tmp_path) -> None:
    label, apply, get = docs_block("kubectl label").splitlines()
    documents = list(yaml.safe_load_all(Path("generated/zionex/health/npd-daemonset.yaml").read_text()))
    selector = documents[2]["spec"]["template"]["spec"]["nodeSelector"]
    assert label.split()[4:] == [f"{key}={value}" for key, value in selector.items()]
    assert apply == "kubectl apply -f /etc/hwspec/zionex/health/npd-daemonset.yaml"
    config = json.loads(Path("generated/zionex/health/npd-config.json").read_text())
    assert f'@.type=="{config["conditions"][0]["type"]}"' in get


@pytest.mark.consumer
def test_docs_textfile_block_leaves_a_whole_file_prometheus_client_parses(tmp_path) -> None:
    parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client is in the consumers extra")
    installed = install(tmp_path)
    block = (docs_block("hwspec diff /etc/hwspec/zionex/platform.yaml --live --format prometheus")
             .replace("/etc/hwspec/", f"{tmp_path}/").replace("--live", str(GPU_X8))
             .replace("/var/lib/node_exporter/textfile", str(tmp_path)))
    subprocess.run(["sh", "-c", block], cwd=ROOT, timeout=120, env=os.environ)
    families = {f.name: f for f in parser.text_string_to_metric_families((tmp_path / "hwspec.prom").read_text())}
    assert [s.value for s in families["hwspec_node_drift"].samples] == [1.0]
    assert not (tmp_path / "hwspec.prom.tmp").exists() and (installed / "platform.yaml").exists()


@pytest.mark.parametrize("form", ["prometheus", "json"])
def test_docs_shows_the_reports_as_hwspec_prints_them(capsys, form) -> None:
    command = f"hwspec diff {ZIONEX} {GPU_X8} --node gpu-node-7 --format {form}"
    docs = (ROOT / "docs" / "health.md").read_text()
    shown = (docs.split(f"```\n{command}\n", 1)[1] if form == "prometheus" else docs.split("```json\n", 1)[1]).split("```", 1)[0]
    status, out = diff(capsys, *command.split()[2:])
    assert (status, shown) == (1, out)
