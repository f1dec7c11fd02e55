"""Generators: how one is declared, and how hwspec finds them all.

A generator is a function decorated with `@generator(name)`: a node generator, which takes a
`GenContext`, or, with `scope="cluster"`, a cluster generator, which takes a
`ClusterGenContext`. It returns a plan, `{path inside the platform's output directory: text}`.
The decorator only marks the function, as `@rule` marks a rule: a generator exists where its
module is loaded, and one function finds the generators of a module (`generators_in`), for
hwspec's own and a site's alike. The modules are found in three places:

* hwspec's own: the modules of the `hwspec.generate` package;
* a site's `--generators DIR`: every `*.py` of DIR (its `_*.py` are helpers), loaded by path as
  a site's rules are (`hwspec.rules.modules`: a private package, compiled from source, the
  import contained);
* an installed package's: each entry point of the `hwspec.generators` group names a module
  (`acme = "acme_hwspec.generators"` under `[project.entry-points."hwspec.generators"]` in its
  pyproject.toml), imported contained.

`load_generators` returns them all by name. There is no global registry: a run's generators are
the list it is given (`hwspec.generate.engine.plan_for(..., generators=...)`), by default
`installed_generators()`, hwspec's own and the installed packages', loaded once per process.
A site's generator (`Generator.site`) runs in the rules' sandbox when the run has one, as the
command line's does; what goes wrong in it is E904, a bug in its file.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity, display_path
from hwspec.rules.modules import ModuleDirectories, marked
from hwspec.rules.sandbox import Escape, contained, describe, type_name
from hwspec.text import visible

if TYPE_CHECKING:
    from hwspec.generate.engine import ClusterGenContext, GenContext

Plan = dict[str, str]
"""Generated files: `{path relative to the platform's output directory: text}`."""
Scope = Literal["node", "cluster"]
"""What a generator renders: a node platform ("node") or a cluster ("cluster")."""
NodeGenerator = TypeVar("NodeGenerator", bound=Callable[["GenContext"], Plan])
"""A node generator: a function of a `GenContext` that returns a plan."""
ClusterGenerator = TypeVar("ClusterGenerator", bound=Callable[["ClusterGenContext"], Plan])
"""A cluster generator: a function of a `ClusterGenContext` that returns a plan."""
GeneratorFunc = Callable[[Any], Plan]
"""A generator as `Generator` holds it: it takes the `GenContext` or `ClusterGenContext` that
the engine makes for its scope."""

ENTRY_POINT_GROUP = "hwspec.generators"
"""The entry-point group in which an installed package names its generator modules."""

NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
"""A generator's name (`nccl-topo`): it is written into every file's header and given to `only=`."""

_MARK = "__hwspec_generator__"

GENERATOR_MODULES = ModuleDirectories("hwspec._generators_", "generator", Code.GENERATOR_FAILED, "nothing was generated",
                                      Code.CANNOT_LOAD_GENERATORS)
"""How a `--generators DIR`'s modules load (`hwspec.rules.modules`)."""


@dataclass(frozen=True, slots=True)
class Generator:
    """A generator as a run holds it. Invariants: `name` matches `NAME` and is unique in a run;
    `func` takes the context of `scope`."""

    name: str
    scope: Scope
    func: GeneratorFunc
    origin: str
    """Where it is defined: its module for hwspec's own (`hwspec.generate.nccl`), the file as
    shown for a directory's (`site_generators/inventory.py`), the module and entry point for an
    installed package's (`acme_hwspec.generators, entry point acme`)."""
    site: bool = False
    """A site's (a directory's or a package's, not hwspec's own): it runs in the run's sandbox,
    when there is one, and what goes wrong in it is E904, a bug in `origin`."""

    @property
    def summary(self) -> str:
        """The first paragraph of its docstring, on one line: what it writes."""
        return " ".join((inspect.getdoc(self.func) or "").split("\n\n", 1)[0].split())


@overload
def generator(name: str, scope: Literal["node"] = "node") -> Callable[[NodeGenerator], NodeGenerator]: ...


@overload
def generator(name: str, scope: Literal["cluster"]) -> Callable[[ClusterGenerator], ClusterGenerator]: ...


def generator(name: str, scope: str = "node") -> Callable[[Any], Any]:
    """Mark a function as generator `name` (lower-case words joined by `-`, `nccl-topo`) for
    platforms of `scope`: "node" (the default; it takes a `GenContext`) or "cluster" (a
    `ClusterGenContext`). The decorator is typed by scope: a node generator that takes a
    `ClusterGenContext`, or the other way round, is a type error. It returns the function as
    it was; the function is a generator wherever its module is loaded (`load_generators`)."""
    if not NAME.fullmatch(name):
        raise ValueError(f"generator {name!r}: a name is lower-case letters and digits in words joined by '-' (nccl-topo)")
    if scope not in ("node", "cluster"):
        raise ValueError(f"generator {name}: scope must be 'node' or 'cluster', not {scope!r}")

    def mark(func: Any) -> Any:
        setattr(func, _MARK, (name, scope))
        return func

    return mark


def generators_in(module: types.ModuleType, origin: str, site: bool) -> list[Generator]:
    """The generators defined in `module` (a function marked by `@generator` and imported from
    another module is that module's), by function name."""
    found = []
    for _, func in marked(module, _MARK):
        name, scope = getattr(func, _MARK)
        found.append(Generator(name, scope, func, origin, site))
    return found


@functools.cache
def builtin_generators() -> tuple[Generator, ...]:
    """hwspec's own generators: those of the modules of the `hwspec.generate` package, each
    imported as hwspec's other modules are (once per process)."""
    import hwspec.generate

    found: list[Generator] = []
    for info in pkgutil.iter_modules(hwspec.generate.__path__, "hwspec.generate."):
        module = importlib.import_module(info.name)
        found += generators_in(module, module.__name__, site=False)
    return tuple(found)


def package_generators() -> tuple[list[Generator], list[Diagnostic]]:
    """The generators of the installed packages: every module an entry point of the
    `hwspec.generators` group names, imported contained, by entry point name; and a diagnostic
    for each entry point that fails to import (E904) or names no module of generators (E905)."""
    from importlib.metadata import entry_points

    found: list[Generator] = []
    problems: list[Diagnostic] = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
        where = f"entry point {visible(point.name)} = {visible(point.value)}"
        loaded, failure = _load_entry_point(point.load)
        if failure is not None:
            problems.append(Diagnostic(where, 1, 1, Severity.ERROR, Code.GENERATOR_FAILED, f"the generator module {failure}",
                                       f"nothing was generated; this is a bug in the package that declares {where}, "
                                       "or uninstall it"))
        elif not isinstance(loaded, types.ModuleType):
            problems.append(Diagnostic(where, 1, 1, Severity.ERROR, Code.CANNOT_LOAD_GENERATORS,
                                       f"cannot load generators: the {ENTRY_POINT_GROUP} entry point names a "
                                       f"{visible(type_name(loaded))}, not a module", "name the module that holds the generators"))
        else:
            mine = generators_in(loaded, f"{loaded.__name__}, entry point {visible(point.name)}", site=True)
            if not mine:
                problems.append(Diagnostic(where, 1, 1, Severity.ERROR, Code.CANNOT_LOAD_GENERATORS,
                                           f"cannot load generators: module {visible(loaded.__name__)} holds no @generator function",
                                           "name the module that holds the generators"))
            found += mine
    return found, problems


def _load_entry_point(load: Callable[[], object]) -> tuple[object, str | None]:
    """What an entry point names, imported in a box, or nothing and how its import failed."""
    try:
        with contained():
            try:
                return load(), None
            except Exception as exc:  # a broken package must not give a traceback
                why = describe(exc)  # in the box: describing runs the package's code
    except Escape as exc:
        return None, f"{exc.what} while it was imported"
    return None, f"failed to import: {why}"


def directory_generators(directories: Iterable[Path]) -> tuple[list[Generator], list[Diagnostic]]:
    """The generators of every `*.py` of `directories` (`--generators DIR`; `_*.py` are
    helpers), loaded by path; and a diagnostic for each directory that is not one (E905) and
    each module that fails to import (E904, at the failing line)."""
    found: list[Generator] = []
    problems: list[Diagnostic] = []
    for shown, module in GENERATOR_MODULES.each_module(directories):
        if isinstance(module, Diagnostic):
            problems.append(module)
        else:
            found += generators_in(module, shown, site=True)
    return found, problems


def load_generators(directories: Iterable[Path] = (), packages: bool = True) -> list[Generator]:
    """Every generator of a run, by name: hwspec's own, the installed packages' (the entry
    points of `hwspec.generators`; none when `packages` is false) and those of `directories`
    (`--generators DIR`).

    Raises HwspecError with every problem, and loads nothing then: a directory that is not one
    or an entry point that names no module of generators (E905), a module that fails to import
    (E904), two generators with one name (E906). A run with a generator missing would remove
    its files from the output directory, so none is left out quietly."""
    found = list(builtin_generators())
    problems: list[Diagnostic] = []
    for more, trouble in ((package_generators() if packages else ([], [])), directory_generators(directories)):
        found += more
        problems += trouble
    by_name: dict[str, Generator] = {}
    for current in found:
        clash = by_name.get(current.name)
        if clash is None:
            by_name[current.name] = current
            continue
        code = getattr(current.func, "__code__", None)
        file, line = (display_path(code.co_filename), code.co_firstlineno) if isinstance(code, types.CodeType) else (current.origin, 1)
        problems.append(Diagnostic(file, line, 1, Severity.ERROR, Code.GENERATOR_CLASH,
                                   f"generator {current.name} ({current.origin}) clashes with the one of {clash.origin}",
                                   "give it another name"))
    if problems:
        raise HwspecError(problems)
    return sorted(by_name.values(), key=lambda g: g.name)


@functools.cache
def installed_generators() -> tuple[Generator, ...]:
    """hwspec's own generators and the installed packages' (`load_generators()`), loaded once
    per process: what `plan_for` runs when it is given no generators."""
    return tuple(load_generators())
