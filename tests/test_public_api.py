"""The declared public API: `hwspec.__all__`, resolved lazily, and a typed package."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import hwspec

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", [n for n in hwspec.__all__ if n != "__version__"])
def test_every_public_name_is_the_object_its_module_defines(name):
    value = getattr(hwspec, name)
    module = importlib.import_module(hwspec._EXPORTS[name])
    assert value is getattr(module, name)
    assert name in dir(hwspec)


@pytest.mark.slow  # a fresh interpreter
def test_a_platform_from_the_public_loader_has_its_topology_in_a_fresh_interpreter():
    """The model cannot import the topology layer: `hwspec.topology_of` builds a loaded
    platform's topology with nothing else imported first."""
    code = ("import hwspec\n"
            f"platform = hwspec.load_platform({str(ROOT / 'platforms' / 'zionex.yaml')!r})\n"
            "print(hwspec.topology_of(platform).children['cpu0'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("('")


def test_all_lists_exactly_the_lazily_resolved_names():
    assert sorted(hwspec.__all__) == sorted([*hwspec._EXPORTS, "__version__"])


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'hwspec' has no attribute 'lod_platform'"):
        hwspec.lod_platform  # noqa: B018


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


HEAVY = {"pydantic", "pydantic_core", "jinja2", "networkx", "yaml"}


def test_importing_hwspec_loads_no_layer():
    loaded = _modules_after("import hwspec")
    assert {m for m in loaded if m.startswith("hwspec.")} == set()
    assert not loaded & HEAVY


def test_the_command_help_loads_no_spec_model_template_or_graph_library():
    loaded = _modules_after("from hwspec.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    assert not loaded & HEAVY


def test_the_package_says_it_is_typed():
    assert (ROOT / "src" / "hwspec" / "py.typed").is_file()


def test_the_strategies_built_on_node_specs_show_its_parameters_not_kwargs():
    """help(), editors and inspect see what node_platforms() and node_yaml() take."""
    import inspect

    from hwspec.testing import cluster_specs, clusters, node_platforms, node_specs, node_yaml

    for strategy in (node_yaml, node_platforms):
        assert list(inspect.signature(strategy).parameters) == list(inspect.signature(node_specs).parameters)
    assert "max_gpus" in inspect.signature(node_platforms).parameters
    assert list(inspect.signature(clusters).parameters) == list(inspect.signature(cluster_specs).parameters)
    assert str(inspect.signature(node_platforms).return_annotation) == "st.SearchStrategy[Platform]"
