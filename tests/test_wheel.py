"""The built wheel carries the built-in templates, rules and parts (with the prebuilt catalogue), and works from any directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # builds the wheel and a virtual environment


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True)
    (built,) = out.glob("hwspec-*.whl")
    return built


def test_wheel_carries_builtin_content_as_package_data_and_no_other_top_level_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    package = ROOT / "src" / "hwspec"
    for directory, pattern in (("generate/templates", "**/*.j2"), ("rules/builtin", "*.py"), ("data/parts", "*.yaml")):
        source = {p.relative_to(package).as_posix() for p in (package / directory).glob(pattern)}
        packaged = {n.removeprefix("hwspec/") for n in names if n.startswith(f"hwspec/{directory}/")}
        assert source and source <= packaged, f"{directory}: missing {sorted(source - packaged)}"
    assert "hwspec/py.typed" in names
    assert "hwspec/data/parts.jsonl" in names  # the catalogue as it validated: without it every run validates the YAML
    assert {n.split("/", 1)[0] for n in names if "/" in n} == {"hwspec", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    assert not any("__pycache__" in n for n in names)


def test_installed_wheel_validates_and_generates_from_another_directory(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True, text=True)
    work = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "platforms", work / "platforms")
    hwspec = env_dir / "bin" / "hwspec"
    rules = subprocess.run([str(hwspec), "rules"], cwd=work, capture_output=True, text=True, check=True)
    assert "HW201" in rules.stdout
    result = subprocess.run([str(hwspec), "generate", "--no-svg"], cwd=work, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    generated = sorted(p.relative_to(work / "generated") for p in (work / "generated").rglob("*") if p.is_file())
    committed = sorted(p.relative_to(ROOT / "generated") for p in (ROOT / "generated").rglob("*")
                       if p.is_file() and p.suffix != ".svg" and p.parts[-2] in {"zion", "zionex"})
    assert generated and set(committed) <= set(generated)
    for relative in committed:
        assert (work / "generated" / relative).read_text() == (ROOT / "generated" / relative).read_text(), relative
