"""The rule engine: rules are functions in `rules/builtin/*.py` (and a site's `--rules DIR`), discovered by path.

A rule module is plain Python loaded under a private module name (never `import validators`:
a popular PyPI package has that name); helpers shared by the modules of one directory live in
its `_*.py` files and are imported relatively (`from ._common import gbit`). A site's rule
modules and their helpers are compiled from their `.py` source on every load (`_SourceLoader`):
a `__pycache__/*.pyc` beside them is never read (it could hold code nobody reviewed, with a
header matching the source's size and time) and none is written. The built-in rules are part
of hwspec and load as its other modules do. A rule is any
function defined in a rule module and decorated with `@rule(id, name, severity)`; its
docstring's first line states the invariant and the rest says why it matters (`hwspec
explain ID` prints it). A node rule receives a `Context` (`ctx.platform` a `Platform`,
`ctx.topology` its `Topology`), a cluster rule (`scope="cluster"`) a `ClusterContext`
(`ctx.platform` a `Cluster`, `ctx.topology` its `ClusterTopology`); either yields findings made
with `ctx.finding(...)`. The decorator is typed by scope, so mypy sees a rule that takes the
wrong context.

A platform may change a rule under `rules:` by id or name, with a reason; `off` disables it.

`run_rules` runs rules as plain calls; the containment the command line wants around site
code (`--rule-time-limit`, stdout kept out of the report) is `hwspec.rules.sandbox`, asked for
with `run_rules(..., sandbox=Sandbox(limit))`. Rule modules are always imported contained.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

from hwspec import content
from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity, display_path
from hwspec.formats.environment import STRICT, EnvironmentPolicy
from hwspec.model.cluster import Cluster
from hwspec.model.node import Platform
from hwspec.rules.sandbox import Box, Escape, Sandbox, contained, describe, type_name
from hwspec.spec.translate import nearest
from hwspec.text import visible
from hwspec.topology import ClusterTopology, Topology, topology_of

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["At", "ClusterContext", "Context", "Finding", "Rule", "context_for", "load_rules", "rule", "run_rules", "topology_of"]

NodeCheck = TypeVar("NodeCheck", bound=Callable[["Context"], Iterable["Finding"]])
"""A node rule: a function of a `Context` that yields findings."""
ClusterCheck = TypeVar("ClusterCheck", bound=Callable[["ClusterContext"], Iterable["Finding"]])
"""A cluster rule: a function of a `ClusterContext` that yields findings."""
RuleCheck = Callable[[Any], Iterable["Finding"]]
"""A rule's function as the registry holds it: it takes the `Context` (scope "node") or the
`ClusterContext` (scope "cluster") that `run_rules` makes for its scope."""

At = tuple[str | int | None, ...]
"""Where a finding points, as `ctx.finding(at=...)` takes it: `(entity id, *fields)`, the id of
an entry or a top-level key and then its keys and list indices, e.g. `("gpu0", "link")` or
`("nodes", 2, "platform")`; `(None, *fields)` starts at the file's top."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A registered rule. `scope` is "node" (run once per node platform) or "cluster"."""

    id: str
    name: str
    severity: Severity
    scope: str
    check: RuleCheck
    file: str
    waivable: bool = True
    hint: str | None = None
    """What to do about a finding, for those the rule yields without a hint of their own."""

    @property
    def summary(self) -> str:
        """First line of the docstring: the invariant."""
        return (inspect.getdoc(self.check) or "").split("\n", 1)[0]

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.check) or ""


@overload
def rule(id: str, name: str, severity: str = "error", scope: Literal["node"] = "node",
         waivable: bool = True, hint: str | None = None) -> Callable[[NodeCheck], NodeCheck]: ...


@overload
def rule(id: str, name: str, severity: str = "error", *, scope: Literal["cluster"],
         waivable: bool = True, hint: str | None = None) -> Callable[[ClusterCheck], ClusterCheck]: ...


def rule(id: str, name: str, severity: str = "error", scope: str = "node",
         waivable: bool = True, hint: str | None = None) -> Callable[[Any], Any]:
    """Mark a function as rule `id` (`HW201`) named `name` (`backend-nic-per-gpu`).

    A node rule (`scope="node"`, the default) takes a `Context`, a cluster rule
    (`scope="cluster"`) a `ClusterContext`; either yields `Finding`s made by `ctx.finding`.
    A rule that is not `waivable` (the generation rules: what a generator cannot write) cannot
    be switched off or lowered under a platform's `rules:` (E304): generation would refuse anyway.
    `hint` says what to do about a finding: each finding yielded without a hint of its own gets
    it (every built-in rule has one)."""
    if scope not in ("node", "cluster"):
        raise ValueError(f"rule {id}: scope must be 'node' or 'cluster', not {scope!r}")

    def mark(check: Any) -> Any:
        check.__hwspec_rule__ = (id, name, Severity.parse(severity), scope)
        check.__hwspec_waivable__ = waivable
        check.__hwspec_hint__ = hint
        return check

    return mark


@dataclass(frozen=True, slots=True)
class Finding:
    """What a rule reports: a message, where (a Location), and an optional hint."""

    message: str
    location: Location
    hint: str | None = None


class _Finder:
    """What both contexts share: `topology` (the resolved view the rule checks), its `platform`,
    its networkx `graph`, `policy` and `finding`."""

    topology: Topology | ClusterTopology
    platform: Platform | Cluster
    policy: EnvironmentPolicy
    """The operator's grants for `environment:` in this run (`hwspec.formats.environment`)."""

    def __init__(self, topology: Topology | ClusterTopology, policy: EnvironmentPolicy):
        self.topology = topology
        self.platform = topology.platform
        self.policy = policy

    @property
    def graph(self) -> nx.Graph[str]:
        """The topology's networkx graph (`Topology.graph`, `ClusterTopology.graph`: switch level),
        built on first use (for site rules that want networkx)."""
        return self.topology.graph

    def finding(self, message: str, at: At | Location | None = None, hint: str | None = None) -> Finding:
        """A finding with `message` (and `hint`, a suggestion) located at `at`: a `Location`
        (`platform.locate(...)`), or `(entity_id, *fields)` resolved in the platform file; the
        file's top when None."""
        if isinstance(at, Location):
            location = at
        else:
            entity, *fields = at or (None,)
            location = self.topology.locate(cast("str | None", entity), *cast("list[str | int]", fields))
        return Finding(message, location, hint)


class Context(_Finder):
    """What a node rule sees: `platform`, the resolved node (`hwspec.model.node.Platform`),
    `topology`, its resolved topology with its queries (`hwspec.topology.node.Topology`: paths,
    NUMA nodes, islands, NIC shares, ...), `graph`, its networkx view, and `policy`, the
    operator's `EnvironmentPolicy` for this run (what `environment:` may set)."""

    topology: Topology
    platform: Platform

    def __init__(self, topology: Topology, policy: EnvironmentPolicy = STRICT):
        super().__init__(topology, policy)


class ClusterContext(_Finder):
    """What a cluster rule sees: `platform`, the resolved cluster (`hwspec.model.cluster.Cluster`:
    its node `groups`, each with its node `platform`), `topology`, the cluster's resolved
    topology (`hwspec.topology.cluster.ClusterTopology`: leaf groups, hostlists, per-GPU
    scale-out), `graph`, the switch-level networkx graph, and `policy`. A node platform's own
    `Topology` is `topology_of(group.platform)`."""

    topology: ClusterTopology
    platform: Cluster

    def __init__(self, topology: ClusterTopology, policy: EnvironmentPolicy = STRICT):
        super().__init__(topology, policy)


def context_for(topology: Topology | ClusterTopology, policy: EnvironmentPolicy = STRICT) -> Context | ClusterContext:
    """The context a rule of `topology`'s scope receives: a `Context` for a node's `Topology`,
    a `ClusterContext` for a `ClusterTopology`."""
    if isinstance(topology, ClusterTopology):
        return ClusterContext(topology, policy)
    return Context(topology, policy)


_PACKAGES: dict[str, str] = {}
"""Private package name per rule directory, numbered in the order directories are first loaded."""

_PREFIX = "hwspec._rules_"


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """A rule module's loader: compiles the `.py` source itself, never reads or writes bytecode
    (`SourceFileLoader.get_code` would take a `__pycache__/*.pyc` whose header matches the
    source's size and modification time, whatever code it holds)."""

    def get_code(self, fullname: str) -> types.CodeType:
        return compile(self.get_data(self.path), self.path, "exec", dont_inherit=True)


class _RulesFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of the private rule packages (`from ._common import gbit`) as `.py`
    source files only, ahead of the path finder and its bytecode-reading loaders."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_PREFIX) or fullname.count(".") < 2:
            return None
        parent, _, stem = fullname.rpartition(".")
        package = sys.modules.get(parent)
        for directory in getattr(package, "__path__", None) or ():
            source = Path(directory) / f"{stem}.py"
            if source.is_file():
                return _spec(fullname, source)
            init = Path(directory) / stem / "__init__.py"
            if init.is_file():
                return _spec(fullname, init, package=True)
        return None


def _spec(name: str, path: Path, package: bool = False) -> importlib.machinery.ModuleSpec:
    """The spec of the rule module (or helper package) `name` at `path`: loaded from source, or,
    for hwspec's own rules (`rules/builtin/`), by Python's source loader as every other module
    of hwspec is (its bytecode beside it is hwspec's own, as trusted as the rest of the package)."""
    builtin = path.is_relative_to(content.builtin_dir("rules"))
    loader = importlib.machinery.SourceFileLoader(name, str(path)) if builtin else _SourceLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(
        name, path, loader=loader,
        submodule_search_locations=[str(path.parent)] if package else None)
    assert spec is not None
    return spec


_FINDER = _RulesFinder()


def _package(directory: Path) -> str:
    """A private package for one rule directory, so that its rule modules can import the
    directory's `_*.py` helpers relatively (`from ._common import gbit`) without the
    directory being an importable package (and without clashing with another site's helpers)."""
    name = _PACKAGES.setdefault(str(directory), f"{_PREFIX}{len(_PACKAGES)}")
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    if name not in sys.modules:
        package = types.ModuleType(name, f"rules in {directory}")
        package.__path__ = [str(directory)]
        package.__package__ = name
        sys.modules[name] = package
    return name


def _module_name(path: Path) -> str:
    return f"{_package(path.parent)}.{path.stem}"


def load_rules(directories: Iterable[Path], failures: list[Diagnostic] | None = None) -> list[Rule]:
    """Discover rules in every `*.py` of `directories` (files starting with `_` are helpers).

    A rule module that fails to import (raises, exits, is interrupted, runs past the time limit
    or changes the working directory: the import is contained) is an E900 at the line that
    failed (1 when unknown), and its rules are not loaded. With `failures`, such E900s are
    appended to it and the other modules' rules are returned (the command line reports them
    with the findings); without, they are raised. A directory that is not one (E301) and
    duplicate ids or names (E302) are always raised in a HwspecError: the command is wrong."""
    rules: dict[str, Rule] = {}
    names: dict[str, Rule] = {}
    errors: list[Diagnostic] = []
    failed: list[Diagnostic] = []
    for directory in directories:
        directory = Path(directory).resolve()
        if not directory.is_dir():
            errors.append(Diagnostic(display_path(directory), 1, 1, Severity.ERROR, Code.CANNOT_LOAD_RULES,
                                     "cannot load rules: not a directory"))
            continue
        for path in sorted(directory.glob("*.py")):
            if path.name.startswith("_"):
                continue
            module = _load_module(path)
            if isinstance(module, Diagnostic):
                failed.append(module)
                continue
            shown = display_path(path)
            for _, check in sorted(vars(module).items()):
                meta = getattr(check, "__hwspec_rule__", None)
                if meta is None or not callable(check) or getattr(check, "__module__", None) != module.__name__:
                    continue  # not a rule, or a rule imported from elsewhere (registered there)
                rule_id, rule_name, severity, scope = meta
                hint = getattr(check, "__hwspec_hint__", None)
                found = Rule(rule_id, rule_name, severity, scope, check=check, file=shown,
                             waivable=getattr(check, "__hwspec_waivable__", True), hint=hint if isinstance(hint, str) else None)
                line = check.__code__.co_firstlineno  # the first decorator's line, as inspect gives it
                clash = rules.get(found.id) or names.get(found.name)
                if clash is not None:
                    errors.append(Diagnostic(found.file, line, 1, Severity.ERROR, Code.RULE_CLASH,
                                             f"rule {found.id} {found.name} clashes with {clash.id} {clash.name} in {clash.file}"))
                    continue
                rules[found.id], names[found.name] = found, found
    if failures is not None:
        failures.extend(failed)
    else:
        errors.extend(failed)
    if errors:
        raise HwspecError(errors)
    return sorted(rules.values(), key=lambda r: r.id)


def _load_module(path: Path) -> types.ModuleType | Diagnostic:
    """The rule module at `path`, imported in a box, or its E900 when the import fails."""
    shown = display_path(path)
    hint = f"none of its rules ran; this is a bug in {shown}"
    try:
        with contained():
            try:
                return _import(path)
            except Exception as exc:  # a site's broken rule file must not give a traceback
                line, why = _error_line(exc, path), describe(exc)  # in the box: describing runs the module's code
    except Escape as exc:  # the module's top level exited, was interrupted, hung or moved the working directory
        return Diagnostic(shown, 1, 1, Severity.ERROR, Code.RULE_FAILED,
                          f"the rule module {exc.what} while it was imported", hint)
    return Diagnostic(shown, line, 1, Severity.ERROR, Code.RULE_FAILED, f"the rule module failed to import: {why}", hint)


def _import(path: Path) -> types.ModuleType:
    name = _module_name(path)
    spec = _spec(name, path)
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _error_line(exc: BaseException, path: Path) -> int:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return exc.lineno
    import traceback  # only a rule module that fails to load needs it

    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == path and frame.lineno:
            return frame.lineno
    return 1


def _check_finding(f: Any) -> None:
    """A finding as ctx.finding() makes it: str message and hint, a Location with int positions."""
    if not isinstance(f, Finding):
        raise TypeError(f"yielded {visible(type_name(f))}, not a Finding made by ctx.finding()")
    location = f.location
    if (not isinstance(f.message, str) or not (f.hint is None or isinstance(f.hint, str))
            or not isinstance(location, Location) or not isinstance(location.file, str)
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (location.line, location.col))):
        raise TypeError("yielded a Finding with a non-string message or hint, or a bad location")


def run_rules(topology: Topology | ClusterTopology, rules: list[Rule], scope: str = "node", sandbox: Sandbox | None = None,
              policy: EnvironmentPolicy = STRICT) -> list[Diagnostic]:
    """Run every rule of `scope` on `topology` (a node's `Topology` or a cluster's
    `ClusterTopology`), applying its platform's `rules:` settings; the rules see `policy`, the
    operator's grants for `environment:` (`ctx.policy`).

    Returns diagnostics sorted by position. A rule that raises an exception or yields something
    that is not a Finding is reported as an error finding (E900) with its id, and the run goes
    on. Nothing else is done to a rule: it runs as a plain call, with no signal handler, timer
    or file descriptor changed (and its SystemExit or KeyboardInterrupt goes up, as from any
    function), which is what a library caller or a property test wants.

    With `sandbox` (what the command line asks for: `Sandbox(limit)`, see
    `hwspec.rules.sandbox`), each rule runs contained: one that exits, is interrupted or runs
    past the time limit is reported as E900 too, and what it prints goes to stderr, never into
    the report."""
    by_key = {r.id: r for r in rules} | {r.name: r for r in rules}
    diagnostics: list[Diagnostic] = []
    overrides: dict[str, str] = {}
    platform = topology.platform
    for key, setting in platform.rule_settings.items():
        target = by_key.get(key)
        if target is None:
            guess = nearest(key, by_key)
            where = setting.location
            diagnostics.append(Diagnostic(where.file, where.line, where.col, Severity.ERROR, Code.UNKNOWN_RULE,
                                          f"rules: unknown rule '{key}'",
                                          (f"did you mean '{guess}'? " if guess else "") + "run 'hwspec rules' to list them"))
            continue
        if not target.waivable and setting.severity != target.severity.label:
            where = setting.location
            diagnostics.append(Diagnostic(where.file, where.line, where.col, Severity.ERROR, Code.RULE_CANNOT_BE_CHANGED,
                                          f"rules: {target.id} {target.name} cannot be set to {setting.severity}",
                                          "it reports what generate cannot write, so generate would refuse the "
                                          "platform anyway; fix the platform instead"))
            continue
        overrides[target.id] = setting.severity

    context = context_for(topology, policy)
    chosen = [r for r in rules if r.scope == scope and overrides.get(r.id) != "off"]
    with (sandbox.box() if sandbox is not None else contextlib.nullcontext()) as box:
        for current in chosen:
            diagnostics.extend(_run_one(current, context, box, overrides))
    return sorted(diagnostics, key=Diagnostic.sort_key)


def _run_one(current: Rule, context: Context | ClusterContext, box: Box | None, overrides: dict[str, str]) -> list[Diagnostic]:
    """One rule's findings as diagnostics, or its E900 when it fails or leaves its box (when
    it runs in one)."""
    platform = context.topology.platform
    severity = Severity.parse(overrides[current.id]) if current.id in overrides else current.severity
    try:
        with box.item() if box is not None else contextlib.nullcontext():
            findings, failure = _findings(current, context)
    except Escape as exc:
        where = platform.locate(None)
        return [Diagnostic(where.file, where.line, where.col, Severity.ERROR, Code.RULE_FAILED,
                           f"rule {current.id} {current.name} {exc.what}",
                           f"a rule must only yield findings; this is a bug in {current.file}")]
    if failure is not None:
        where = platform.locate(None)
        return [Diagnostic(where.file, where.line, where.col, Severity.ERROR, Code.RULE_FAILED,
                           f"rule {current.id} {current.name} failed: {failure}",
                           f"this is a bug in {current.file}")]
    return [Diagnostic(f.location.file, f.location.line, f.location.col, severity, current.id, f.message,
                       f.hint if f.hint is not None else current.hint, name=current.name) for f in findings]


def _findings(current: Rule, context: Context | ClusterContext) -> tuple[list[Finding], str | None]:
    """The rule's findings, or no findings and what it raised (`describe`d here, still in the
    rule's box when it has one: the exception's `__str__` is the rule's code too)."""
    try:
        findings = list(current.check(context) or ())
        for f in findings:
            _check_finding(f)
    except Exception as exc:
        return [], describe(exc)
    return findings, None
