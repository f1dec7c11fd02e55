"""The whole package is type-checked with `mypy --strict` (CI runs `mypy`), and a user's script
sees real types from `hwspec.check(...)`: no module may be relaxed by a configuration override,
and docs/internals.md's typed example passes `mypy --strict` as it is written."""

from __future__ import annotations

import io
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "hwspec"
COMPILED = PACKAGE / "generate" / "compiled"  # jinja2's output, excluded in pyproject.toml


def package_modules() -> list[str]:
    """Every module of src/hwspec as mypy names it (a package by its own name), jinja2's output aside."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if COMPILED in path.parents:
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_configuration_is_strict_for_the_whole_package_with_pydantics_plugin():
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["strict"] is True
    assert mypy["files"] == ["src/hwspec"]
    assert "pydantic.mypy" in mypy["plugins"]


def test_no_module_of_the_package_is_relaxed_from_strict():
    """Read pyproject.toml as mypy reads it, then ask mypy which options hold for each module:
    every flag `--strict` turns on is on, nothing is ignored or skipped."""
    pytest.importorskip("mypy", reason="mypy is in the lint extra")
    from mypy.config_parser import parse_config_file
    from mypy.main import define_options
    from mypy.options import Options

    _, _, strict_flags = define_options()
    options = Options()

    def set_strict_flags() -> None:
        for dest, value in strict_flags:
            setattr(options, dest, value)

    errors = io.StringIO()
    parse_config_file(options, set_strict_flags, str(ROOT / "pyproject.toml"), stdout=io.StringIO(), stderr=errors)
    assert errors.getvalue() == ""
    modules = package_modules()
    assert "hwspec.testing.nodes" in modules and "hwspec.pipeline" in modules and len(modules) > 150
    relaxed = {}
    for module in modules:
        per_module = options.clone_for_module(module)
        off = [dest for dest, value in strict_flags if getattr(per_module, dest) != value]
        if per_module.ignore_errors:
            off.append("ignore_errors")
        if per_module.follow_imports != "normal":
            off.append(f"follow_imports={per_module.follow_imports}")
        if per_module.disabled_error_codes:
            off.append(f"disable_error_code={sorted(c.code for c in per_module.disabled_error_codes)}")
        if off:
            relaxed[module] = off
    assert relaxed == {}


def internals_example(marker: str) -> str:
    """The Python example of docs/internals.md that the `tested by:` comment naming `marker` introduces."""
    page = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    (example,) = re.findall(rf"<!-- tested by: [^>]*{re.escape(marker)}[^>]* -->\n```python\n(.*?)^```", page,
                            re.DOTALL | re.MULTILINE)
    return example


@pytest.mark.slow  # about 7 s of CPU: mypy reads hwspec, pydantic and hypothesis
def test_a_user_script_sees_real_types_from_check(tmp_path):
    """docs/internals.md's example passes `mypy --strict`: its `assert_type`s hold exactly (mypy
    refuses `Any` where a type is asserted), so `check`, `node_topology()`, `cluster_topology()`,
    `plan_for` and `load_platform` give real types, and so do the public strategies. The same
    script using a result before narrowing it (a topology that may be None or a cluster's, a
    cluster topology taken for a node's) is refused, where it names the mistake."""
    api = pytest.importorskip("mypy.api", reason="mypy is in the lint extra")
    example = internals_example("test_a_user_script_sees_real_types_from_check")
    strategies = ("from hypothesis.strategies import SearchStrategy\n\n"
                  "from hwspec.testing import clusters, node_platforms, node_specs\n\n"
                  "assert_type(node_platforms(max_gpus=2), SearchStrategy[hwspec.Platform])\n"
                  "assert_type(clusters(max_nodes=2), SearchStrategy[hwspec.Cluster])\n"
                  "assert_type(node_specs(nvlink=['ring']), SearchStrategy[dict[str, Any]])\n")
    misuse = ("checked.topology.scale_out_share('gpu0')\n"  # may be None or a cluster's
              "cluster.scale_out_share('gpu0')\n")  # a cluster topology has no such query
    good, bad = tmp_path / "user_script.py", tmp_path / "user_misuse.py"
    good.write_text("from typing import Any\n" + example + strategies, encoding="utf-8")
    bad.write_text(example + misuse, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text("[mypy]\n")  # a user's own settings: this checkout's are for src/hwspec
    config = ["--strict", "--config-file", str(tmp_path / "mypy.ini"), "--cache-dir", str(tmp_path / "cache"),
              "--no-error-summary", "--hide-error-context", "--no-pretty"]

    out, err, status = api.run([*config, str(good)])
    assert (out, err, status) == ("", "", 0)

    out, err, status = api.run([*config, str(bad)])
    lines = len(example.splitlines())
    assert status == 1, out + err
    assert sorted(re.findall(r"user_misuse\.py:(\d+): error: (.*)  \[([a-z-]+)\]", out)) == [
        (str(lines + 1), 'Item "ClusterTopology" of "Topology | ClusterTopology | None" has no attribute "scale_out_share"',
         "union-attr"),
        (str(lines + 1), 'Item "None" of "Topology | ClusterTopology | None" has no attribute "scale_out_share"', "union-attr"),
        (str(lines + 2), '"ClusterTopology" has no attribute "scale_out_share"', "attr-defined")], out
