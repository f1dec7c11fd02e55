"""The rule engine: rules are functions in `rules/builtin/*.py` (and a site's `--rules DIR`), discovered by path.

A rule module is plain Python loaded by path under a private module name, its helpers in the
directory's `_*.py` files imported relatively (`from ._common import gbit`); a site's are
compiled from source, never from bytecode beside them, and the built-in rules are part of
hwspec and load as its other modules do (`hwspec.rules.modules`, which loads a site's
generators too). A rule is any
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
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

from hwspec import content
from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity
from hwspec.formats.environment import STRICT, EnvironmentPolicy
from hwspec.model.cluster import Cluster
from hwspec.model.node import Platform
from hwspec.rules.modules import ModuleDirectories, marked
from hwspec.rules.sandbox import Box, Escape, Sandbox, describe, type_name
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


RULE_MODULES = ModuleDirectories("hwspec._rules_", "rule", Code.RULE_FAILED, "none of its rules ran", Code.CANNOT_LOAD_RULES,
                                 trusted=lambda: content.builtin_dir("rules"))
"""How rule modules load (`hwspec.rules.modules`): hwspec's own from `rules/builtin/` as its other
modules do, a site's compiled from source; an import that fails is an E900."""


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
    for shown, module in RULE_MODULES.each_module(directories):
        if isinstance(module, Diagnostic):
            (errors if module.code is Code.CANNOT_LOAD_RULES else failed).append(module)
            continue
        for _, check in marked(module, "__hwspec_rule__"):  # a rule imported from elsewhere is registered there
            rule_id, rule_name, severity, scope = check.__hwspec_rule__
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
