"""Hypothesis profiles for the property tests (tests/test_properties*.py, tests/test_fuzz.py).

* ``ci`` (the default): derandomized, no example database, few examples, so that the whole
  property suite is reproducible and runs in well under two minutes on a 2-core machine;
* ``fast``: ``ci`` with 3 examples a property instead of 20, for the fast loop a contributor runs before
  every commit (``-m 'not slow and not consumer'``): a run whose ``-m`` leaves out the ``slow``
  tests gets it, so the whole suite (and CI) still runs every property at ``ci``'s count;
* ``deep``: many more examples, random seeds, and the local example database (.hypothesis/),
  so that a failure found once is replayed first next time.

Select one with ``HWSPEC_HYPOTHESIS_PROFILE=deep python -m pytest tests/test_properties*.py
tests/test_fuzz.py`` (the variable wins over the fast loop's choice). The property tests scale
their counts from the profile's ``max_examples``; a test with a count of its own writes it as
``max_examples=pinned(N)`` (tests/examples.py): N under ``ci`` and ``deep``, 3/20 of it under ``fast``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The documentation's shell examples and the generated health checks call `hwspec` as a user with
# the virtual environment active does: the environment running the tests provides it (its console
# script sits beside its python), also when pytest is started as `.venv/bin/python -m pytest`.
_SCRIPTS = str(Path(sys.executable).parent)
if _SCRIPTS not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join([_SCRIPTS, os.environ.get("PATH", "")])

PROFILE_ENV = "HWSPEC_HYPOTHESIS_PROFILE"

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    max_examples=20,
    deadline=None,  # timing on a shared CI box is noise; hangs are caught by explicit time limits
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=400,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("fast", parent=settings.get_profile("ci"), max_examples=3)
settings.load_profile(os.environ.get(PROFILE_ENV, "ci"))


def leaves_out_slow(markexpr: str) -> bool:
    """Whether a `-m` expression leaves out the slow tests (the fast loop's `not slow and not consumer`)."""
    return re.search(r"\bnot\s+slow\b", markexpr) is not None


def pytest_configure(config) -> None:
    # before collection: the property modules read the profile's max_examples when imported
    if PROFILE_ENV not in os.environ and leaves_out_slow(config.option.markexpr or ""):
        settings.load_profile("fast")


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """pytest keeps each test module as it rewrote it for its asserts (tests/__pycache__, ignored
    by git), unless Python is told not to write bytecode (PYTHONDONTWRITEBYTECODE): then every
    run rewrites all of tests/ again in each of its workers, about 4 s of CPU a worker, a tenth of
    the fast loop. Collecting writes them whatever that setting; the tests themselves run under it."""
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = saved
