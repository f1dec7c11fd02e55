"""The rule sandbox: containment for site code (a rule, or a rule module's import), which a
command asks for.

`run_rules` runs rules as plain calls unless it is given a `Sandbox`; the command line gives it
one with its `--rule-time-limit` (`hwspec validate`, `generate`, ... through `hwspec.pipeline`),
so a site rule that prints, exits, is interrupted or hangs is reported as E900 and cannot spoil
a JSON or SARIF report. Loading rule modules (`load_rules`) is always contained.

Inside the box (`contained`, `Box`): `sys.stdout` and file descriptor 1 are the process's
stderr; SystemExit, a KeyboardInterrupt that is not a real Ctrl-C and any other BaseException
become `Escape`; running past the time limit (SIGALRM, main thread only) becomes `Escape` too;
so does changing the working directory, which is put back first. `describe` turns whatever a
rule raised into one line of printable text, however its `__str__` or its type's name behave.

Containment is against mistakes, not malice: site code runs in hwspec's own interpreter with
its rights. Out of scope, by design: `os._exit` and `os.fork` (they act on the process, below
anything Python can catch), signals other than SIGALRM and SIGINT (a handler a rule installs
stays installed), closing or moving file descriptor 2, threads a rule leaves running (what they
print meanwhile is not diverted; the `hwspec` program ends them with the process), changes to
shared modules (`sys.modules`, `json`, hwspec's own functions), and a C call that holds the GIL
(a catastrophic `re` pattern is interruptible, `sum(range(10**12))` is not): the time limit
is a Python signal handler, which runs only between bytecodes, so such a call is stopped, and
reported, only when it returns. Bounding it would take killing the process from a C-level timer
(and losing the report) or a process per rule (copying the topology to each): neither is cheap.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

from hwspec.text import visible

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


class Escape(Exception):
    """A rule (or rule module) left its box: `what` says how (SystemExit, KeyboardInterrupt,
    the time limit, a changed working directory, ...)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


@contextlib.contextmanager
def contained(limit: float | None = None) -> Iterator[None]:
    """Run site code (a rule, or a rule module's import) in a box.

    Inside, `sys.stdout` and file descriptor 1 are the process's stderr, so `print`,
    `os.write(1, ...)` or a child process in a rule cannot corrupt a JSON or SARIF report;
    `sys.stdout`/`sys.stderr` are restored afterwards whatever the code did to them.
    `SystemExit`, `KeyboardInterrupt` that is not a real Ctrl-C, `GeneratorExit` and any other
    BaseException become `Escape`; running past `limit` seconds (SIGALRM, main
    thread only; repeated every 0.1 s in case the code swallows the first) becomes `Escape`
    too. So does leaving another working directory than the one it was given (which is put
    back first, so that relative paths after it, `generate --output` among them, mean what they
    meant). A real Ctrl-C (SIGINT) still stops hwspec. Ordinary exceptions pass through."""
    with Box(limit) as box, box.item():
        yield


class Box:
    """`contained` for many pieces of site code in a row (the rules of one platform): the
    signal handlers, the caller's paused timer and file descriptor 1 are set up once, and each
    `item()` only arms and disarms its own time limit and puts stdout back."""

    def __init__(self, limit: float | None = None):
        self.limit = time_limit() if limit is None else limit
        self.main = threading.current_thread() is threading.main_thread()
        self.interrupted = False
        self.outer_deadline: float | None = None
        self.outer_interval = 0.0

    def __enter__(self) -> Box:
        self.saved_out, self.saved_err = sys.stdout, sys.stderr
        if self.main:
            self.previous_int = signal.signal(signal.SIGINT, self._on_interrupt)
            outer_delay, self.outer_interval = signal.setitimer(signal.ITIMER_REAL, 0, 0)  # read (and pause) a caller's timer
            if outer_delay:
                self.outer_deadline = time.monotonic() + outer_delay
            self.previous_alarm = signal.signal(signal.SIGALRM, self._on_alarm)
        self.saved_fd = _divert_stdout_fd()
        self.cwd = _WorkingDirectory.here()
        return self

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if (self.outer_deadline is not None and time.monotonic() >= self.outer_deadline - 0.001
                and callable(self.previous_alarm)):
            self.previous_alarm(signum, frame)  # the caller's own timer (a test's hang guard) comes first
        raise RuleTimeout()

    def _on_interrupt(self, signum: int, frame: FrameType | None) -> None:
        self.interrupted = True
        raise KeyboardInterrupt

    def __exit__(self, *exc_info: object) -> None:
        if self.main:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, self.previous_alarm)
            if self.outer_deadline is not None:  # give the caller's timer back what is left of it
                signal.setitimer(signal.ITIMER_REAL, max(self.outer_deadline - time.monotonic(), 0.001), self.outer_interval)
            signal.signal(signal.SIGINT, self.previous_int)
        sys.stdout, sys.stderr = self.saved_out, self.saved_err
        _restore_stdout_fd(self.saved_fd)
        if self.cwd is not None:
            self.cwd.close()

    @contextlib.contextmanager
    def item(self) -> Iterator[None]:
        """One piece of site code, with the box's rules (see `contained`)."""
        timed = False
        if self.main:  # again: the previous piece may have installed its own handlers
            signal.signal(signal.SIGALRM, self._on_alarm)
            signal.signal(signal.SIGINT, self._on_interrupt)
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
            raise Escape(f"ran longer than the {self.limit:g} s time limit") from None
        except KeyboardInterrupt:
            if self.interrupted:
                raise
            raise Escape("raised KeyboardInterrupt") from None
        except SystemExit as exc:
            raise Escape(f"called sys.exit({_exit_code(exc.code)})") from None
        except Exception:
            raise
        except BaseException as exc:
            raise Escape(f"raised {visible(type_name(exc))}") from None
        finally:
            if timed:
                signal.setitimer(signal.ITIMER_REAL, 0, 0)
            sys.stdout, sys.stderr = self.saved_err, self.saved_err
            moved = self.cwd is not None and self.cwd.put_back()
        if moved:
            raise Escape("changed the working directory (put back)")


class _WorkingDirectory:
    """The working directory a box was entered in, held open, so that it can be put back
    even when site code renamed the path to it."""

    def __init__(self, fd: int):
        self.fd = fd
        self.identity = _identity(os.fstat(fd))

    @classmethod
    def here(cls) -> _WorkingDirectory | None:
        """The current one; None when it cannot be opened (nothing is put back then)."""
        try:
            return cls(os.open(".", os.O_RDONLY | os.O_DIRECTORY))
        except OSError:
            return None

    def put_back(self) -> bool:
        """Go back to it; whether the working directory had changed."""
        try:
            if _identity(os.stat(".")) == self.identity:
                return False
        except OSError:
            pass  # removed under us: go back all the same
        os.fchdir(self.fd)
        return True

    def close(self) -> None:
        os.close(self.fd)


def _identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


def describe(exc: BaseException, limit: int = 300) -> str:
    """`Type: text` for an exception raised by site code: one line of printable text (`visible`),
    at most about `limit` characters, whatever its `__str__` does or its type is named: a
    `__str__` that raises or returns no str shows as `<str() failed>`. Run it where the site code
    ran (in its box, when it has one), as the exception's own code runs here too."""
    try:
        text = str.__str__(str(exc))  # a str subclass returned by __str__: its plain characters
    except Exception:
        text = "<str() failed>"
    return _short(visible(f"{type_name(exc)}: {text}"), limit)


def type_name(value: object) -> str:
    """The name of `value`'s type, a plain str (a metaclass may make `__name__` anything)."""
    try:
        name = type(value).__name__
    except Exception:
        name = None
    return str.__str__(name) if isinstance(name, str) else "<unnamed type>"


def _exit_code(code: object) -> str:
    """sys.exit's argument, shown: its repr when it is None, an int or a str, else its type."""
    if code is None or type(code) in (int, str):
        try:
            return _short(repr(code), 80)
        except ValueError:  # an int too long to convert to text
            return "a very large int"
    return f"a {visible(type_name(code))} object"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


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


@dataclass(frozen=True)
class Sandbox:
    """What `run_rules(..., sandbox=Sandbox(limit))` asks for: every rule run contained (see
    `contained`), each with `limit` seconds. `limit` None means the time limit in force when a
    run starts (`time_limit()`: `set_time_limit`, HWSPEC_RULE_TIME_LIMIT, else TIME_LIMIT); 0
    means no limit. The command line asks for it; library callers run rules plainly."""

    limit: float | None = None

    def box(self) -> Box:
        """A new box for one run of rules (one platform's): enter it once, then `item()` per rule."""
        return Box(self.limit)
