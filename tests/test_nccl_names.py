"""The NCCL_* names HW701 knows: NCCL's own (read from the installed nvidia-nccl-cu12 wheel's
library by the consumer test), and "did you mean" only for a name close to one of them."""

from __future__ import annotations

import importlib.metadata
import mmap
import re
from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.formats.nccl_env import CURRENT, KNOWN, NCCL_VERSION, NOT_VARIABLES, closest_known
from hwspec.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
MISSPELT = ROOT / "tests" / "fixtures" / "rules" / "nccl_variable_unknown.yaml"
NCCL_WHEEL = "nvidia-nccl-cu12"


@pytest.mark.parametrize("name, suggestion", [
    ("NCCL_IB_TIMEOUTS", "NCCL_IB_TIMEOUT"),
    ("NCCL_SOCKET_IFNAMES", "NCCL_SOCKET_IFNAME"),
    ("NCCL_NET_GDRLEVEL", "NCCL_NET_GDR_LEVEL"),
    ("NCCL_ALOG", "NCCL_ALGO"),
    ("NCCL_MY_TUNABLE", None),            # was NCCL_SYM_TMA_ENABLE: the shared prefix made it look close
    ("NCCL_TUNER_CONFIG_FILE", None),     # a tuner plugin's variable, not a misspelt NCCL_CONF_FILE
    ("NCCL_BLOCKING_WAIT", None),         # PyTorch's (TORCH_NCCL_BLOCKING_WAIT), not NCCL_COMM_BLOCKING
    ("NCCL_FOO", None),
])
def test_a_suggestion_is_made_only_for_a_name_close_to_a_known_one(name: str, suggestion: str | None) -> None:
    assert closest_known(name) == suggestion


def test_names_aws_and_gcp_set_are_known() -> None:
    assert {"NCCL_NVLSTREE_MAX_CHUNKSIZE", "NCCL_P2P_NET_CHUNKSIZE", "NCCL_TUNER_PLUGIN", "NCCL_NET_PLUGIN"} <= KNOWN


def test_hw701_suggests_a_close_name_and_not_a_far_one(tmp_path: Path) -> None:
    platform = tmp_path / "node.yaml"
    platform.write_text(MISSPELT.read_text().replace(
        "  NCCL_IB_QPS_PER_CONECTION: 2\n",
        "  NCCL_IB_TIMEOUTS: 22\n  NCCL_MY_TUNABLE: 1\n  NCCL_NVLSTREE_MAX_CHUNKSIZE: 131072\n"))
    checked = pipeline.check(platform, load_rules(pipeline.rule_directories()))
    assert [(d.code, d.message, d.hint) for d in checked.diagnostics if d.code == "HW701"] == [
        ("HW701", "environment: NCCL does not read NCCL_IB_TIMEOUTS",
         "did you mean NCCL_IB_TIMEOUT? a variable of a newer NCCL or a plugin is fine: change this rule under 'rules:' with the reason"),
        ("HW701", "environment: NCCL does not read NCCL_MY_TUNABLE",
         "a variable of a newer NCCL or a plugin is fine: change this rule under 'rules:' with the reason"),
    ]


def _library_variables(library: Path) -> set[str]:
    """The NCCL_* variables a libnccl reads: its whole NCCL_* string literals (NUL-terminated,
    after a byte that is not printable, as `strings` splits them) less `NOT_VARIABLES`."""
    with library.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        literals = {m.decode() for m in re.findall(rb"(?<![\x20-\x7e])(NCCL_[A-Z0-9_]+)\x00", data)}
    return {name for name in literals if not re.fullmatch(NOT_VARIABLES, name)}


@pytest.mark.consumer
def test_current_lists_every_variable_the_installed_nccl_reads() -> None:
    try:
        wheel = importlib.metadata.distribution(NCCL_WHEEL)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{NCCL_WHEEL} is not installed (pip install -e '.[consumers]')")
    assert wheel.version == NCCL_VERSION, f"read CURRENT again from {NCCL_WHEEL} {wheel.version} and set NCCL_VERSION"
    (library,) = [Path(str(f.locate())) for f in wheel.files or () if f.name == "libnccl.so.2"]
    missing = sorted(_library_variables(library) - CURRENT)
    assert not missing, f"NCCL {wheel.version} reads names CURRENT lacks: {' '.join(missing)}"
