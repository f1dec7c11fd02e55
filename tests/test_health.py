"""Health-check outputs of `hwspec diff` and the generated integrations: the node report
(`--format json`, the contract `hwspec fleet-report` reads), the Prometheus text exposition
format as prometheus_client parses it, the Slurm HealthCheckProgram run by a real slurmd that
drains and resumes the node through a real slurmctld, and the Node Problem Detector plugin and
config (checked against a schema derived from NPD's Go types).

`hwspec diff --live` is stood in for by a stub `hwspec` that runs today's `hwspec diff SPEC
INPUT` on a captured dump (tests/data/live), so the scripts see the real report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
import yaml

from hwspec.cli.commands import main
from hwspec.diagnostics import Diagnostic, Severity
from hwspec.diagnostics.report import SUMMARY_LIMIT, prometheus, summary
from hwspec.live.health import device_of
from tests.consumers import ROOT, free_port, is_root, need_program

LIVE = Path("tests/data/live")
ZIONEX = Path("platforms/zionex.yaml")
CLEAN, GPU_X8 = LIVE / "zionex.nccl.xml", LIVE / "zionex-gpu-x8.nccl.xml"
NPD_SCHEMA = ROOT / "tests" / "data" / "npd-custom-plugin-config.schema.json"
GPU_X8_SUMMARY = ("D105 gpu3: PCIe link is Gen4 x16 in the spec, but Gen4 x8 in the machine (narrower) "
                  "(seen at tests/data/live/zionex-gpu-x8.nccl.xml:61)")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


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


def install(tmp: Path) -> Path:
    """zionex generated with its install root at `tmp` and its platform file installed there, a
    stub `hwspec` (diff SPEC --live ... -> today's diff SPEC <tmp/live-input> ...) and a
    health/site.env naming it. Returns the platform's install dir; write the dump to replay into
    tmp/live-input."""
    result = subprocess.run([sys.executable, "-m", "hwspec", "generate", str(ZIONEX), "-o", str(tmp), "--no-svg",
                             "--install-root", str(tmp)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert result.returncode == 0, result.stderr
    installed = tmp / "zionex"
    shutil.copy(ZIONEX, installed / "platform.yaml")
    stub = tmp / "hwspec-stub"
    stub.write_text(f"""#!/bin/sh
[ "$1" = diff ] && [ "$3" = --live ] || exit 2
spec=$2
shift 3
cd {ROOT} && PYTHONPATH={ROOT / "src"} exec {sys.executable} -m hwspec diff "$spec" "$(cat {tmp}/live-input)" "$@"
""")
    stub.chmod(0o755)
    (installed / "health" / "site.env").write_text(f"HWSPEC={stub}\n")
    return installed


def replay(tmp: Path, dump: Path) -> None:
    (tmp / "live-input").write_text(str(dump))


def test_the_npd_plugin_prints_one_line_and_exits_as_npd_expects(tmp_path) -> None:
    plugin = install(tmp_path) / "health" / "npd-plugin.sh"
    env = {"PATH": os.environ["PATH"], "NODE_NAME": "n1"}
    outcomes = []
    for dump in (CLEAN, GPU_X8, tmp_path / "no-such-dump.xml"):
        replay(tmp_path, dump)
        result = subprocess.run([str(plugin)], capture_output=True, text=True, timeout=120, env=env)
        outcomes.append((result.returncode, result.stdout))
    assert outcomes == [(0, "hwspec: the node matches its spec\n"), (1, f"hwspec: {GPU_X8_SUMMARY}\n"),
                        (2, "hwspec: could not check the node (exit status 2)\n")]


def test_the_npd_config_meets_npds_schema_and_its_validate_rules(tmp_path) -> None:
    config = json.loads((install(tmp_path) / "health" / "npd-config.json").read_text())
    jsonschema.validate(config, json.loads(NPD_SCHEMA.read_text()))
    # CustomPluginConfig.Validate(): plugin "custom", rule timeouts within the global one, and
    # each permanent rule's condition among the default conditions
    assert config["plugin"] == "custom"
    assert all(rule["timeout"] == config["pluginConfig"]["timeout"] for rule in config["rules"])
    assert {r["condition"] for r in config["rules"] if r["type"] == "permanent"} <= {c["type"] for c in config["conditions"]}
    # the rule's path is inside NPD's container, where the DaemonSet mounts the host's root at /host
    assert config["rules"][0]["path"] == f"/host{tmp_path}/zionex/health/npd-plugin.sh"


def test_the_npd_daemonset_runs_npd_with_the_hwspec_config_on_the_platforms_nodes(tmp_path) -> None:
    documents = list(yaml.safe_load_all((install(tmp_path) / "health" / "npd-daemonset.yaml").read_text()))
    assert [(d["apiVersion"], d["kind"]) for d in documents] == [
        ("v1", "ServiceAccount"), ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ("apps/v1", "DaemonSet")]
    pod = documents[2]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["nodeSelector"] == {"topology.hwspec.io/platform": "zionex"}
    assert f"--config.custom-plugin-monitor=/host{tmp_path}/zionex/health/npd-config.json" in container["command"]
    assert {"name": "HWSPEC_HOST_ROOT", "value": "/host"} in container["env"]
    assert pod["volumes"] == [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}]
    assert documents[2]["spec"]["selector"]["matchLabels"] == documents[2]["spec"]["template"]["metadata"]["labels"]


# ---------------------------------------------------------------- a real slurmd runs the Slurm health check


@pytest.fixture(scope="module")
def slurm_programs() -> dict[str, str]:
    if not is_root():
        pytest.skip("slurmd and slurmctld need root to run with SlurmUser=root (CI runs as root)")
    return {name: need_program(name, package) for name, package in
            (("slurmd", "slurmd"), ("slurmctld", "slurmctld"), ("scontrol", "slurm-client"))}


def slurm_conf(tmp: Path, health_check: Path) -> Path:
    """A one-node cluster on loopback (node1) whose slurmd runs `health_check` every 2 s."""
    for sub in ("state", "spool"):
        (tmp / sub).mkdir()
    conf = tmp / "slurm.conf"
    conf.write_text(f"""ClusterName=hwspechealth
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
MpiDefault=none
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
ReturnToService=2
HealthCheckProgram={health_check}
HealthCheckInterval=2
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=p Nodes=node1 Default=YES State=UP
""")
    return conf


def start(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def stop(daemon: subprocess.Popen) -> str:
    daemon.terminate()
    try:
        return daemon.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:  # pragma: no cover
        daemon.kill()
        return daemon.communicate()[0]


def node_reason(scontrol, env) -> tuple[str, str]:
    """node1's (State, Reason) as scontrol shows them (the reason without its `[user@time]`)."""
    shown = subprocess.run([scontrol, "show", "node", "node1"], capture_output=True, text=True, env=env, timeout=30).stdout
    state = next((word.split("=", 1)[1] for word in shown.split() if word.startswith("State=")), "")
    reason = next((line.strip()[len("Reason="):] for line in shown.splitlines() if line.strip().startswith("Reason=")), "")
    return state, reason.rsplit(" [", 1)[0]


def wait_for(predicate, what: str, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


@pytest.mark.consumer
def test_slurmd_runs_the_health_check_which_drains_on_drift_and_resumes_its_own_drain_only(slurm_programs, tmp_path) -> None:
    installed = install(tmp_path / "install")
    health_check = installed / "health" / "slurm-healthcheck.sh"
    conf = slurm_conf(tmp_path, health_check)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    # slurmd runs the health check with SLURMD_NODENAME only: the rest comes from site.env
    with (installed / "health" / "site.env").open("a") as site:
        site.write(f"SLURM_CONF={conf}\n")
    scontrol = slurm_programs["scontrol"]
    replay(tmp_path / "install", GPU_X8)
    controller = start([slurm_programs["slurmctld"], "-D", "-i", "-f", str(conf)], env)
    daemons = [controller]
    try:
        wait_for(lambda: subprocess.run([scontrol, "ping"], capture_output=True, env=env, timeout=30).returncode == 0,
                 "slurmctld did not start")
        daemons.append(start([slurm_programs["slurmd"], "-D", "-N", "node1", "-f", str(conf)], env))
        drained = wait_for(lambda: (s := node_reason(scontrol, env))[1] and s, "the health check did not drain node1")
        assert "DRAIN" in drained[0] and drained[1] == f"hwspec: {GPU_X8_SUMMARY}"

        replay(tmp_path / "install", CLEAN)
        wait_for(lambda: node_reason(scontrol, env) == ("IDLE", ""), "node1 was not resumed")

        subprocess.run([scontrol, "update", "NodeName=node1", "State=DRAIN", "Reason=admin: bad DIMM"], env=env, check=True)
        time.sleep(6)  # three health checks on a clean node
        assert node_reason(scontrol, env) == ("IDLE+DRAIN", "admin: bad DIMM")
    finally:
        logs = [stop(daemon) for daemon in reversed(daemons)]
    assert "fatal" not in "".join(logs), logs
