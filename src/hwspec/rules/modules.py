"""Site code loaded by path: the `*.py` files of a directory, each imported as a module of a
private package, contained. Rules (`--rules DIR`, and hwspec's own `rules/builtin/`) and
generators (`--generators DIR`) are loaded so, each kind by its own `ModuleDirectories`.

A directory's modules live in a private package (`hwspec._rules_0`, `hwspec._generators_0`, one
per directory, numbered in the order directories are first loaded), never under their own
name (never `import validators`: a popular PyPI package has that name), so that they can import
the directory's `_*.py` helpers relatively (`from ._common import gbit`) without the directory
being an importable package, and without clashing with another site's helpers.

A site's modules and their helpers are compiled from their `.py` source on every load
(`_SourceLoader`): a `__pycache__/*.pyc` beside them is never read (it could hold code nobody
reviewed, with a header matching the source's size and time) and none is written. A trusted
directory (hwspec's own rules) loads with Python's source loader, as every module of hwspec does.

Importing a module is contained (`hwspec.rules.sandbox.contained`): one that raises, exits, is
interrupted, runs past the time limit or changes the working directory is a `Diagnostic` of the
kind's failure code at the line that failed (1 when unknown), never a traceback.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hwspec.diagnostics import Code, Diagnostic, Severity, display_path
from hwspec.rules.sandbox import Escape, contained, describe

_PACKAGES: dict[str, str] = {}
"""Private package name per (prefix, directory), numbered per prefix in the order first loaded."""

_PREFIXES: set[str] = set()
"""The prefixes of the private packages (`hwspec._rules_`), for `_SiteFinder`."""


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """A site module's loader: compiles the `.py` source itself, never reads or writes bytecode
    (`SourceFileLoader.get_code` would take a `__pycache__/*.pyc` whose header matches the
    source's size and modification time, whatever code it holds)."""

    def get_code(self, fullname: str) -> types.CodeType:
        return compile(self.get_data(self.path), self.path, "exec", dont_inherit=True)


class _SiteFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of the private packages (`from ._common import gbit`) as `.py` source
    files only, ahead of the path finder and its bytecode-reading loaders."""

    def __init__(self) -> None:
        self.trusted: list[Path] = []

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.count(".") < 2 or not fullname.startswith(tuple(_PREFIXES)):
            return None
        parent, _, stem = fullname.rpartition(".")
        package = sys.modules.get(parent)
        for directory in getattr(package, "__path__", None) or ():
            source = Path(directory) / f"{stem}.py"
            if source.is_file():
                return self.spec(fullname, source)
            init = Path(directory) / stem / "__init__.py"
            if init.is_file():
                return self.spec(fullname, init, package=True)
        return None

    def spec(self, name: str, path: Path, package: bool = False) -> importlib.machinery.ModuleSpec:
        """The spec of module `name` at `path`: compiled from source, or, below a trusted
        directory, by Python's source loader."""
        trusted = any(path.is_relative_to(directory) for directory in self.trusted)
        loader = importlib.machinery.SourceFileLoader(name, str(path)) if trusted else _SourceLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, path, loader=loader,
                                                      submodule_search_locations=[str(path.parent)] if package else None)
        assert spec is not None
        return spec


_FINDER = _SiteFinder()


class ModuleDirectories:
    """How one kind of site code is loaded by path: its private packages are `prefix<n>`
    (`hwspec._rules_`), a failed import is a `failed` diagnostic (`Code.RULE_FAILED`) saying
    "the `what` module ..." with `consequence` before its hint's "this is a bug in FILE", and
    modules below the directory `trusted()` gives (hwspec's own) load as hwspec's other modules do."""

    def __init__(self, prefix: str, what: str, failed: Code, consequence: str, not_a_directory: Code,
                 trusted: Callable[[], Path] | None = None):
        self.prefix, self.what, self.failed, self.consequence, self.trusted = prefix, what, failed, consequence, trusted
        self.not_a_directory = not_a_directory

    def modules(self, directory: Path) -> list[Path]:
        """The modules of `directory`, sorted: every `*.py` but the `_*.py` helpers."""
        return [path for path in sorted(directory.glob("*.py")) if not path.name.startswith("_")]

    def each_module(self, directories: Iterable[Path]) -> Iterator[tuple[str, types.ModuleType | Diagnostic]]:
        """The modules of each of `directories` in turn (`modules`), each as (its path as shown,
        the module or the diagnostic of its failure, `load`); a directory that is not one is a
        `not_a_directory` diagnostic ("cannot load rules: not a directory") in its place."""
        for directory in directories:
            directory = Path(directory).resolve()
            if not directory.is_dir():
                yield display_path(directory), Diagnostic(display_path(directory), 1, 1, Severity.ERROR, self.not_a_directory,
                                                          f"cannot load {self.what}s: not a directory")
                continue
            for path in self.modules(directory):
                yield display_path(path), self.load(path)

    def load(self, path: Path) -> types.ModuleType | Diagnostic:
        """The module at `path` (resolved), imported in a box, or the diagnostic of its failure."""
        shown = display_path(path)
        hint = f"{self.consequence}; this is a bug in {shown}"
        try:
            with contained():
                try:
                    return self._import(path)
                except Exception as exc:  # a site's broken file must not give a traceback
                    line, why = _error_line(exc, path), describe(exc)  # in the box: describing runs the module's code
        except Escape as exc:  # the module's top level exited, was interrupted, hung or moved the working directory
            return Diagnostic(shown, 1, 1, Severity.ERROR, self.failed, f"the {self.what} module {exc.what} while it was imported", hint)
        return Diagnostic(shown, line, 1, Severity.ERROR, self.failed, f"the {self.what} module failed to import: {why}", hint)

    def _import(self, path: Path) -> types.ModuleType:
        if self.trusted is not None and self.trusted() not in _FINDER.trusted:
            _FINDER.trusted.append(self.trusted())
        name = f"{self._package(path.parent)}.{path.stem}"
        spec = _FINDER.spec(name, path)
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module

    def _package(self, directory: Path) -> str:
        """The private package of `directory`, made on first use."""
        key = f"{self.prefix}:{directory}"
        if key not in _PACKAGES:
            _PACKAGES[key] = f"{self.prefix}{sum(k.startswith(self.prefix + ':') for k in _PACKAGES)}"
        name = _PACKAGES[key]
        _PREFIXES.add(self.prefix)
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
        if name not in sys.modules:
            package = types.ModuleType(name, f"{self.what}s in {directory}")
            package.__path__ = [str(directory)]
            package.__package__ = name
            sys.modules[name] = package
        return name


def marked(module: types.ModuleType, mark: str) -> Iterator[tuple[str, Any]]:
    """(name, function) for each callable of `module` that carries attribute `mark` (set by a
    decorator: `@rule`, `@generator`) and is defined in it, by name (one imported from another
    module is that module's)."""
    for name, value in sorted(vars(module).items()):
        if callable(value) and getattr(value, mark, None) is not None and getattr(value, "__module__", None) == module.__name__:
            yield name, value


def _error_line(exc: BaseException, path: Path) -> int:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return exc.lineno
    import traceback  # only a module that fails to load needs it

    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == path and frame.lineno:
            return frame.lineno
    return 1
