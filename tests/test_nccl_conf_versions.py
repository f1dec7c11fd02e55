"""nccl.conf as every NCCL version reads it. Both readers below follow NCCL's own
`setEnvFile` (src/misc/param.cc): before 2.26.2 a line is skipped only when it has no `=`
(so a `#` comment containing `=` sets a junk variable named after the comment); from 2.26.2
a line whose first character is `#` is skipped. Both take the name up to the first `=` and the
value verbatim after it, cut to 1023 characters, and never override (setenv(..., 0))."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hwspec.generate.engine import GenerationError
from hwspec.generate.launch import nccl_conf_text
from tests.cli import run_hwspec

ROOT = Path(__file__).resolve().parent.parent
CONFS = sorted((ROOT / "generated").rglob("nccl.conf"))


def read_nccl_conf(text: str, skips_comments: bool) -> dict[str, str]:
    """What NCCL's setEnvFile puts into the environment (first value of a name wins)."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        if skips_comments and line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if not equals:
            continue
        env.setdefault(name[:1023], value[:1023])
    return env


def expected_settings(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_there_are_nccl_confs_to_check() -> None:
    assert len(CONFS) >= 6


@pytest.mark.parametrize("path", CONFS, ids=lambda p: str(p.relative_to(ROOT / "generated")))
def test_every_nccl_version_reads_only_the_settings(path: Path) -> None:
    text = path.read_text()
    settings = expected_settings(text)
    assert settings and all(name.startswith("NCCL_") for name in settings)
    assert read_nccl_conf(text, skips_comments=False) == settings  # NCCL 2.9 - 2.26.1
    assert read_nccl_conf(text, skips_comments=True) == settings   # NCCL 2.26.2 and later


def test_an_equals_sign_in_a_comment_is_written_so_old_nccl_skips_the_line() -> None:
    text = "# keep rings on one rail (NCCL_CROSS_NIC=0)\nNCCL_CROSS_NIC=0\n"
    safe = nccl_conf_text(text, "x.yaml")
    assert safe == "# keep rings on one rail (NCCL_CROSS_NIC%3D0)\nNCCL_CROSS_NIC=0\n"
    assert read_nccl_conf(safe, skips_comments=False) == {"NCCL_CROSS_NIC": "0"}


@pytest.mark.parametrize("line, problem", [
    ("NCCL IB HCA=mlx5_0", "'NCCL IB HCA=mlx5_0'"),
    ("NCCL_IB_HCA", "'NCCL_IB_HCA'"),
    (" NCCL_IB_HCA=x", "' NCCL_IB_HCA=x'"),
])
def test_a_line_nccl_would_misread_is_refused(line: str, problem: str) -> None:
    with pytest.raises(GenerationError) as error:
        nccl_conf_text(f"# ok\n{line}\n", "platforms/x.yaml")
    assert str(error.value) == (f"platforms/x.yaml: nccl.conf line 2 is not NAME=value as NCCL reads it "
                                f"(name [A-Z0-9_], at most 1023 characters each): {problem}")


def test_a_value_nccl_would_cut_is_refused() -> None:
    with pytest.raises(GenerationError, match="line 1 is not NAME=value"):
        nccl_conf_text("NCCL_IB_HCA==" + "m" * 1023 + "\n", "x.yaml")


def test_a_platform_path_with_an_equals_sign_stays_a_comment(tmp_path: Path) -> None:
    source = ROOT / "platforms" / "zionex.yaml"
    odd = tmp_path / "site=a" / "zionex.yaml"
    odd.parent.mkdir()
    shutil.copy(source, odd)
    shutil.copytree(ROOT / "src/hwspec/data/parts", odd.parent / "parts")
    result = run_hwspec("generate", str(odd), "-o", str(tmp_path / "out"), "--no-svg", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "out" / "zionex" / "nccl.conf").read_text()
    assert "site%3Da" in text
    assert read_nccl_conf(text, skips_comments=False) == expected_settings(text)
