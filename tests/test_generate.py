"""Generation end to end: deterministic plans, `hwspec generate --check` exit codes and
diffs, output paths that cannot escape, atomic writes, executable scripts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.generate import writer
from hwspec.generate.engine import plan_for, write_plan
from hwspec.pipeline import check
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
NODE_PLATFORMS = ("zionex", "zion")
MY_FILES = ("nccl-topo.xml", "nccl.conf", "launch.env", "ranks.tsv", "bind.sh")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # headers name the platform file relative to the working directory


def full_plan() -> dict[str, str]:
    plan: dict[str, str] = {}
    for name in NODE_PLATFORMS:
        checked = check(Path("platforms") / f"{name}.yaml")
        assert not checked.failed(), checked.diagnostics
        plan.update(plan_for(checked.topology))
    return plan


@pytest.mark.slow  # hwspec processes under other hash seeds
def test_plans_are_deterministic_across_runs_and_hash_seeds(tmp_path):
    first, second = full_plan(), full_plan()
    assert first == second
    assert all(f"{p}/{f}" in first for p in NODE_PLATFORMS for f in MY_FILES)
    # a separate interpreter with another hash seed writes the same bytes
    env = dict(os.environ, PYTHONHASHSEED="12345")
    subprocess.run([sys.executable, "-m", "hwspec", "generate", "--no-svg", "-o", str(tmp_path),
                    *(f"platforms/{p}.yaml" for p in NODE_PLATFORMS)], cwd=ROOT, env=env, check=True, capture_output=True)
    for key, text in first.items():
        assert (tmp_path / key).read_text(encoding="utf-8") == text, key


def _fresh_copy(tmp_path: Path) -> Path:
    """generated/ as committed for this module's files, beside fresh output of the other
    generators (whose own staleness test is test_generated_up_to_date.py): the check then
    judges the committed nccl/launch files and the CLI, not other work in progress."""
    out = tmp_path / "generated"
    assert main(["generate", "--no-svg", "-o", str(out), *(f"platforms/{p}.yaml" for p in NODE_PLATFORMS)]) == 0
    for name in NODE_PLATFORMS:
        for file in MY_FILES:
            shutil.copy2(ROOT / "generated" / name / file, out / name / file)
    return out


def _check(out: Path, *paths: str) -> int:
    return main(["generate", "--check", "-o", str(out), *(paths or [f"platforms/{p}.yaml" for p in NODE_PLATFORMS])])


def test_check_passes_on_a_fresh_copy_of_generated(tmp_path, capsys):
    out = _fresh_copy(tmp_path)
    status = _check(out)
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err
    assert "up to date" in captured.err


def test_check_fails_with_a_diff_when_a_file_was_edited(tmp_path, capsys):
    out = _fresh_copy(tmp_path)
    conf = out / "zionex" / "nccl.conf"
    conf.write_text(conf.read_text().replace("NCCL_IB_TC=106", "NCCL_IB_TC=0"))
    assert _check(out) == 1
    report = capsys.readouterr().out
    assert report.startswith(f"stale: {conf}\n")
    assert "-NCCL_IB_TC=0\n+NCCL_IB_TC=106" in report
    assert report.count("stale: ") == 1


def test_check_reports_missing_and_left_over_files(tmp_path, capsys):
    out = _fresh_copy(tmp_path)
    (out / "zion" / "ranks.tsv").unlink()
    (out / "zion" / "old.conf").write_text("x")
    assert _check(out) == 1
    report = capsys.readouterr().out
    assert f"missing: {out / 'zion' / 'ranks.tsv'}" in report
    assert f"not generated any more: {out / 'zion' / 'old.conf'}" in report


def test_check_returns_2_on_a_validation_error(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "platforms" / "zionex.yaml").read_text().replace("numa_node: ${i}", "numa_nod: ${i}", 1))
    assert _check(_fresh_copy(tmp_path), str(bad)) == 2
    assert "numa_nod" in capsys.readouterr().err


@pytest.mark.parametrize("relative", ["../x", "zionex/../../x", "/tmp/x", "a/./../../x"])
def test_write_plan_refuses_paths_outside_the_output_dir(tmp_path, relative):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="refusing output path"):
        write_plan({relative: "text\n"}, out)
    assert not (tmp_path / "x").exists()


def test_write_plan_is_atomic_and_marks_scripts_executable(tmp_path, monkeypatch):
    out = tmp_path / "out"
    plan = {"p/nccl.conf": "NCCL_A=1\n", "p/bind.sh": "#!/bin/sh\nexit 0\n"}
    assert sorted(p.name for p in write_plan(plan, out, ["p"])) == ["bind.sh", "nccl.conf"]
    assert sorted(p.name for p in (out / "p").iterdir()) == ["bind.sh", "nccl.conf"]  # no temp files
    assert (out / "p" / "bind.sh").stat().st_mode & 0o777 == 0o755
    assert (out / "p" / "nccl.conf").stat().st_mode & 0o777 == 0o644
    assert write_plan(plan, out, ["p"]) == []  # unchanged files are not rewritten

    def broken_exchange(new, target):
        raise OSError("disk full")

    monkeypatch.setattr(writer, "_exchange", broken_exchange)
    with pytest.raises(OSError, match="disk full"):
        write_plan({"p/nccl.conf": "NCCL_A=2\n", "p/bind.sh": plan["p/bind.sh"]}, out, ["p"])
    assert (out / "p" / "nccl.conf").read_text() == "NCCL_A=1\n"
    assert sorted(p.name for p in (out / "p").iterdir()) == ["bind.sh", "nccl.conf"]
    assert sorted(p.name for p in out.iterdir()) == ["p"]  # no staging directory left behind


def test_generated_bind_sh_is_executable_after_generate(tmp_path):
    assert main(["generate", "--no-svg", "-o", str(tmp_path), "platforms/zionex.yaml"]) == 0
    assert (tmp_path / "zionex" / "bind.sh").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "zionex" / "nccl-topo.xml").stat().st_mode & 0o777 == 0o644


def test_a_node_platform_rendered_again_in_another_deployment_reuses_only_what_did_not_read_it():
    """A cluster renders its node platform's files again under its own install dir: outputs of
    generators that never read the deployment (install_dir, rail_optimized) are reused, the
    others are rendered again and differ."""
    import dataclasses

    from hwspec.generate import engine as generate
    from hwspec.generate.registry import builtin_generators

    node = check(ROOT / "platforms" / "zionex.yaml").platform
    env = generate.template_environment()
    calls: list[str] = []
    counted = [dataclasses.replace(g, func=lambda ctx, _f=g.func: calls.append(ctx.name) or _f(ctx)) for g in builtin_generators()]
    rendered = generate.Rendered()
    first = generate.render_all(topology_of(node), env, install_dir="/etc/hwspec/zionex", rendered=rendered, generators=counted)
    rendered_first = sorted(calls)
    calls.clear()
    again = generate.render_all(topology_of(node), env, install_dir="/etc/hwspec/zionex-16/nodes/zionex", rail_optimized=True,
                                rendered=rendered, generators=counted)
    assert sorted(calls) == ["acceptance-node", "health", "launch-env", "nccl-conf"] and len(rendered_first) > 4
    assert {path for path in first if first[path] != again[path]} == {
        "launch.env", "nccl.conf", "health/slurm-healthcheck.sh", "health/npd-plugin.sh", "health/npd-config.json",
        "health/npd-daemonset.yaml", "acceptance/run-node.sh"}
    assert again["roofline.json"] is first["roofline.json"]
    # run-node.sh and the health checks read the install dir, expected.json and the parts bundle
    # beside them do not: made once (`once`)
    assert again["acceptance/expected.json"] is first["acceptance/expected.json"]
    assert again["parts/platform-parts.yaml"] is first["parts/platform-parts.yaml"]
    calls.clear()
    generate.render_all(topology_of(node), env, install_dir="/etc/hwspec/zionex", generators=counted)  # no run's outputs: all rendered
    assert sorted(calls) == rendered_first


def test_once_makes_a_text_once_per_run_unless_it_read_the_deployment():
    """`Generation.once`: a text made from the topology and the header alone is made once per
    run (a cluster's render of its node platform reuses it); one whose making read a deployment
    value is made every time, as is everything without a run's `rendered` (a library call)."""
    import functools

    from hwspec.generate import engine as generate

    topology = topology_of(check(ROOT / "platforms" / "zionex.yaml").platform)
    env = generate.template_environment()
    made: list[str] = []
    rendered = generate.Rendered()

    def context(install_dir: str, run: generate.Rendered | None = rendered) -> generate.GenContext:
        return generate.GenContext(topology, env, "acceptance-node", "platforms/zionex.yaml", install_dir, rendered=run)

    def plain(ctx: generate.GenContext) -> str:
        made.append("plain")
        return ctx.platform.name

    def deployed(ctx: generate.GenContext) -> str:
        made.append("deployed")
        return ctx.install_dir

    for install_dir in ("/etc/hwspec/zionex", "/etc/hwspec/zionex-16/nodes/zionex"):
        ctx = context(install_dir)
        assert ctx.once("plain", functools.partial(plain, ctx)) == "zionex"
        assert ctx.once("deployed", functools.partial(deployed, ctx)) == install_dir
    assert made == ["plain", "deployed", "deployed"]
    made.clear()
    ctx = context("/etc/hwspec/zionex", run=None)
    ctx.once("plain", lambda: plain(ctx)), ctx.once("plain", lambda: plain(ctx))
    assert made == ["plain", "plain"]


def test_a_topology_s_file_limits_are_decided_once_for_the_rule_and_the_generator(monkeypatch):
    """HW901 reports `topology_limits`, the nccl-topo generator refuses with them (and HW911 and
    rccl-topo with `rccl_limits`): the topology never changes, so they are decided once."""
    from hwspec.formats import nccl_tree
    from hwspec.generate.engine import Rendered

    decided: list[str] = []
    for name in ("_topology_limits", "_rccl_limits"):
        real = getattr(nccl_tree, name)
        monkeypatch.setattr(nccl_tree, name, lambda topology, _real=real, _name=name: decided.append(_name) or _real(topology))
    checked = check(ROOT / "platforms" / "zionex.yaml")
    assert checked.topology is not None and not checked.failed()
    plan_for(checked.topology, rendered=Rendered())
    assert sorted(decided) == ["_rccl_limits", "_topology_limits"]
    first = nccl_tree.topology_limits(checked.topology)
    assert first == nccl_tree.topology_limits(checked.topology) and first is not nccl_tree.topology_limits(checked.topology)


# ---------------------------------------------------------------- unknown facts (HW603) in generate's output


def test_generate_says_once_per_platform_which_outputs_wait_for_which_facts(monkeypatch, capsys):
    """The shipped platforms with unknown bus ids print one HW603 line each on every generate
    (which output waits for which facts of which devices, and where the per-device list is);
    --verbose and validate print every device's finding."""
    from hwspec.cli.commands import main

    monkeypatch.chdir(ROOT)
    files = ["platforms/gcp-a3-megagpu-8g.yaml", "platforms/jupiter-gh200.yaml"]
    assert main(["generate", "--check", *files]) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "HW603" in line or line.startswith("  hint: 'hwspec validate")] == [
        "platforms/gcp-a3-megagpu-8g.yaml:1:1: warning[HW603 unknown-facts]: waiting for the unknown facts of devices: nccl-topo.xml "
        "(PCI bus id of gpu0, gpu1, gpu2, gpu3, gpu4, gpu5, gpu6, gpu7, gpunic0, gpunic1, gpunic2, gpunic3, gpunic4, gpunic5, gpunic6, "
        "gpunic7, sw0, sw1, sw2, sw3)",
        "  hint: 'hwspec validate platforms/gcp-a3-megagpu-8g.yaml' (or 'hwspec generate --verbose') lists the 21 device(s) and what "
        "to fill in, then generate again",
        "platforms/jupiter-gh200.yaml:1:1: warning[HW603 unknown-facts]: waiting for the unknown facts of devices: nccl-topo.xml "
        "(PCI bus id of gpu1, gpu2, gpu3, nic0, nic1, nic2, nic3)",
        "  hint: 'hwspec validate platforms/jupiter-gh200.yaml' (or 'hwspec generate --verbose') lists the 7 device(s) and what "
        "to fill in, then generate again"]
    assert main(["generate", "--check", "--verbose", *files]) == 0
    verbose = capsys.readouterr().err
    assert verbose.count("warning[HW603") == 30 and "jupiter-gh200.yaml:73:5: warning[HW603 unknown-facts]: nic3: unknown PCI bus id" in verbose
    main(["validate", *files])
    assert capsys.readouterr().out.count("warning[HW603") == 30


def test_unknown_facts_no_output_waits_for_are_one_line_for_several_devices_and_as_they_are_for_one():
    from hwspec.cli.commands import summarised
    from hwspec.diagnostics import Diagnostic, Severity

    def finding(line: int, message: str) -> Diagnostic:
        return Diagnostic("n.yaml", line, 5, Severity.WARNING, "HW603", message, "give 'interface:'", "unknown-facts")

    other = Diagnostic("n.yaml", 3, 1, Severity.WARNING, "HW103", "sw0 is oversubscribed", None, "pcie-oversubscription")
    one = [other, finding(40, "nic0: unknown network interface name")]
    assert summarised(one, Path("n.yaml")) == one
    several = [*one, finding(50, "nic1: unknown network interface name")]
    (kept_other, line) = summarised(several, Path("n.yaml"))
    assert kept_other == other
    assert (line.line, line.message, line.hint) == (
        40, "unknown facts of nic0, nic1; no generated file waits for them",
        "'hwspec validate n.yaml' (or 'hwspec generate --verbose') lists the 2 device(s) and what to fill in")
