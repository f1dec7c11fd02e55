"""Nothing hwspec did not ship or the operator did not name runs as code (issue 36, class 1 and 2):
no template bytecode cache is read (jinja2 unpickles its entries), and a site rules folder is
compiled from its reviewed `.py` source, never from a `__pycache__/*.pyc` beside it."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import pickle
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.pipeline import rule_directories
from hwspec.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "src" / "hwspec" / "generate" / "templates"


class _Planted:
    """A pickle that, when loaded, creates the file named by its argument."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.slow  # a hwspec process
def test_a_planted_template_cache_entry_does_not_run(tmp_path: Path) -> None:
    """jinja2's FileSystemBytecodeCache keeps `_jinja2-cache-<uid>` under $TMPDIR and unpickles
    each entry before it checks it: an entry planted for every built-in template would run in
    the next generate if hwspec kept that cache."""
    import jinja2

    tmpdir = tmp_path / "tmp"
    cache = tmpdir / f"_jinja2-cache-{os.getuid()}"
    cache.mkdir(parents=True, mode=0o700)
    marker = tmp_path / "PWNED"
    planter = jinja2.FileSystemBytecodeCache(str(cache))
    payload = jinja2.bccache.bc_magic + pickle.dumps(_Planted(str(marker)))
    templates = [p for p in TEMPLATES.rglob("*") if p.is_file()]
    assert templates
    for template in templates:
        name = template.relative_to(TEMPLATES).as_posix()
        key = planter.get_cache_key(name, str(template))
        (cache / (planter.pattern % key)).write_bytes(payload)
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(ROOT / "src")}
    env.pop("HWSPEC_NO_TEMPLATE_CACHE", None)
    result = subprocess.run([sys.executable, "-m", "hwspec", "generate", "--no-svg", "-o", str(tmp_path / "out"),
                             str(ROOT / "platforms" / "zionex.yaml")], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    assert sorted(p.name for p in tmpdir.iterdir()) == [cache.name]  # nothing else made there either
    assert len(list(cache.iterdir())) == len(templates)  # and nothing written into it


REVIEWED = '''from hwspec.rules import rule
from ._helper import WORD


@rule("SITE900", "site-pyc", "warning")
def check(ctx):
    """reviewed"""
    return []
'''
PLANTED = REVIEWED.replace('"""reviewed"""', '"""planted!"""')
HELPER, HELPER_PLANTED = 'WORD = "reviewed"\n', 'WORD = "planted!"\n'


def _plant(source: Path, reviewed: str, planted: str) -> Path:
    """`source` holding `reviewed`, with a `__pycache__` entry compiled from `planted` (the same
    length) whose header matches `source`'s size and modification time: what Python's own
    source loader takes instead of the source. Returns the .pyc."""
    assert len(reviewed) == len(planted)
    source.write_text(planted)
    os.utime(source, (1_700_000_000, 1_700_000_000))
    pyc = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(pyc), doraise=True)
    source.write_text(reviewed)
    os.utime(source, (1_700_000_000, 1_700_000_000))
    return pyc


def test_a_planted_pyc_beside_a_site_rule_does_not_run(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    pyc = _plant(rules / "site.py", REVIEWED, PLANTED)
    helper_pyc = _plant(rules / "_helper.py", HELPER, HELPER_PLANTED)
    before = {pyc: pyc.read_bytes(), helper_pyc: helper_pyc.read_bytes()}
    (found,) = [r for r in load_rules([rules]) if r.id == "SITE900"]
    assert found.summary == "reviewed"
    assert sys.modules[found.check.__module__].WORD == "reviewed"
    assert {p: p.read_bytes() for p in before} == before  # not rewritten either


def test_loading_site_rules_writes_no_bytecode(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as without PYTHONDONTWRITEBYTECODE
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "site.py").write_text(REVIEWED)
    (rules / "_helper.py").write_text(HELPER)
    assert [r.id for r in load_rules([rules]) if r.id == "SITE900"] == ["SITE900"]
    assert sorted(p.name for p in rules.iterdir()) == ["_helper.py", "site.py"]


def test_builtin_rules_load_as_hwspec_modules_and_site_rules_from_source(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "site.py").write_text(REVIEWED)
    (rules / "_helper.py").write_text(HELPER)

    loaded = {r.id: r for r in load_rules([*rule_directories(), rules])}
    builtin_loader = sys.modules[loaded["HW101"].check.__module__].__spec__.loader
    site_loader = sys.modules[loaded["SITE900"].check.__module__].__spec__.loader
    assert type(builtin_loader) is importlib.machinery.SourceFileLoader  # hwspec's own, bytecode as for its other modules
    assert type(site_loader).__name__ == "_SourceLoader"  # compiled from the reviewed source
