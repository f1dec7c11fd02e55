"""The JSON Schema for editors, and the command line's basic contract."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from hwspec.cli.commands import main
from hwspec.spec.json_schema import platform_schema, schema_text
from tests.cli import run_hwspec

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "platforms").glob("*.yaml")) + sorted((ROOT / "src/hwspec/data/parts").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft202012Validator(platform_schema())


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_schema_accepts_every_shipped_file(validator, path):
    assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == []


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_files_point_editors_at_the_schema(path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=") and first.endswith("schema/hwspec.schema.json")
    assert (path.parent / first.split("=", 1)[1]).resolve() == ROOT / "schema" / "hwspec.schema.json"


def test_schema_rejects_unknown_keys_and_bad_enums(validator):
    data = yaml.safe_load((ROOT / "platforms" / "zionex.yaml").read_text())
    assert list(validator.iter_errors({**data, "gpuz": []}))
    data["backend"]["transport"] = "carrier-pigeon"
    assert list(validator.iter_errors(data))


def test_committed_schema_is_up_to_date():
    assert (ROOT / "schema" / "hwspec.schema.json").read_text() == schema_text(), \
        "schema/hwspec.schema.json is stale: run 'hwspec schema -o schema/hwspec.schema.json'"


def test_ci_tests_the_oldest_pydantic_the_package_allows():
    """The schema above, and every message, must come out the same under the floor of the
    declared pydantic range: .ci/run runs the suite a second time with exactly that release."""
    import re
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (floor,) = [re.fullmatch(r"pydantic>=([\d.]+),<3", d).group(1) for d in declared if d.startswith("pydantic")]
    release = floor if floor.count(".") == 2 else floor + ".0"
    assert f"'pydantic=={release}'" in (ROOT / ".ci" / "run").read_text()


def test_schema_command_prints_json(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "hwspec platform file"


def test_version(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out == "hwspec 0.1.0\n"


def test_help_does_not_import_heavy_modules():
    code = ("import sys, hwspec.cli.commands; hwspec.cli.commands.build_parser(); "
            "print(sorted(m for m in ('pydantic', 'networkx', 'jinja2', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_validate_exit_codes(tmp_path, capsys):
    assert main(["validate", str(ROOT / "platforms" / "zionex.yaml")]) == 0
    bad_value = tmp_path / "bad.yaml"
    bad_value.write_text((ROOT / "tests/fixtures/spec/dangling_reference.yaml").read_text())
    assert main(["validate", str(bad_value)]) == 1
    unreadable = tmp_path / "broken.yaml"
    unreadable.write_text("a: [\n")
    assert main(["validate", str(unreadable)]) == 2
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2
    capsys.readouterr()


@pytest.mark.parametrize("data", [b"\xff\xfe\x00garbage", b"- just\n- a list\n", b"", b"a: !!python/object:os.system x\n",
                                  b"hwspec: 1\nkind: node\nname: X Y\n", b"kind: cluster\n"])
def test_validate_never_prints_a_traceback(tmp_path, data):
    path = tmp_path / "input.yaml"
    path.write_bytes(data)
    result = run_hwspec("validate", str(path), cwd=tmp_path)  # in this process: a traceback would be the exception itself
    assert result.returncode in (1, 2)
    assert "Traceback" not in result.stderr + result.stdout
    assert "input.yaml:" in result.stdout
