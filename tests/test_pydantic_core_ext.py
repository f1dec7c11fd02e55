"""hwspec.spec.pydantic_core_ext: pydantic_core's compiled module loaded without the package's Python part, and
shared with any later `import pydantic_core`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

REPORT = """
import json, sys
{before}
import hwspec.spec.pydantic_core_ext as core
{after}
import pydantic_core
print(json.dumps({{
    "package_before_pydantic": {package_before!s},
    "same_classes": all(getattr(core, name) is getattr(pydantic_core, name)
                        for name in ("SchemaValidator", "ValidationError", "PydanticCustomError", "PydanticKnownError")),
    "same_module": __import__("pydantic_core._pydantic_core", fromlist=["_"]) is sys.modules["pydantic_core._pydantic_core"],
    "version": core.__version__ == pydantic_core.__version__,
}}))
"""


def _report(before: str = "", after: str = "", package_before: str = "None") -> dict:
    code = REPORT.format(before=before, after=after, package_before=package_before)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_loading_the_compiled_module_does_not_import_the_package():
    outcome = _report(after='loaded = "pydantic_core" in sys.modules',
                      package_before="loaded")
    assert outcome == {"package_before_pydantic": False, "same_classes": True, "same_module": True, "version": True}


def test_a_later_pydantic_import_uses_the_same_classes_and_validates():
    code = """
import hwspec.spec.pydantic_core_ext as core
from pydantic import BaseModel, version
class Model(BaseModel):
    count: int
try:
    Model(count="many")
except core.ValidationError as exc:
    print(exc.errors()[0]["type"])
print("pydantic-core version:" in version.version_info())
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout, result.stderr) == (0, "int_parsing\nTrue\n", "")


def test_an_already_imported_pydantic_core_is_used():
    outcome = _report(before="import pydantic_core")
    assert outcome == {"package_before_pydantic": None, "same_classes": True, "same_module": True, "version": True}


def test_without_the_extension_file_the_package_is_imported_as_usual():
    """No `_pydantic_core` file with a suffix this interpreter loads: the ordinary import runs."""
    outcome = _report(before="import importlib.machinery; importlib.machinery.EXTENSION_SUFFIXES[:] = ['.none']",
                      after='loaded = "pydantic_core" in sys.modules', package_before="loaded")
    assert outcome == {"package_before_pydantic": True, "same_classes": True, "same_module": True, "version": True}


def test_when_loading_the_module_alone_fails_the_package_is_imported_as_usual():
    outcome = _report(before="import importlib.util; importlib.util.spec_from_file_location = lambda *a, **k: None",
                      after='loaded = "pydantic_core" in sys.modules', package_before="loaded")
    assert outcome == {"package_before_pydantic": True, "same_classes": True, "same_module": True, "version": True}
