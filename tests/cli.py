"""`hwspec ARGS` run in this process, for tests whose subject is what a command reports, writes
and exits with, not the process around it: the same `main` the console script calls, without a
Python start-up and hwspec's imports each time (about 0.2 s of CPU a command).

Tests of the process itself (a crash's exit status, what a fresh interpreter imports, signals,
memory limits, scripts that run `hwspec`) keep a subprocess."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from hwspec.cli.commands import main

HANG_GUARD = 120
"""Seconds a command may run before the test fails instead of waiting (a guard, not a measure)."""


@contextlib.contextmanager
def hang_guard(seconds: int, what: str = "hwspec") -> Iterator[None]:
    """Fail the test, rather than wait forever, when the body runs past `seconds` (SIGALRM: a
    guard against a hang, never a measure of speed); the message says `what` ran too long."""

    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"{what} ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_hwspec(*args: str | os.PathLike, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`hwspec ARGS` in `cwd` with `env` added to the environment, in this process: its exit
    status (argparse's usage errors included), stdout and stderr, as a finished process's."""
    argv = [os.fsdecode(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        for name, value in (env or {}).items():
            previous = os.environ.get(name)
            os.environ[name] = value
            stack.callback(_restore, name, previous)
        stack.enter_context(hang_guard(HANG_GUARD))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            status = main(argv)
        except SystemExit as exit:  # argparse's usage errors
            status = exit.code if isinstance(exit.code, int) else 1
    return subprocess.CompletedProcess(["hwspec", *argv], status, out.getvalue(), err.getvalue())


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
