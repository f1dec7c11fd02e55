"""The JSON Schema as editors and check-jsonschema use it: the error names the real problem
(the file is checked as the kind it says it is), every property is described, unit patterns are
readable, and the schema and `hwspec validate` agree on every fixture in tests/fixtures/schema/
(and on every shipped file)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from jsonschema.exceptions import best_match

from hwspec.cli.commands import main
from hwspec.spec.json_schema import platform_schema, undescribed_properties

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / "schema" / "hwspec.schema.json"
FIXTURES = ROOT / "tests" / "fixtures" / "schema"
SHIPPED = sorted((ROOT / "platforms").glob("*.yaml")) + sorted((ROOT / "src/hwspec/data/parts").glob("*.yaml"))

BEST_MATCH = {
    # fixture: (JSON path, message) of the error check-jsonschema shows first
    "quoted_count.yaml": ("$.nvlink.links_per_pair", "'12' is not of type 'integer'"),
    "quoted_numa_node.yaml": ("$.sockets[0].numa_node", "'0' is not of type 'integer'"),
    "boolean_count.yaml": ("$.nvlink.links_per_pair", "True is not of type 'integer'"),
    "misspelt_kind.yaml": ("$.kind", "'nod' is not one of ['node', 'cluster', 'parts', 'workload']"),
    "unknown_key.yaml": ("$", "Additional properties are not allowed ('colour' was unexpected)"),
    "unknown_unit.yaml": ("$.sockets[0].memory.capacity",
                          r"'256 gigs' does not match '^\\s*[0-9][0-9_.eE+-]*\\s*(KiB|MiB|GiB|TiB|PiB|kB|MB|GB|TB|PB|B)\\s*$'"),
}


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(platform_schema())


def _validate_status(path: Path) -> int:
    """`hwspec validate PATH`'s exit status, run in this process (its output is not what is compared)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(["validate", str(path)])


@pytest.mark.parametrize("name", sorted(BEST_MATCH))
def test_the_best_match_error_names_the_real_problem(validator, name: str) -> None:
    error = best_match(validator.iter_errors(yaml.safe_load((FIXTURES / name).read_text())))
    assert (error.json_path, error.message) == BEST_MATCH[name]


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.yaml")) + sorted((ROOT / "platforms").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_schema_and_validate_agree(validator, path: Path) -> None:
    """(Parts files are not platforms: validate reads them through the platforms that use them.)"""
    schema_ok = not list(validator.iter_errors(yaml.safe_load(path.read_text())))
    assert schema_ok == (_validate_status(path) == 0)


def test_every_fixture_is_in_the_best_match_table_or_valid(validator) -> None:
    for path in FIXTURES.glob("*.yaml"):
        valid = not list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert valid or path.name in BEST_MATCH, path.name


def test_every_property_is_described() -> None:
    assert undescribed_properties(platform_schema()) == []


def test_a_file_without_a_kind_is_told_so(validator) -> None:
    data = yaml.safe_load((ROOT / "platforms" / "zionex.yaml").read_text())
    del data["kind"]
    assert best_match(validator.iter_errors(data)).message == "'kind' is a required property"


@pytest.mark.consumer
def test_check_jsonschema_accepts_the_shipped_files_and_points_at_the_broken_values(tmp_path: Path) -> None:
    program = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(program).exists():
        pytest.skip("check-jsonschema is not installed (pip install check-jsonschema; .ci/run does)")
    shipped = subprocess.run([program, "--schemafile", str(SCHEMA_FILE), *map(str, SHIPPED)], capture_output=True,
                             text=True, timeout=300)
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr
    for name, (where, message) in BEST_MATCH.items():
        broken = subprocess.run([program, "--schemafile", str(SCHEMA_FILE), str(FIXTURES / name)], capture_output=True,
                                text=True, timeout=300)
        assert broken.returncode == 1
        assert f"{FIXTURES / name}::{where}: {message}\n" in broken.stdout, broken.stdout
    json.loads(SCHEMA_FILE.read_text())  # the committed schema is JSON
