"""The suite runs with exactly what the README's test command installs (`pip install -e '.[test]'`):
every module the tests import at top level is the standard library, hwspec, the tests' own
helpers, or a distribution hwspec or its `test` extra asks for (pyproject.toml). A consumer's
package (torch, TorchRec, pre-commit, prometheus_client, ruamel.yaml, mkdocs...) is imported
only where the test skips, with the reason, when it is absent: after `pytest.importorskip` of it
(with `reason=`), inside `try: ... except ImportError`, or in a function that takes a fixture or
calls a helper that does one of those first.

Read from the source with `ast`: nothing is imported to check it."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
LOCAL = {"hwspec", "tests", "conftest"}
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match is not None, requirement
    return _normalized(match.group(1))


@cache
def installed_by_the_test_extra() -> frozenset[str]:
    """The top-level module names that `pip install -e '.[test]'` provides, beyond the standard
    library: hwspec's own dependencies and its `test` extra, as pyproject.toml states them
    (each must be installed to run the suite at all, so each maps to its modules)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_requirement_name(r) for r in [*project["dependencies"], *project["optional-dependencies"]["test"]]}
    modules = {module for module, distributions in importlib.metadata.packages_distributions().items()
               if any(_normalized(d) in wanted for d in distributions)}
    provided = {_normalized(d) for distributions in importlib.metadata.packages_distributions().values() for d in distributions}
    assert wanted <= provided, f"the test extra is not installed here: {sorted(wanted - provided)}"
    return frozenset(modules)


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or top in LOCAL or top in installed_by_the_test_extra()


def _imports(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def _importorskip(node: ast.AST) -> str | None:
    """The module a `pytest.importorskip("...")` call names, or None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "importorskip"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def _catches_import_errors(handler: ast.ExceptHandler) -> bool:
    names = [handler.type] if not isinstance(handler.type, ast.Tuple) else list(handler.type.elts)
    return handler.type is None or any(isinstance(n, ast.Name) and n.id in IMPORT_ERRORS for n in names)


class _Module:
    """One test module's functions, imports and guards."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text(), str(path))
        self.functions = {n.name: n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(self.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent

    def enclosing(self, node: ast.AST) -> list[ast.AST]:
        found = []
        while node in self.parents:
            node = self.parents[node]
            found.append(node)
        return found

    def in_try(self, node: ast.AST) -> bool:
        """Inside the body of a `try` that catches ImportError."""
        child = node
        for parent in self.enclosing(node):
            if isinstance(parent, ast.Try) and child in parent.body and any(map(_catches_import_errors, parent.handlers)):
                return True
            child = parent
        return False


@cache
def _modules() -> dict[str, _Module]:
    return {path.stem: _Module(path) for path in sorted(TESTS.glob("*.py"))}


def _guards(function: ast.AST, module: _Module, seen: frozenset[str] = frozenset()) -> set[str]:
    """The top-level module names that `function` makes sure of (skipping the test when absent)
    before it goes on: an importorskip, a guarded import, a call to a helper that guards, a
    fixture parameter whose fixture guards."""
    guarded: set[str] = set()
    name = getattr(function, "name", "")
    if name in seen:
        return guarded
    seen = seen | {name}
    for node in ast.walk(function):
        skipped = _importorskip(node)
        if skipped:
            guarded.add(skipped.split(".")[0])
        if module.in_try(node):
            guarded.update(imported.split(".")[0] for imported in _imports(node))
        if isinstance(node, ast.Call):
            for helper, where in _helpers(module, node.func):
                guarded |= _guards(helper, where, seen)
    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        for argument in function.args.args:
            for helper, where in _named(module, argument.arg):
                guarded |= _guards(helper, where, seen)
    return guarded


def _named(module: _Module, name: str) -> list[tuple[ast.AST, _Module]]:
    """The functions called `name` in `module`, else in the tests' helper modules."""
    if name in module.functions:
        return [(module.functions[name], module)]
    return [(m.functions[name], m) for m in _modules().values() if name in m.functions and not m.path.stem.startswith("test_")]


def _helpers(module: _Module, func: ast.AST) -> list[tuple[ast.AST, _Module]]:
    if isinstance(func, ast.Name):
        return _named(module, func.id)
    return []


def unguarded_imports() -> list[str]:
    """`file:line: module` for each import of a module the test extra does not install that
    nothing makes the test skip for when it is absent."""
    found = []
    for module in _modules().values():
        for node in ast.walk(module.tree):
            for imported in _imports(node):
                if _allowed(imported) or module.in_try(node):
                    continue
                top = imported.split(".")[0]
                functions = [f for f in module.enclosing(node) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
                if not any(top in _guards(f, module) for f in functions):
                    found.append(f"tests/{module.path.name}:{node.lineno}: {imported}")
    return found


@pytest.mark.slow  # parses every test module
def test_every_test_import_is_installed_by_the_test_extra_or_skipped_for() -> None:
    assert unguarded_imports() == []


@pytest.mark.slow  # parses every test module
def test_every_importorskip_says_why_and_how_to_install_it() -> None:
    bare = [f"tests/{m.path.name}:{node.lineno}" for m in _modules().values() for node in ast.walk(m.tree)
            if _importorskip(node) and not any(k.arg == "reason" for k in node.keywords)]  # type: ignore[attr-defined]
    assert bare == []


def test_the_check_finds_an_unguarded_consumer_import(tmp_path: Path) -> None:
    """The check itself: a top-level consumer import and an unguarded one in a test are found;
    one after importorskip, in try/except ImportError or behind a guarding fixture is not."""
    source = tmp_path / "test_sample.py"
    source.write_text(
        "import pytest\nimport torch\n\n"
        "def test_a():\n    import ruamel.yaml\n\n"
        "def test_b():\n    pytest.importorskip('ruamel.yaml', reason='r')\n    import ruamel.yaml\n\n"
        "def test_c():\n    try:\n        import pre_commit\n    except ImportError:\n        pytest.skip('r')\n\n"
        "@pytest.fixture\ndef tr():\n    return pytest.importorskip('torchrec', reason='r')\n\n"
        "def test_d(tr):\n    from torchrec.optim import RowWiseAdagrad\n")
    module = _Module(source)
    flagged = [node.lineno for node in ast.walk(module.tree) for imported in _imports(node)
               if not _allowed(imported) and not module.in_try(node)
               and not any(imported.split(".")[0] in _guards(f, module) for f in module.enclosing(node)
                           if isinstance(f, ast.FunctionDef))]
    assert flagged == [2, 5]
    assert _allowed("yaml") and _allowed("hypothesis.strategies") and _allowed("json") and not _allowed("ruamel.yaml")
