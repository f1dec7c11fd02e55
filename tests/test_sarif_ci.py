"""SARIF for GitHub code scanning: the two-step CI pattern (`--exit-zero` writes the report,
a later step uploads it, another fails the job), artifact URIs relative to the repository root
whatever path hwspec was given, and the report as sarif-tools (a real SARIF reader) reads it."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.cli import run_hwspec

ROOT = Path(__file__).resolve().parent.parent
ON_SOCKET = ROOT / "tests" / "fixtures" / "rules" / "backend_nic_on_socket.yaml"   # one HW202 error
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
REPO_URI = {"uri": "tests/fixtures/rules/backend_nic_on_socket.yaml", "uriBaseId": "%SRCROOT%"}
ON_SOCKET_ANNOTATION = (",line=57,col=22,title=HW202 backend-nic-locality::gpu0 (sw0, NUMA 0) is served by nic0 (cpu0, NUMA 0): "
                        "they share no PCIe switch or root port, so their traffic goes through the CPU%0Ahint: move nic0 under sw0\n")


def _validate(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return run_hwspec("validate", *args, cwd=cwd)


def _git_repository(root: Path) -> Path:
    """A fresh git repository at `root` holding platforms/node.yaml (one HW202 error)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    (root / "platforms").mkdir()
    shutil.copy(ON_SOCKET, root / "platforms" / "node.yaml")
    return root


def _locations(sarif_text: str) -> list[dict]:
    log = json.loads(sarif_text)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    return [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in log["runs"][0]["results"]]


def test_exit_zero_writes_the_same_report_and_exits_0() -> None:
    failing = _validate("--format", "sarif", str(ON_SOCKET))
    passing = _validate("--format", "sarif", "--exit-zero", str(ON_SOCKET))
    assert failing.returncode == 1 and passing.returncode == 0
    assert passing.stdout == failing.stdout
    assert passing.stderr == "hwspec: --exit-zero: exit status 0 although the report has errors\n"


def test_exit_zero_covers_unreadable_files_too(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [\n")
    result = _validate("--format", "sarif", "--exit-zero", str(broken))
    assert result.returncode == 0
    assert [r["ruleId"] for r in json.loads(result.stdout)["runs"][0]["results"]] == ["E103"]


@pytest.mark.parametrize("given, cwd", [
    ("tests/fixtures/rules/backend_nic_on_socket.yaml", ROOT),
    (str(ON_SOCKET), ROOT),
    (str(ON_SOCKET), Path("/")),
    ("rules/backend_nic_on_socket.yaml", ROOT / "tests" / "fixtures"),
    ("../fixtures/rules/backend_nic_on_socket.yaml", ROOT / "tests" / "data"),
], ids=["from-root", "absolute", "absolute-from-elsewhere", "from-a-subdirectory", "dot-dot"])
def test_sarif_uris_are_relative_to_the_repository_root_whatever_path_was_given(given: str, cwd: Path) -> None:
    result = _validate("--format", "sarif", "--exit-zero", given, cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert _locations(result.stdout) == [REPO_URI]


@pytest.mark.parametrize("given, subdirectory", [
    ("node.yaml", "platforms"),
    ("../platforms/node.yaml", "docs"),
    ("platforms/node.yaml", "."),
], ids=["in-its-directory", "from-a-sibling", "from-the-root"])
def test_github_annotations_name_the_file_from_the_repository_root_wherever_hwspec_runs(
        tmp_path: Path, given: str, subdirectory: str) -> None:
    repo = _git_repository(tmp_path / "repo")
    (repo / "docs").mkdir()
    result = _validate("--format", "github", given, cwd=repo / subdirectory)
    assert result.returncode == 1, result.stderr
    assert result.stdout == "::error file=platforms/node.yaml" + ON_SOCKET_ANNOTATION


def test_sarif_from_a_subdirectory_is_relative_to_the_repository_root_which_originaluribaseids_names(tmp_path: Path) -> None:
    repo = _git_repository(tmp_path / "repo")
    result = _validate("--format", "sarif", "--exit-zero", "node.yaml", cwd=repo / "platforms")
    assert _locations(result.stdout) == [{"uri": "platforms/node.yaml", "uriBaseId": "%SRCROOT%"}]
    assert json.loads(result.stdout)["runs"][0]["originalUriBaseIds"] == {"%SRCROOT%": {"uri": repo.as_uri() + "/"}}


def test_a_file_of_another_repository_keeps_its_own_path(tmp_path: Path) -> None:
    """One root per report (the working directory's repository): a file from elsewhere cannot be
    named relative to it, so its annotation keeps the path given and its SARIF URI is absolute."""
    here, there = _git_repository(tmp_path / "here"), _git_repository(tmp_path / "there")
    elsewhere = str(there / "platforms" / "node.yaml")
    annotation = _validate("--format", "github", elsewhere, cwd=here / "platforms")
    assert annotation.stdout == f"::error file={elsewhere}" + ON_SOCKET_ANNOTATION
    report = _validate("--format", "sarif", "--exit-zero", elsewhere, cwd=here / "platforms")
    assert _locations(report.stdout) == [{"uri": Path(elsewhere).as_uri()}]
    assert json.loads(report.stdout)["runs"][0]["originalUriBaseIds"] == {"%SRCROOT%": {"uri": here.as_uri() + "/"}}


def test_outside_any_repository_annotations_keep_the_path_given(tmp_path: Path) -> None:
    shutil.copy(ON_SOCKET, tmp_path / "node.yaml")
    result = _validate("--format", "github", "node.yaml", cwd=tmp_path)
    assert result.stdout == "::error file=node.yaml" + ON_SOCKET_ANNOTATION
    assert "originalUriBaseIds" not in json.loads(_validate("--format", "sarif", "node.yaml", cwd=tmp_path).stdout)["runs"][0]


def test_a_file_outside_any_repository_is_a_file_uri(tmp_path: Path) -> None:
    outside = tmp_path / "odd name.yaml"
    shutil.copy(ON_SOCKET, outside)
    result = _validate("--format", "sarif", "--exit-zero", str(outside), cwd=tmp_path.parent)
    assert _locations(result.stdout) == [{"uri": f"{tmp_path.name}/odd%20name.yaml"}]
    result = _validate("--format", "sarif", "--exit-zero", str(outside), cwd=ROOT)
    assert _locations(result.stdout) == [{"uri": outside.as_uri()}]


@pytest.mark.consumer
def test_sarif_tools_reads_the_report(tmp_path: Path) -> None:
    sarif = shutil.which("sarif") or (str(Path(sys.executable).parent / "sarif")
                                      if (Path(sys.executable).parent / "sarif").exists() else None)
    if sarif is None:
        pytest.skip("sarif-tools is not installed (pip install sarif-tools; .ci/run does)")
    report = tmp_path / "hwspec.sarif"
    report.write_text(_validate("--format", "sarif", "--exit-zero", str(ON_SOCKET)).stdout)
    summary = subprocess.run([sarif, "summary", str(report)], capture_output=True, text=True, timeout=120)
    assert summary.returncode == 0, summary.stderr
    assert "error: 1" in summary.stdout and "HW202 gpu0 (sw0, NUMA 0) is served by nic0" in summary.stdout
    subprocess.run([sarif, "csv", str(report), "-o", str(tmp_path / "out.csv")], capture_output=True, check=True, timeout=120)
    with (tmp_path / "out.csv").open(newline="") as table:
        (row,) = csv.DictReader(table)
    assert (row["Tool"], row["Severity"], row["Code"], row["Location"], row["Line"]) == (
        "hwspec", "error", "HW202", "tests/fixtures/rules/backend_nic_on_socket.yaml", "57")


@pytest.mark.consumer
def test_check_jsonschema_accepts_the_report_written_from_a_subdirectory(tmp_path: Path) -> None:
    check_jsonschema = shutil.which("check-jsonschema", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if check_jsonschema is None:
        pytest.skip("check-jsonschema is not installed (pip install -e '.[consumers]')")
    repo = _git_repository(tmp_path / "repo")
    report = tmp_path / "hwspec.sarif"
    report.write_text(_validate("--format", "sarif", "--exit-zero", "node.yaml", cwd=repo / "platforms").stdout)
    checked = subprocess.run([check_jsonschema, "--schemafile", str(ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"), str(report)],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
