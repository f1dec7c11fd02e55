"""docs/ci.md's examples and the pre-commit hooks, run as CI runs them: the GitHub Actions
workflow checked against GitHub's workflow schema and its `hwspec` steps run in a repository,
the hooks run by pre-commit itself, and the annotation example printed from a subdirectory."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_validate_cli import SITE_PART

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "docs" / "ci.md").read_text()
HOOKS = ROOT / ".pre-commit-hooks.yaml"
RULE_FIXTURES = ROOT / "tests" / "fixtures" / "rules"
CLEAN = RULE_FIXTURES / "base_2gpu.yaml"
FAULTY = RULE_FIXTURES / "backend_nic_on_socket.yaml"   # one HW202 error, at line 57
SITE_PARTS = SITE_PART
"""A site's parts file, as docs/spec.md's `parts/` directory beside the platforms holds it."""
BIN = Path(sys.executable).parent


def block(language: str, starts: str) -> str:
    """The one ```{language} block of docs/ci.md that starts with `starts`."""
    (found,) = [b for b in re.findall(rf"```{language}\n(.*?)```", DOCS, re.DOTALL) if b.startswith(starts)]
    return found


def test_every_example_block_has_its_test() -> None:
    tested = {"yaml": ("name: hwspec\n", "repos:\n"), "sh": ("cd platforms && ",), "text": ("::error file=platforms/node.yaml",)}
    for language, fence in re.findall(r"```(\w*)\n(.*?)```", DOCS, re.DOTALL):
        assert fence.startswith(tested.get(language, ("(a fence with no language)",))), fence


def _env() -> dict[str, str]:
    """This checkout's hwspec, as the `hwspec` command and as the package."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def _repository(root: Path, platform: Path) -> Path:
    """A git repository at `root` holding platforms/node.yaml (a copy of `platform`), a site
    parts file in platforms/parts/ and, when it has no errors, the generated/ that hwspec
    generates from it."""
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    (root / "platforms").mkdir()
    shutil.copy(platform, root / "platforms" / "node.yaml")
    (root / "platforms" / "parts").mkdir()
    (root / "platforms" / "parts" / "site.yaml").write_text(SITE_PARTS)
    if platform != FAULTY:
        generated = subprocess.run([sys.executable, "-m", "hwspec", "generate", "--no-svg"], cwd=root, env=_env(),
                                   capture_output=True, text=True, timeout=300)
        assert generated.returncode == 0, generated.stderr
    return root


# ---------------------------------------------------------------- the GitHub Actions workflow


def _workflow() -> dict:
    return yaml.safe_load(block("yaml", "name: hwspec\n"))


def _steps() -> list[dict]:
    (job,) = _workflow()["jobs"].values()
    return job["steps"]


def test_the_workflow_grants_the_sarif_upload_its_permissions_and_nothing_more() -> None:
    (job,) = _workflow()["jobs"].values()
    assert _workflow()["permissions"] == {"contents": "read"}
    assert job["permissions"] == {"contents": "read", "security-events": "write"}


def test_the_workflow_writes_the_report_without_failing_then_uploads_then_fails() -> None:
    names = [step.get("uses", step.get("run", "")).split("@")[0] for step in _steps()]
    write = names.index("hwspec validate --format sarif --exit-zero > hwspec.sarif")
    upload = names.index("github/codeql-action/upload-sarif")
    fail = names.index("hwspec validate --format github")
    assert write < upload < fail
    assert _steps()[upload]["with"]["sarif_file"] == "hwspec.sarif"


def _hwspec_steps() -> list[str]:
    return [step["run"] for step in _steps() if step.get("run", "").startswith("hwspec ")]


def _run_steps(repo: Path) -> list[subprocess.CompletedProcess]:
    """The workflow's hwspec steps, each as GitHub runs a `run:` step (bash -e, pipefail), from
    the repository root."""
    return [subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command], cwd=repo, env=_env(),
                           capture_output=True, text=True, timeout=300) for command in _hwspec_steps()]


@pytest.mark.slow  # runs the workflow's steps in a shell, each running hwspec
def test_the_workflows_hwspec_steps_pass_on_a_clean_repository(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo", CLEAN)
    results = _run_steps(repo)
    assert [r.returncode for r in results] == [0, 0, 0], [r.stdout + r.stderr for r in results]
    assert json.loads((repo / "hwspec.sarif").read_text())["runs"][0]["results"] == []


@pytest.mark.slow  # runs the workflow's steps in a shell, each running hwspec
def test_the_workflows_hwspec_steps_upload_then_fail_on_a_faulty_platform(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo", FAULTY)
    write, annotate, _ = _run_steps(repo)
    assert write.returncode == 0, write.stderr
    (result,) = json.loads((repo / "hwspec.sarif").read_text())["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "platforms/node.yaml", "uriBaseId": "%SRCROOT%"}
    assert annotate.returncode == 1 and annotate.stdout.startswith("::error file=platforms/node.yaml,line=57,col=22,")


@pytest.mark.consumer
def test_the_workflow_is_valid_against_githubs_workflow_schema(tmp_path: Path) -> None:
    check_jsonschema = shutil.which("check-jsonschema", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if check_jsonschema is None:
        pytest.skip("check-jsonschema is not installed (pip install -e '.[consumers]')")
    workflow = tmp_path / "hwspec.yml"
    workflow.write_text(block("yaml", "name: hwspec\n"))
    checked = subprocess.run([check_jsonschema, "--builtin-schema", "vendor.github-workflows", str(workflow)],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    workflow.write_text(block("yaml", "name: hwspec\n").replace("security-events: write", "security-events: writable"))
    refused = subprocess.run([check_jsonschema, "--builtin-schema", "vendor.github-workflows", str(workflow)],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1, "the schema check cannot fail: it proves nothing"


# ---------------------------------------------------------------- the annotation example


@pytest.mark.slow  # runs the page's command in a shell, running hwspec
def test_the_annotation_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo", FAULTY)
    shown = subprocess.run(["bash", "-c", block("sh", "cd platforms && ").strip()], cwd=repo, env=_env(),
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 1 and shown.stdout == block("text", "::error file=platforms/node.yaml")


# ---------------------------------------------------------------- pre-commit


def _manifest() -> dict[str, dict]:
    return {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text())}


def test_the_hooks_are_the_two_the_page_configures() -> None:
    configured = [hook["id"] for repo in yaml.safe_load(block("yaml", "repos:\n"))["repos"] for hook in repo["hooks"]]
    assert configured == list(_manifest()) == ["hwspec-validate", "hwspec-generate-check"]


@pytest.mark.slow  # runs each hook's entry as pre-commit does, each running hwspec
def test_the_hooks_entries_run_as_pre_commit_runs_them(tmp_path: Path) -> None:
    """Each hook's entry with the staged files its `files` pattern selects (or none), in the
    repository root: the faulty platform fails validation, and a platform changed after
    generating makes generate --check fail."""
    hooks = _manifest()
    repo = _repository(tmp_path / "repo", CLEAN)
    shutil.copy(FAULTY, repo / "platforms" / "faulty.yaml")
    (repo / "notes.yaml").write_text("not: a platform\n")
    staged = ["notes.yaml", "platforms/faulty.yaml", "platforms/node.yaml", "platforms/parts/site.yaml"]

    def run_hook(hook: dict) -> subprocess.CompletedProcess:
        files = [f for f in staged if re.search(hook["files"], f)] if hook.get("pass_filenames", True) else []
        return subprocess.run([*hook["entry"].split(), *files], cwd=repo, env=_env(), capture_output=True, text=True, timeout=300)

    validated = run_hook(hooks["hwspec-validate"])
    assert validated.returncode == 1 and "platforms/faulty.yaml:57:22: error[HW202" in validated.stdout
    assert validated.stderr == "hwspec: 3 file(s) checked: 1 error(s), 0 warning(s): failed\n"
    (repo / "platforms" / "faulty.yaml").unlink()
    assert hooks["hwspec-generate-check"]["always_run"] is True
    assert run_hook(hooks["hwspec-generate-check"]).returncode == 0
    (repo / "platforms" / "node.yaml").write_text(CLEAN.read_text().replace("name: base-2gpu", "name: renamed"))
    stale = run_hook(hooks["hwspec-generate-check"])
    assert stale.returncode == 1 and "missing: generated/renamed/nccl.conf" in stale.stdout + stale.stderr


def _pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """pre-commit with this checkout's src/ off PYTHONPATH, so that the hooks run the hwspec
    pre-commit installed."""
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT / "src"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _needs_pre_commit() -> None:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        pytest.skip("pre-commit is not installed (pip install -e '.[consumers]')")
    if not (ROOT / ".git").exists():
        pytest.skip("pre-commit installs hooks from a git repository; this checkout is not one")


@pytest.mark.consumer
def test_pre_commit_accepts_the_manifest_and_the_pages_configuration(tmp_path: Path) -> None:
    _needs_pre_commit()
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(block("yaml", "repos:\n"))
    for check, path in (("validate-manifest", HOOKS), ("validate-config", config)):
        result = _pre_commit(check, str(path), cwd=tmp_path, home=tmp_path / "home")
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="session")
def pre_commit_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The revision of this checkout that pre-commit installs hwspec from, and the one
    PRE_COMMIT_HOME every pre-commit run of the suite shares, so that hwspec is installed into
    pre-commit's environment once per run (about 9 s of CPU each time), not once per command.

    The revision is the working tree's tracked files as `git stash create` commits them (without
    touching the tree or the stash list; HEAD when nothing is changed): what pre-commit fetches
    is what is being tested. The home is in the run's own temporary directory, shared by its
    xdist workers (pre-commit locks its store while it installs)."""
    _needs_pre_commit()
    stashed = subprocess.run(["git", "stash", "create"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    rev = stashed.stdout.strip() or subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                                   timeout=60, check=True).stdout.strip()
    run_dir = tmp_path_factory.getbasetemp()
    shared = run_dir.parent if os.environ.get("PYTEST_XDIST_WORKER") else run_dir
    return rev, shared / "pre-commit-home"


def _configured(repo: Path, rev: str) -> None:
    """The page's `.pre-commit-config.yaml` in `repo`, its hwspec repository this checkout at `rev`."""
    config = yaml.safe_load(block("yaml", "repos:\n"))
    (hooks,) = config["repos"]
    hooks.update(repo=str(ROOT), rev=rev)
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.mark.consumer
def test_pre_commit_runs_the_hooks_from_this_repository(tmp_path: Path, pre_commit_store: tuple[str, Path]) -> None:
    """The page's configuration, pointed at this checkout: pre-commit itself installs hwspec from
    it into an environment of its own and runs each hook on a staged change."""
    rev, home = pre_commit_store
    repo = _repository(tmp_path / "repo", CLEAN)
    _configured(repo, rev)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, timeout=60)
    for hook in ("hwspec-validate", "hwspec-generate-check"):
        passed = _pre_commit("run", hook, cwd=repo, home=home)
        assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-3000:]
    shutil.copy(FAULTY, repo / "platforms" / "node.yaml")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, timeout=60)
    failed = _pre_commit("run", "hwspec-validate", cwd=repo, home=home)
    assert failed.returncode == 1 and "platforms/node.yaml:57:22: error[HW202 backend-nic-locality]" in failed.stdout
    (repo / "platforms" / "node.yaml").write_text(CLEAN.read_text().replace("name: base-2gpu", "name: renamed"))
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, timeout=60)
    stale = _pre_commit("run", "hwspec-generate-check", cwd=repo, home=home)
    assert stale.returncode == 1 and "out of date; run 'hwspec generate' and commit the result" in stale.stdout


@pytest.mark.consumer
def test_pre_commit_runs_both_hooks_green_on_a_repository_with_site_parts(tmp_path: Path, pre_commit_store: tuple[str, Path]) -> None:
    """The documented layout: platforms/ with a parts/ directory. pre-commit passes the parts
    file to the validate hook (its `files` pattern selects it), which checks it as parts; a
    broken part fails the hook at its own line."""
    rev, home = pre_commit_store
    repo = _repository(tmp_path / "repo", CLEAN)
    _configured(repo, rev)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, timeout=60)
    for hook in ("hwspec-validate", "hwspec-generate-check"):
        passed = _pre_commit("run", hook, "--all-files", "--verbose", cwd=repo, home=home)
        assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-3000:]
        if hook == "hwspec-validate":
            assert "hwspec: 2 file(s) checked: 0 error(s), 0 warning(s): ok" in passed.stdout, passed.stdout[-3000:]
    (repo / "platforms" / "parts" / "site.yaml").write_text(SITE_PARTS.replace("speed: 100 Gb/s", "speed: 100 GB"))
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, timeout=60)
    failed = _pre_commit("run", "hwspec-validate", cwd=repo, home=home)
    assert failed.returncode == 1 and "platforms/parts/site.yaml:8:12: error[E1" in failed.stdout, failed.stdout[-3000:]
