"""The rule engine: rules are functions in `rules/builtin/*.py` (and a site's `--rules DIR`), discovered by path.

A rule module is plain Python loaded under a private module name (never `import validators`:
a popular PyPI package has that name); helpers shared by the modules of one directory live in
its `_*.py` files and are imported relatively (`from ._common import gbit`). A rule is any
function defined in a rule module and decorated with `@rule(id, name, severity)`; its
docstring's first line states the invariant and the rest says why it matters (`hwspec
explain ID` prints it). It receives a `Context` and yields findings made with `ctx.finding(...)`:
`ctx.platform` is the resolved model, `ctx.topology` the resolved topology with its queries
(`hwspec.topology.node.Topology` for a node, `hwspec.topology.cluster.ClusterTopology` for a cluster).

A platform may change a rule under `rules:` by id or name, with a reason; `off` disables it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import math
import os
import signal
import sys
import threading
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from hwspec.diagnostics import Diagnostic, HwspecError, Severity, display_path
from hwspec.spec.translate import nearest
from hwspec.model.node import Location

RuleCheck = Callable[["Context"], Iterable["Finding"]]

TIME_LIMIT = 10.0
"""Seconds one rule may run (and one rule module may take to import) before it is stopped and
reported as E900. `hwspec validate --rule-time-limit S` and HWSPEC_RULE_TIME_LIMIT change it;
0 means no limit."""


_chosen_limit: float | None = None


def set_time_limit(seconds: float | None) -> None:
    """Set the per-rule time limit for this process (the CLI's --rule-time-limit); None resets."""
    global _chosen_limit
    _chosen_limit = seconds


def time_limit() -> float:
    """The per-rule time limit in force: the one set by set_time_limit, else
    HWSPEC_RULE_TIME_LIMIT when set, else TIME_LIMIT."""
    if _chosen_limit is not None:
        return _chosen_limit
    text = os.environ.get("HWSPEC_RULE_TIME_LIMIT")
    if text is None:
        return TIME_LIMIT
    try:
        value = float(text)
    except ValueError:
        return TIME_LIMIT
    return value if value >= 0 and math.isfinite(value) else TIME_LIMIT


class RuleTimeout(BaseException):
    """Raised inside a rule that ran past its time limit. A BaseException, so that the rule's
    own `except Exception:` does not swallow it."""


class _Escape(Exception):
    """A rule (or rule module) left its box: `what` says how (SystemExit, KeyboardInterrupt,
    the time limit, ...)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


@contextlib.contextmanager
def contained(limit: float | None = None) -> Iterator[None]:
    """Run site code (a rule, or a rule module's import) in a box.

    Inside, `sys.stdout` and file descriptor 1 are the process's stderr, so `print`,
    `os.write(1, ...)` or a child process in a rule cannot corrupt a JSON or SARIF report; `sys.stdout`/`sys.stderr` are restored afterwards whatever the code did to
    them. `SystemExit`, `KeyboardInterrupt` that is not a real Ctrl-C, `GeneratorExit` and
    any other BaseException become `_Escape`; running past `limit` seconds (SIGALRM, main
    thread only; repeated every 0.1 s in case the code swallows the first) becomes `_Escape`
    too. A real Ctrl-C (SIGINT) still stops hwspec. Ordinary exceptions pass through."""
    with _Box(limit) as box, box.item():
        yield


class _Box:
    """`contained` for many pieces of site code in a row (the rules of one platform): the
    signal handlers, the caller's paused timer and file descriptor 1 are set up once, and each
    `item()` only arms and disarms its own time limit and puts stdout back."""

    def __init__(self, limit: float | None = None):
        self.limit = time_limit() if limit is None else limit
        self.main = threading.current_thread() is threading.main_thread()
        self.interrupted = False
        self.outer_deadline: float | None = None
        self.outer_interval = 0.0

    def __enter__(self) -> "_Box":
        self.saved_out, self.saved_err = sys.stdout, sys.stderr
        if self.main:
            def on_alarm(signum, frame):
                if (self.outer_deadline is not None and time.monotonic() >= self.outer_deadline - 0.001
                        and callable(self.previous_alarm)):
                    self.previous_alarm(signum, frame)  # the caller's own timer (a test's hang guard) comes first
                raise RuleTimeout()

            def on_interrupt(signum, frame):
                self.interrupted = True
                raise KeyboardInterrupt

            self.previous_int = signal.signal(signal.SIGINT, on_interrupt)
            outer_delay, self.outer_interval = signal.setitimer(signal.ITIMER_REAL, 0, 0)  # read (and pause) a caller's timer
            if outer_delay:
                self.outer_deadline = time.monotonic() + outer_delay
            self.previous_alarm = signal.signal(signal.SIGALRM, on_alarm)
        self.saved_fd = _divert_stdout_fd()
        return self

    def __exit__(self, *exc_info) -> None:
        if self.main:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, self.previous_alarm)
            if self.outer_deadline is not None:  # give the caller's timer back what is left of it
                signal.setitimer(signal.ITIMER_REAL, max(self.outer_deadline - time.monotonic(), 0.001), self.outer_interval)
            signal.signal(signal.SIGINT, self.previous_int)
        sys.stdout, sys.stderr = self.saved_out, self.saved_err
        _restore_stdout_fd(self.saved_fd)

    @contextlib.contextmanager
    def item(self) -> Iterator[None]:
        """One piece of site code, with the box's rules (see `contained`)."""
        timed = False
        if self.main:
            outer_left = None if self.outer_deadline is None else max(self.outer_deadline - time.monotonic(), 0.001)
            first = min(d for d in (self.limit, outer_left) if d) if (self.limit or outer_left) else 0
            if first:
                timed = True
                signal.setitimer(signal.ITIMER_REAL, first, 0.1)
        if self.saved_fd is not None:
            with contextlib.suppress(OSError):
                os.dup2(2, 1)  # again: the previous piece may have moved it
        sys.stdout = self.saved_err
        try:
            yield
        except RuleTimeout:
            raise _Escape(f"ran longer than the {self.limit:g} s time limit") from None
        except KeyboardInterrupt:
            if self.interrupted:
                raise
            raise _Escape("raised KeyboardInterrupt") from None
        except SystemExit as exc:
            raise _Escape(f"called sys.exit({exc.code!r})") from None
        except Exception:
            raise
        except BaseException as exc:
            raise _Escape(f"raised {type(exc).__name__}") from None
        finally:
            if timed:
                signal.setitimer(signal.ITIMER_REAL, 0, 0)
            sys.stdout, sys.stderr = self.saved_err, self.saved_err


def _divert_stdout_fd() -> int | None:
    """Point file descriptor 1 at stderr (what a rule writes with os.write(1, ...) or a child
    process prints stays out of the report); returns a copy of the old descriptor to restore."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
        return saved
    except (OSError, ValueError, AttributeError):
        return None


def _restore_stdout_fd(saved: int | None) -> None:
    if saved is None:
        return
    with contextlib.suppress(OSError):
        os.dup2(saved, 1)
    os.close(saved)


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

    @property
    def summary(self) -> str:
        """First line of the docstring: the invariant."""
        return (inspect.getdoc(self.check) or "").split("\n", 1)[0]

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.check) or ""


def rule(id: str, name: str, severity: str = "error", scope: str = "node",
         waivable: bool = True) -> Callable[[RuleCheck], RuleCheck]:
    """Mark a function as rule `id` (`HW201`) named `name` (`backend-nic-per-gpu`).

    A rule that is not `waivable` (the generation rules: what a generator cannot write) cannot
    be switched off or lowered under a platform's `rules:` (E304): generation would refuse anyway."""
    if scope not in ("node", "cluster"):
        raise ValueError(f"rule {id}: scope must be 'node' or 'cluster', not {scope!r}")

    def mark(check: RuleCheck) -> RuleCheck:
        check.__hwspec_rule__ = (id, name, Severity.parse(severity), scope)  # type: ignore[attr-defined]
        check.__hwspec_waivable__ = waivable  # type: ignore[attr-defined]
        return check

    return mark


@dataclass(frozen=True, slots=True)
class Finding:
    """What a rule reports: a message, where (a Location), and an optional hint."""

    message: str
    location: Location
    hint: str | None = None


class Context:
    """What a rule sees: `topology`, the resolved topology of a node or cluster with its
    queries (paths, NUMA nodes, islands, NIC shares, ...), and `platform`, its model."""

    def __init__(self, topology: Any):
        self.topology = topology
        self.platform = topology.platform

    @property
    def graph(self) -> Any:
        """The topology's networkx graph, built on first use (for site rules that want networkx)."""
        return self.topology.graph

    def finding(self, message: str, at: tuple | Location | None = None, hint: str | None = None) -> Finding:
        """A finding located at `at`: a Location, or `(entity_id, *fields)` resolved in the platform."""
        if isinstance(at, Location):
            location = at
        else:
            entity, *fields = at or (None,)
            location = self.topology.locate(entity, *fields)
        return Finding(message, location, hint)


_PACKAGES: dict[str, str] = {}
"""Private package name per rule directory, numbered in the order directories are first loaded."""


def _package(directory: Path) -> str:
    """A private package for one rule directory, so that its rule modules can import the
    directory's `_*.py` helpers relatively (`from ._common import gbit`) without the
    directory being an importable package (and without clashing with another site's helpers)."""
    name = _PACKAGES.setdefault(str(directory), f"hwspec._rules_{len(_PACKAGES)}")
    if name not in sys.modules:
        package = types.ModuleType(name, f"rules in {directory}")
        package.__path__ = [str(directory)]
        package.__package__ = name
        sys.modules[name] = package
    return name


def _module_name(path: Path) -> str:
    return f"{_package(path.parent)}.{path.stem}"


def load_rules(directories: Iterable[Path]) -> list[Rule]:
    """Discover rules in every `*.py` of `directories` (files starting with `_` are helpers).

    Raises HwspecError for a module that fails to import and for duplicate ids or names."""
    rules: dict[str, Rule] = {}
    names: dict[str, Rule] = {}
    errors: list[Diagnostic] = []
    for directory in directories:
        directory = Path(directory).resolve()
        if not directory.is_dir():
            errors.append(Diagnostic(display_path(directory), 1, 1, Severity.ERROR, "E301",
                                     "cannot load rules: not a directory"))
            continue
        for path in sorted(directory.glob("*.py")):
            if path.name.startswith("_"):
                continue
            try:
                with contained():
                    module = _import(path)
            except _Escape as exc:  # the module's top level exited, was interrupted or hung
                errors.append(Diagnostic(display_path(path), 1, 1, Severity.ERROR, "E301",
                                         f"cannot load rules: the module {exc.what} while it was imported"))
                continue
            except Exception as exc:  # a site's broken rule file must not give a traceback
                line = _error_line(exc, path)
                errors.append(Diagnostic(display_path(path), line, 1, Severity.ERROR, "E301",
                                         f"cannot load rules: {type(exc).__name__}: {_short(str(exc))}"))
                continue
            shown = display_path(path)
            for _, check in sorted(vars(module).items()):
                meta = getattr(check, "__hwspec_rule__", None)
                if meta is None or not callable(check) or getattr(check, "__module__", None) != module.__name__:
                    continue  # not a rule, or a rule imported from elsewhere (registered there)
                found = Rule(*meta, check=check, file=shown, waivable=getattr(check, "__hwspec_waivable__", True))
                line = check.__code__.co_firstlineno  # the first decorator's line, as inspect gives it
                clash = rules.get(found.id) or names.get(found.name)
                if clash is not None:
                    errors.append(Diagnostic(found.file, line, 1, Severity.ERROR, "E302",
                                             f"rule {found.id} {found.name} clashes with {clash.id} {clash.name} in {clash.file}"))
                    continue
                rules[found.id], names[found.name] = found, found
    if errors:
        raise HwspecError(errors)
    return sorted(rules.values(), key=lambda r: r.id)


def _import(path: Path):
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
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


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _check_finding(f: Any) -> None:
    """A finding as ctx.finding() makes it: str message and hint, a Location with int positions."""
    if not isinstance(f, Finding):
        raise TypeError(f"yielded {type(f).__name__}, not a Finding made by ctx.finding()")
    location = f.location
    if (not isinstance(f.message, str) or not (f.hint is None or isinstance(f.hint, str))
            or not isinstance(location, Location) or not isinstance(location.file, str)
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (location.line, location.col))):
        raise TypeError("yielded a Finding with a non-string message or hint, or a bad location")


def run_rules(topology: Any, rules: list[Rule], scope: str = "node") -> list[Diagnostic]:
    """Run every rule of `scope` on `topology` (a node's `Topology` or a cluster's
    `ClusterTopology`), applying its platform's `rules:` settings.

    Returns diagnostics sorted by position. A rule runs `contained`: one that raises, exits,
    is interrupted, runs past the time limit or yields something that is not a Finding is
    reported as an error finding (E900) with its id, and the run goes on; what it prints goes
    to stderr, never into the report."""
    by_key = {r.id: r for r in rules} | {r.name: r for r in rules}
    diagnostics: list[Diagnostic] = []
    overrides: dict[str, str] = {}
    platform = topology.platform
    for key, setting in platform.rule_settings.items():
        target = by_key.get(key)
        if target is None:
            guess = nearest(key, by_key)
            where = setting.location
            diagnostics.append(Diagnostic(where.file, where.line, where.col, Severity.ERROR, "E303",
                                          f"rules: unknown rule '{key}'",
                                          (f"did you mean '{guess}'? " if guess else "") + "run 'hwspec rules' to list them"))
            continue
        if not target.waivable and setting.severity != target.severity.label:
            where = setting.location
            diagnostics.append(Diagnostic(where.file, where.line, where.col, Severity.ERROR, "E304",
                                          f"rules: {target.id} {target.name} cannot be set to {setting.severity}",
                                          "it reports what generate cannot write, so generate would refuse the "
                                          "platform anyway; fix the platform instead"))
            continue
        overrides[target.id] = setting.severity

    context = Context(topology)
    chosen = [r for r in rules if r.scope == scope and overrides.get(r.id) != "off"]
    with _Box() as box:
        for current in chosen:
            diagnostics.extend(_run_one(current, context, box, overrides))
    return sorted(diagnostics, key=Diagnostic.sort_key)


def _run_one(current: Rule, context: Context, box: _Box, overrides: dict[str, str]) -> list[Diagnostic]:
    """One rule's findings as diagnostics, or its E900 when it fails or leaves its box."""
    platform = context.topology.platform
    severity = Severity.parse(overrides[current.id]) if current.id in overrides else current.severity
    try:
        with box.item():
            findings = list(current.check(context) or ())
        for f in findings:
            _check_finding(f)
    except _Escape as exc:
        where = platform.locate(None)
        return [Diagnostic(where.file, where.line, where.col, Severity.ERROR, "E900",
                           f"rule {current.id} {current.name} {exc.what}",
                           f"a rule must only yield findings; this is a bug in {current.file}")]
    except Exception as exc:
        where = platform.locate(None)
        return [Diagnostic(where.file, where.line, where.col, Severity.ERROR, "E900",
                           f"rule {current.id} {current.name} failed: {type(exc).__name__}: {_short(str(exc))}",
                           f"this is a bug in {current.file}")]
    return [Diagnostic(f.location.file, f.location.line, f.location.col, severity, current.id, f.message, f.hint,
                       name=current.name) for f in findings]
