"""Where the tests find ../shared/data (real machines' dumps and published measurements), read in
place beside the checkout, never copied: `SHARED_DATA / "real-measurements"`. A test that needs
it calls `need(path)`, which skips it when the folder is absent (a checkout elsewhere)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REAL_MEASUREMENTS = SHARED_DATA / "real-measurements"
REAL_MACHINES = SHARED_DATA / "real-machines"


def need(path: Path) -> Path:
    """`path`, or skip the test when it is absent (the tests run from a checkout beside shared/)."""
    if not path.exists():
        pytest.skip(f"{path} is absent (the tests run from a checkout beside shared/)")
    return path
