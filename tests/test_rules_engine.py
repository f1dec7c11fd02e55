"""The rule engine's loading of rule directories, and the PCIe tree rules read."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import networkx as nx
import pytest

from hwspec.diagnostics import Severity
from hwspec.model.load import load_platform
from hwspec.rules import Rule, Sandbox, load_rules, run_rules
from hwspec.topology import topology_of
from hwspec.topology.graph import build_graph, pcie_tree

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests/fixtures/rules"

RULE = '''
from hwspec.rules import rule

from ._words import WORD


@rule("{id}", "{name}", severity="info")
def check(ctx):
    """Says a word."""
    yield ctx.finding(WORD, at=("gpu0",))
'''


def rules_dir(path: Path, rule_id: str, word: str) -> Path:
    path.mkdir(parents=True)
    (path / "_words.py").write_text(f"WORD = {word!r}\n")
    (path / "says.py").write_text(RULE.format(id=rule_id, name=f"says-{word}"))
    return path


def test_each_rule_directory_imports_its_own_helpers(tmp_path: Path) -> None:
    rules = load_rules([rules_dir(tmp_path / "a", "A001", "apple"), rules_dir(tmp_path / "b", "B001", "banana")])
    platform = load_platform(FIXTURES / "base_2gpu.yaml")
    found = run_rules(topology_of(platform), rules)
    assert [(d.code, d.message) for d in found] == [("A001", "apple"), ("B001", "banana")]


def test_a_rule_imported_into_another_module_is_registered_once(tmp_path: Path) -> None:
    site = rules_dir(tmp_path / "site", "S001", "pear")
    (site / "more.py").write_text(textwrap.dedent('''
        from hwspec.rules import rule

        from .says import check  # reused, not redefined


        @rule("S002", "more")
        def more(ctx):
            """Nothing more."""
            return ()
    '''))
    assert [r.id for r in load_rules([site])] == ["S001", "S002"]


def test_a_finding_points_at_an_entry_or_at_any_location(tmp_path: Path) -> None:
    """One Location type from the YAML layer to the report: what `Platform.locate` gives, a
    rule may give back (or make one itself), and the diagnostic is where it says."""
    from hwspec.diagnostics import Location
    from hwspec.model import node

    assert node.Location is Location  # the model's name for it, kept for site rules
    site = tmp_path / "site"
    site.mkdir()
    (site / "where.py").write_text(textwrap.dedent('''
        from hwspec.diagnostics import Location
        from hwspec.rules import rule


        @rule("W001", "where")
        def where(ctx):
            """Points three ways."""
            yield ctx.finding("by id", at=("gpu0",))
            yield ctx.finding("by location", at=ctx.platform.locate("gpu0", "pcie"))
            yield ctx.finding("made here", at=Location("elsewhere.yaml", 7, 3))
    '''))
    platform = load_platform(FIXTURES / "base_2gpu.yaml")
    gpu0 = platform.locate("gpu0")
    assert isinstance(gpu0, Location) and gpu0.file == platform.source_map.file
    found = run_rules(topology_of(platform), load_rules([site]))
    pcie = platform.locate("gpu0", "pcie")
    assert sorted((d.message, d.file, d.line, d.col) for d in found) == [
        ("by id", gpu0.file, gpu0.line, gpu0.col), ("by location", pcie.file, pcie.line, pcie.col),
        ("made here", "elsewhere.yaml", 7, 3)]
    assert (gpu0.line, gpu0.col) != (pcie.line, pcie.col)


def test_pcie_tree_keeps_a_cycle_of_two_bridges() -> None:
    platform = load_platform(FIXTURES / "pcie_cycle.yaml")
    tree = pcie_tree(build_graph(platform))
    assert [sorted(cycle) for cycle in nx.simple_cycles(tree)] == [["sw0", "sw1"]]
    assert tree.edges["sw1", "sw0"]["parent"] == "sw1" and tree.edges["sw0", "sw1"]["parent"] == "sw0"


def test_pcie_tree_has_one_edge_per_device_or_bridge() -> None:
    platform = load_platform(ROOT / "platforms/zionex.yaml")
    tree = pcie_tree(build_graph(platform))
    items = (*platform.bridges, *platform.gpus, *platform.nics, *platform.ssds)
    assert sorted(tree.edges) == sorted((item.upstream, item.id) for item in items)
    assert tree.edges["sw0", "gpu0"]["link"] == platform.gpu_by_id["gpu0"].link


# ---------------------------------------------------------------- the sandbox is the caller's choice


def _identity(fd: int) -> tuple[int, int]:
    """What file descriptor `fd` is open on (device, inode)."""
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


def _surroundings() -> dict[str, Any]:
    """What a rule runs under: the SIGALRM and SIGINT handlers, the real-time timer, what file
    descriptor 1 is, and sys.stdout."""
    return {"alarm": signal.getsignal(signal.SIGALRM), "interrupt": signal.getsignal(signal.SIGINT),
            "timer": signal.getitimer(signal.ITIMER_REAL), "fd1": _identity(1), "stdout": sys.stdout}


def _rule(check: Any) -> Rule:
    return Rule("T001", "probe", Severity.INFO, "node", check, "test_rules_engine.py")


@contextlib.contextmanager
def _fd1_on(file: IO[bytes]) -> Iterator[None]:
    """File descriptor 1 on `file` for a while, so that it is not what fd 2 is whoever runs the tests."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(file.fileno(), 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def test_library_run_rules_runs_each_rule_as_a_plain_call() -> None:
    """Without a sandbox no signal handler, timer, file descriptor or sys.stdout is changed
    around a rule; with one (what the command line asks for) all of them are."""
    platform = load_platform(FIXTURES / "base_2gpu.yaml")
    seen: list[dict[str, Any]] = []

    def probe(ctx: Any) -> tuple:
        """Looks around."""
        seen.append(_surroundings())
        return ()

    with tempfile.TemporaryFile() as own, _fd1_on(own):
        before = _surroundings()
        assert run_rules(topology_of(platform), [_rule(probe)]) == []
        assert run_rules(topology_of(platform), [_rule(probe)], sandbox=Sandbox(5)) == []
        after = _surroundings()
    plain, boxed = seen
    assert plain == before == after
    assert boxed["alarm"] != before["alarm"] and boxed["interrupt"] != before["interrupt"]
    assert boxed["timer"][0] > 0 and boxed["fd1"] == _identity(2) != before["fd1"] and boxed["stdout"] is sys.stderr


def test_library_run_rules_still_reports_a_rule_that_raises() -> None:
    """A rule's exception is E900 with or without the sandbox; only the sandbox catches a
    SystemExit (outside it, sys.exit in a rule exits, as from any function)."""
    platform = load_platform(FIXTURES / "base_2gpu.yaml")

    def broken(ctx: Any) -> tuple:
        """Breaks."""
        raise KeyError("gpu9")

    def leaving(ctx: Any) -> tuple:
        """Leaves."""
        sys.exit(3)

    for sandbox in (None, Sandbox()):
        (found,) = run_rules(topology_of(platform), [_rule(broken)], sandbox=sandbox)
        assert (found.code, found.message) == ("E900", "rule T001 probe failed: KeyError: 'gpu9'")
    (found,) = run_rules(topology_of(platform), [_rule(leaving)], sandbox=Sandbox())
    assert (found.code, found.message) == ("E900", "rule T001 probe called sys.exit(3)")
    with pytest.raises(SystemExit):
        run_rules(topology_of(platform), [_rule(leaving)])
