"""Generators are one declared extension point: hwspec's own, a site's `--generators DIR` and an
installed package's (the `hwspec.generators` entry-point group) are found the same way
(`hwspec.generate.registry`), and a site's run in the rules' sandbox when the run has one:
whatever it raises, prints, exits with or returns, it is an E904 and nothing is written."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError
from hwspec.generate.engine import GenContext, GenerationError, GeneratorFailed, plan_for
from hwspec.generate.registry import builtin_generators, generator, load_generators
from hwspec.model.load import load_platform
from hwspec.pipeline import check
from hwspec.rules import Sandbox
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "tests/fixtures/rules/base_2gpu.yaml"  # clean, named base-2gpu
SHOWN = "tests/fixtures/rules/base_2gpu.yaml"
"""BASE as messages show it, from the repository root."""


@pytest.fixture(autouse=True)
def from_the_repository_root(monkeypatch):
    monkeypatch.chdir(ROOT)

INVENTORY = '''
from hwspec import GenContext, Plan, generator


@generator("inventory")
def inventory(ctx: GenContext) -> Plan:
    """inventory.tsv: each GPU with the NICs that serve it."""
    lines = [f"{gpu.id}\\t{','.join(ctx.topology.nics_of(gpu.id))}\\n" for gpu in ctx.platform.gpus]
    return {"inventory.tsv": ctx.header("hash") + "".join(lines)}
'''


def site_generators(directory: Path, **modules: str) -> Path:
    """`directory` holding one generator module per keyword (its name) with that source."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (directory / f"{name}.py").write_text(textwrap.dedent(source))
    return directory


def body(source: str) -> str:
    """A module of one node generator named `broken` whose body is `source`."""
    return ("import os, sys, time\nfrom hwspec import GenContext, Plan, generator\n\n\n"
            "@generator('broken')\ndef broken(ctx: GenContext) -> Plan:\n" + textwrap.indent(textwrap.dedent(source), "    "))


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


# ---------------------------------------------------------------- one way to declare and find


def test_hwspec_s_own_generators_are_the_marked_functions_of_its_generate_package():
    found = {g.name: g for g in builtin_generators()}
    assert len(found) == 20 and not any(g.site for g in found.values())
    assert (found["nccl-topo"].scope, found["nccl-topo"].origin) == ("node", "hwspec.generate.nccl")
    assert (found["slurm"].scope, found["slurm"].origin) == ("cluster", "hwspec.generate.slurm")
    assert [g.name for g in load_generators(packages=False)] == sorted(found)


def test_a_site_generator_in_a_directory_is_found_as_hwspec_s_own_are_and_writes_beside_them(tmp_path, capsys):
    site = site_generators(tmp_path / "site", inventory=INVENTORY, _helper="RAISE = 1 / 0\n")  # a helper is not loaded
    (mine,) = [g for g in load_generators([site], packages=False) if g.site]
    assert (mine.name, mine.scope, mine.origin, mine.summary) == ("inventory", "node", str(site / "inventory.py"),
                                                                   "inventory.tsv: each GPU with the NICs that serve it.")
    assert sys.modules[mine.func.__module__].__spec__.loader.__class__.__name__ == "_SourceLoader"  # from source, as site rules
    status, out, err = run(capsys, "generate", "--no-svg", "--generators", site, "-o", tmp_path / "out", BASE)
    assert (status, out) == (0, ""), err
    assert (tmp_path / "out/base-2gpu/inventory.tsv").read_text().endswith("gpu0\tnic0\ngpu1\tnic1\n")
    assert (tmp_path / "out/base-2gpu/nccl-topo.xml").is_file()


def test_hwspec_generators_lists_every_generator_a_generate_runs(tmp_path, capsys):
    site = site_generators(tmp_path / "site", inventory=INVENTORY)
    status, out, _ = run(capsys, "generators", "--generators", site)
    lines = out.splitlines()
    assert status == 0 and len(lines) == 21
    assert f"inventory           node     {site / 'inventory.py'}: inventory.tsv: each GPU with the NICs that serve it." in lines
    assert lines[0].startswith("acceptance          cluster  hwspec.generate.acceptance: ")


def test_a_cluster_renders_the_site_s_node_generators_for_its_node_platforms(tmp_path):
    checked = check(ROOT / "platforms/zionex-16.yaml")
    generators = load_generators([site_generators(tmp_path / "site", inventory=INVENTORY)], packages=False)
    plan = plan_for(checked.topology, generators=generators, sandbox=Sandbox(10))
    assert plan["zionex-16/nodes/zionex/inventory.tsv"].endswith("gpu7\tnic7\n")


def test_reading_the_deployment_is_recorded_by_properties_and_deployment_does_not_record():
    platform = load_platform(BASE)
    context = GenContext(topology_of(platform), None, "probe", platform.file)  # type: ignore[arg-type]
    assert context.deployment() == {"install_dir": "/etc/hwspec/base-2gpu", "rail_optimized": None}
    assert context.deployment_read == set()
    assert context.install_dir == "/etc/hwspec/base-2gpu" and context.deployment_read == {"install_dir"}
    assert type(context).__getattribute__ is object.__getattribute__  # nothing hidden in attribute access


def test_the_decorator_refuses_a_name_a_header_cannot_hold_and_an_unknown_scope():
    with pytest.raises(ValueError) as bad_name:
        generator("Inventory\n")
    assert str(bad_name.value) == "generator 'Inventory\\n': a name is lower-case letters and digits in words joined by '-' (nccl-topo)"
    with pytest.raises(ValueError) as bad_scope:
        generator("inventory", scope="rack")  # type: ignore[call-overload]
    assert str(bad_scope.value) == "generator inventory: scope must be 'node' or 'cluster', not 'rack'"


# ---------------------------------------------------------------- what cannot be loaded: nothing is generated


def test_a_generator_named_as_one_of_hwspec_s_own_is_E906_at_its_line(tmp_path, capsys):
    site = site_generators(tmp_path / "site", mine=body("return {}").replace("'broken'", "'nccl-topo'"))
    status, out, err = run(capsys, "generate", "--generators", site, "-o", tmp_path / "out", BASE)
    assert (status, out) == (2, "")
    assert err == (f"{site / 'mine.py'}:5:1: error[E906]: generator nccl-topo ({site / 'mine.py'}) clashes with the one of "
                   "hwspec.generate.nccl\n  hint: give it another name\n")
    assert not (tmp_path / "out").exists()


def test_a_generator_module_that_fails_to_import_is_E904_at_its_line(tmp_path, capsys):
    site = site_generators(tmp_path / "site", mine="import os\nRATIO = 1 / 0\n")
    status, out, err = run(capsys, "generate", "--generators", site, "-o", tmp_path / "out", BASE)
    assert (status, out) == (2, "")
    assert err == (f"{site / 'mine.py'}:2:1: error[E904]: the generator module failed to import: ZeroDivisionError: division by zero\n"
                   f"  hint: nothing was generated; this is a bug in {site / 'mine.py'}\n")


def test_a_generators_dir_that_is_not_one_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as usage:
        main(["generate", "--generators", str(tmp_path / "missing"), str(BASE)])
    assert usage.value.code == 2
    assert f"--generators {tmp_path / 'missing'}: no such directory" in capsys.readouterr().err
    with pytest.raises(HwspecError) as raised:
        load_generators([tmp_path / "missing"], packages=False)
    assert [(d.code, d.message) for d in raised.value.diagnostics] == [("E905", "cannot load generators: not a directory")]


# ---------------------------------------------------------------- what goes wrong while generating: E904, nothing written


ESCAPES = {
    "raises": ("raise ValueError('boom')", "failed: ValueError: boom"),
    "exits": ("print('noise'); sys.exit(3)", "called sys.exit(3)"),
    "interrupts": ("raise KeyboardInterrupt", "raised KeyboardInterrupt"),
    "moves": ("os.chdir('/'); return {}", "changed the working directory (put back)"),
    "hangs": ("while True:\n    time.sleep(0.01)", "ran longer than the 0.5 s time limit"),
    "not_a_plan": ("return ['inventory.tsv']", "failed: TypeError: returned a list, not a plan (a dict of relative path to text)"),
    "not_text": ("return {'inventory.tsv': b'x'}", "failed: TypeError: returned a plan with a str key and a bytes value; "
                                                    "a plan maps relative paths (str) to text (str)"),
    "escapes": ("return {'../inventory.tsv': 'x'}", "failed: ValueError: refusing output path '../inventory.tsv': it must stay "
                                                     "inside base-2gpu"),
}


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_a_site_generator_that_fails_is_E904_naming_it_and_nothing_is_written(tmp_path, capsys, case):
    source, what = ESCAPES[case]
    site = site_generators(tmp_path / "site", mine=body(source))
    status, out, err = run(capsys, "generate", "--rule-time-limit", "0.5", "--generators", site, "-o", tmp_path / "out", BASE)
    assert (status, out) == (2, "")  # what it printed went to stderr, as a rule's does
    assert err.endswith(f"hwspec: error[E904]: {SHOWN}: generator broken ({site / 'mine.py'}) {what}\n"
                        "hwspec: nothing written: fix the errors above first\n")
    assert not (tmp_path / "out").exists()
    assert Path.cwd() == ROOT


def test_from_python_a_site_generator_runs_plainly_and_contained_with_a_sandbox(tmp_path):
    platform = load_platform(BASE)
    generators = load_generators([site_generators(tmp_path / "site", mine=body("sys.exit(3)"))], packages=False)
    with pytest.raises(SystemExit):  # a plain call: its exit goes up, as a rule's does without a sandbox
        plan_for(topology_of(platform), generators=generators)
    with pytest.raises(GeneratorFailed) as contained:
        plan_for(topology_of(platform), generators=generators, sandbox=Sandbox(10))
    assert isinstance(contained.value, GenerationError)
    assert str(contained.value) == f"{SHOWN}: generator broken ({tmp_path / 'site/mine.py'}) called sys.exit(3)"


def test_two_generators_writing_one_file_are_refused(tmp_path):
    platform = load_platform(BASE)
    mine = load_generators([site_generators(tmp_path / "site", mine=body("return {'nccl.conf': 'x'}"))], packages=False)
    with pytest.raises(GenerationError) as raised:
        plan_for(topology_of(platform), generators=mine)
    assert str(raised.value) == f"{SHOWN}: generators both write nccl.conf"


# ---------------------------------------------------------------- an installed package's: the entry-point group


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Installs the package `acme_hwspec` (a module per keyword) with a `.dist-info` declaring
    `entry_points` (entry_points.txt), as pip lays it out, in a directory put on `sys.path`
    (where `importlib.metadata` finds it); gone, with its modules, after the test."""

    def install(entry_points: str, **modules: str) -> None:
        site_packages = tmp_path / "site-packages"
        package = site_packages / "acme_hwspec"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        for name, source in modules.items():
            (package / f"{name}.py").write_text(textwrap.dedent(source))
        info = site_packages / "acme_hwspec-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-hwspec\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        monkeypatch.syspath_prepend(str(site_packages))

    yield install
    for name in [m for m in sys.modules if m == "acme_hwspec" or m.startswith("acme_hwspec.")]:
        del sys.modules[name]


def test_an_installed_package_s_entry_point_adds_its_generators_to_every_generate(tmp_path, capsys, installed):
    installed("[hwspec.generators]\nacme = acme_hwspec.generators\n", generators=INVENTORY)
    status, out, _ = run(capsys, "generators")
    assert status == 0
    assert "inventory           node     acme_hwspec.generators, entry point acme: inventory.tsv: each GPU with the NICs that " \
           "serve it." in out.splitlines()
    status, out, err = run(capsys, "generate", "--no-svg", "-o", tmp_path / "out", BASE)
    assert (status, out) == (0, ""), err
    assert (tmp_path / "out/base-2gpu/inventory.tsv").read_text().endswith("gpu0\tnic0\ngpu1\tnic1\n")


@pytest.mark.parametrize("declared, module, message", [
    ("acme = acme_hwspec.generators:inventory", INVENTORY,
     "error[E905]: cannot load generators: the hwspec.generators entry point names a function, not a module"),
    ("acme = acme_hwspec.generators", "X = 1\n", "error[E905]: cannot load generators: module acme_hwspec.generators holds no @generator function"),
    ("acme = acme_hwspec.generators", "raise SystemExit(4)\n", "error[E904]: the generator module called sys.exit(4) while it was imported"),
], ids=["a-function", "no-generators", "exits-on-import"])
def test_an_entry_point_that_names_no_module_of_generators_stops_generate(tmp_path, capsys, installed, declared, module, message):
    installed(f"[hwspec.generators]\n{declared}\n", generators=module)
    status, out, err = run(capsys, "generate", "--no-svg", "-o", tmp_path / "out", BASE)
    assert (status, out) == (2, "")
    assert err.startswith(f"entry point acme = {declared.split(' = ')[1]}:1:1: {message}\n"), err
    assert not (tmp_path / "out").exists()


def test_the_generators_of_a_run_are_the_list_it_is_given():
    """No global registry: a run without a generator does not render it."""
    platform = load_platform(BASE)
    only_ranks = [g for g in builtin_generators() if g.name == "ranks"]
    assert list(plan_for(topology_of(platform), generators=only_ranks)) == ["base-2gpu/ranks.tsv"]
    renamed = [dataclasses.replace(only_ranks[0], name="ranks-again")]
    assert "(ranks-again)" in plan_for(topology_of(platform), generators=renamed)["base-2gpu/ranks.tsv"]
