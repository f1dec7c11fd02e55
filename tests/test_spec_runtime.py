"""The run-time form of the spec language (hwspec/_spec_runtime.py, made by hwspec.spec.compile):
current, equivalent to the pydantic models, used without pydantic, and replaced by the models
when the installed pydantic_core differs."""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Annotated, Any

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, Field
from pydantic_core import SchemaValidator, ValidationError

from hwspec.spec import models as spec

from hwspec.spec import checks as spec_checks

from hwspec.spec import compile as spec_compile

from hwspec.spec import workload
from hwspec.diagnostics import Location
from hwspec.spec.translate import allowed_keys, validation_diagnostics
from hwspec.source.expand import expand
from hwspec.source.loader import load_yaml_file
from hwspec.spec.runtime import RUNTIME_MODELS, RuntimeSpec, pydantic_validator, runtime_form_current, spec_validator
from hwspec.testing import cluster_specs, node_specs

ROOT = Path(__file__).resolve().parent.parent
needs_runtime_form = pytest.mark.skipif(not runtime_form_current(), reason=(
    "the installed pydantic_core is not the one hwspec/_spec_runtime.py was made with (the test extra pins it; "
    "test_runtime_module_records_the_pydantic_core_it_was_made_with fails)"))
PARTS = sorted((ROOT / "src/hwspec/data/parts").glob("*.yaml"))


# ---------------------------------------------------------------- staleness and version safety


def test_runtime_module_is_what_the_pydantic_models_produce():
    """Like generated/: the committed module is exactly what spec_compile makes of the models
    (with the pydantic_core it records; another one is the fallback, tested below)."""
    committed = spec_compile.TARGET.read_text(encoding="utf-8")
    if not runtime_form_current():
        assert spec_validator("NodeSpec").validator is spec.NodeSpec.__pydantic_validator__
        pytest.skip(f"pydantic_core {pydantic_core.__version__} is not the one the module was made with: "
                    "the fallback is in use (checked above)")
    assert spec_compile.render_module() == committed, "hwspec/_spec_runtime.py is stale: run python -m hwspec.spec.compile"


def test_spec_compile_check_reports_a_stale_module_and_writing_makes_it_current(tmp_path, monkeypatch, capsys):
    target = tmp_path / "_spec_runtime.py"
    target.write_text("# edited by hand\n", encoding="utf-8")
    monkeypatch.setattr(spec_compile, "TARGET", target)
    assert spec_compile.main(["--check"]) == 1
    assert "_spec_runtime.py is stale: run python -m hwspec.spec.compile" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "# edited by hand\n"  # --check writes nothing
    assert spec_compile.main([]) == 0
    assert target.read_text(encoding="utf-8") == spec_compile.TARGET.read_text(encoding="utf-8") == spec_compile.render_module()
    assert spec_compile.main(["--check"]) == 0


def test_runtime_module_records_the_pydantic_core_it_was_made_with():
    """The test extra pins the pydantic the module was made with: the tests run the run-time form."""
    import tomllib

    import pydantic

    from hwspec.spec import _runtime as _spec_runtime

    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["test"]
    assert f"pydantic=={_spec_runtime.PYDANTIC_VERSION}" in test_extra
    assert (_spec_runtime.PYDANTIC_VERSION, _spec_runtime.PYDANTIC_CORE_VERSION) == (pydantic.VERSION, pydantic_core.__version__)
    assert runtime_form_current()


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


RUNNER = """
import json, sys
{prepare}
from hwspec import cli
rc = cli.main({argv!r})
from hwspec.model import load
print(json.dumps({{"rc": rc, "modules": sorted(sys.modules),
                  "part_type": type(next(iter(load._load_parts_file(load.content.builtin_dir("parts") / "gpus.yaml")
                                                  .get("gpus", {{}}).values())).model).__module__}}))
"""


def _modules_after(argv: list[str], prepare: str = "") -> dict:
    result = _run(RUNNER.format(prepare=prepare, argv=argv))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@needs_runtime_form
@pytest.mark.parametrize("argv", [["validate", "platforms/zionex.yaml"], ["generate", "--check", "platforms/zionex.yaml"],
                                  ["generate", "--check", "--no-svg"]],
                         ids=["validate", "generate-check", "generate-check-every-shipped-platform-and-cluster"])
def test_validate_and_generate_check_run_without_pydantic(argv):
    outcome = _modules_after(argv)
    assert outcome["rc"] == 0
    assert [m for m in outcome["modules"] if m.startswith(("pydantic", "typing_extensions"))] == ["pydantic_core._pydantic_core"]
    assert outcome["part_type"] == "hwspec.spec._runtime"


@needs_runtime_form
def test_a_broken_file_is_reported_without_pydantic(tmp_path):
    """The error path reads allowed keys and messages from the run-time schemas too."""
    text = (ROOT / "platforms" / "zionex.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text(text.replace("hwspec: 1\n", "hwspec: 1\nsokets: []\n", 1), encoding="utf-8")
    outcome = _modules_after(["validate", str(broken)])
    assert outcome["rc"] == 1
    assert [m for m in outcome["modules"] if m.startswith(("pydantic", "typing_extensions"))] == ["pydantic_core._pydantic_core"]


def test_another_pydantic_core_falls_back_to_the_pydantic_models_with_the_same_outputs():
    """A module made with another pydantic_core is not used: the models validate, and
    `generate --check` still finds every generated file up to date."""
    prepare = "import hwspec.spec._runtime as r; r.PYDANTIC_CORE_VERSION = '0.0.0-another'"
    outcome = _modules_after(["generate", "--check", "platforms/zionex.yaml"], prepare)
    assert outcome["rc"] == 0
    assert "pydantic" in outcome["modules"]
    assert outcome["part_type"] == "hwspec.spec.models"


def test_fallback_reports_a_broken_file_exactly_as_the_runtime_form(tmp_path):
    text = (ROOT / "platforms" / "zionex.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text(text.replace("hwspec: 1\n", "hwspec: 1\nsokets: []\n", 1).replace("slot: ${g}", "slot: '${g}x'"),
                      encoding="utf-8")
    code = "from hwspec import cli; raise SystemExit(cli.main(['validate', {path!r}]))"
    runtime = _run(code.format(path=str(broken)))
    fallback = _run("import hwspec.spec._runtime as r; r.PYDANTIC_CORE_VERSION = 'x'\n" + code.format(path=str(broken)))
    assert runtime.returncode == fallback.returncode == 1
    assert "unknown key 'sokets'" in runtime.stdout + runtime.stderr
    assert (runtime.stdout, runtime.stderr) == (fallback.stdout, fallback.stderr)


# ---------------------------------------------------------------- equivalence


def _data(value: Any) -> Any:
    """An instance tree as plain data: class names, fields, fields set; types of the leaves kept."""
    if isinstance(value, (RuntimeSpec, BaseModel)):
        return (type(value).__name__, {k: _data(v) for k, v in value.__dict__.items()}, sorted(value.__pydantic_fields_set__))
    if isinstance(value, dict):
        return {k: _data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_data(v) for v in value])
    return (type(value).__name__, value)


def _where(path: tuple) -> Location:
    return Location("f.yaml", len(path), hash(path) % 997)


def _outcome(validator, data: Any) -> Any:
    try:
        return ("ok", _data(validator.validate(data)))
    except ValidationError as exc:
        errors = [(e["type"], e["loc"], e["msg"], repr(e.get("input")), repr(e.get("ctx"))) for e in exc.errors(include_url=False)]
        diagnostics = validation_diagnostics(exc, validator, data, "f.yaml", _where, locate_key=_where)
        return ("errors", errors, diagnostics)


def _assert_same(name: str, data: Any) -> Any:
    runtime, pydantic = _outcome(spec_validator(name), data), _outcome(pydantic_validator(name), data)
    assert runtime == pydantic
    return runtime


MUTANTS = ["2", " 3 ", "+4", "40 GiB", "200 Gb", "25 GB/s bidirectional", "16 GT/s", "312 TFLOPS", "1e999 GB/s",
           "abc", "gpu 0", "Gpu0", "0000:17:00.0", "nvswitch", "fully-connected", "0-3,8", "5-2", "off", "",
           True, False, None, -1, 0, 1, 1.5, 2.0, 10**20, float("nan"), [], [1, 2], {}, {"gen": 4}]


def _places(node: Any, path: tuple = ()) -> list[tuple]:
    places = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            places += _places(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            places += _places(value, path + (index,))
    return places


def _at(node: Any, path: tuple) -> Any:
    for part in path:
        node = node[part]
    return node


@st.composite
def broken(draw, documents: st.SearchStrategy) -> Any:
    """A valid document with 1-3 faults: a value replaced (wrong type, bad unit, bad text), an
    integer quoted, a key misspelt or unknown, a key dropped."""
    data = copy.deepcopy(draw(documents))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_places(data)))
        if not path:
            continue
        parent, key = _at(data, path[:-1]), path[-1]
        action = draw(st.sampled_from(["replace", "quote", "misspell", "unknown", "drop"]))
        if action == "replace":
            parent[key] = draw(st.sampled_from(MUTANTS))
        elif action == "quote" and isinstance(parent[key], (int, float)):
            parent[key] = str(parent[key])
        elif action == "misspell" and isinstance(parent, dict):
            parent[key[:-1] or "x"] = parent.pop(key)
        elif action == "unknown" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "sokets", "links_per_pari", "bandwith"]))] = draw(st.sampled_from(MUTANTS))
        elif action == "drop" and isinstance(parent, dict):
            del parent[key]
    return data


def _parts_document(path: Path) -> dict:
    return expand(load_yaml_file(path)).data


PART_DOCUMENTS = st.sampled_from(PARTS).map(_parts_document)
SINGLE_PARTS = PART_DOCUMENTS.flatmap(
    lambda doc: st.sampled_from([(kind, part) for kind in ("cpus", "gpus", "nics") for part in doc.get(kind, {}).values()]))
PART_MODEL = {"cpus": "CpuPart", "gpus": "GpuPart", "nics": "NicPart"}


NODES = st.one_of(node_specs(max_sockets=4, max_gpus=8), node_specs(max_sockets=4, max_gpus=8, virtual_links=True, numa_nodes=True))


@needs_runtime_form
@settings(max_examples=40)
@given(NODES)
def test_node_specs_validate_to_the_same_instances_in_both_forms(document):
    assert _assert_same("NodeSpec", document)[0] == "ok"


@needs_runtime_form
@given(cluster_specs(max_nodes=4, max_gpus=4))
def test_cluster_specs_validate_to_the_same_instances_in_both_forms(files):
    assert _assert_same("ClusterSpec", files.cluster)[0] == "ok"


@needs_runtime_form
@settings(max_examples=100)
@given(broken(NODES))
def test_broken_node_documents_give_the_same_errors_and_diagnostics_in_both_forms(document):
    _assert_same("NodeSpec", document)


@needs_runtime_form
@settings(max_examples=40)
@given(broken(cluster_specs(max_nodes=4, max_gpus=4).map(lambda files: files.cluster)))
def test_broken_cluster_documents_give_the_same_errors_and_diagnostics_in_both_forms(document):
    _assert_same("ClusterSpec", document)


@needs_runtime_form
@settings(max_examples=40)
@given(broken(PART_DOCUMENTS))
def test_broken_parts_files_give_the_same_errors_and_diagnostics_in_both_forms(document):
    _assert_same("PartsCatalogue", document)


@needs_runtime_form
@settings(max_examples=40)
@given(SINGLE_PARTS.flatmap(lambda kind_part: st.tuples(st.just(kind_part[0]), broken(st.just(kind_part[1])))))
def test_overridden_parts_give_the_same_errors_in_both_forms(kind_and_part):
    kind, part = kind_and_part
    _assert_same(PART_MODEL[kind], part)


@needs_runtime_form
def test_the_shipped_parts_validate_to_the_same_instances_in_both_forms():
    for path in PARTS:
        assert _assert_same("PartsCatalogue", _parts_document(path))[0] == "ok"


@needs_runtime_form
def test_quoted_integers_and_bad_units_are_reported_alike():
    document = {"hwspec": 1, "kind": "parts", "cpus": {"x": {"vendor": "amd", "arch": "x86_64", "model_name": "X", "family": "23",
                                                           "model": 1, "cores": True}},
                "nics": {"n": {"vendor": "v", "model_name": "N", "speed": "200 Gb", "transports": ["tcp"], "rdma": False,
                               "gpudirect": False, "pci_vendor": "0x15b3", "pci_device": "0x101b",
                               "pcie": {"gen": 4, "width": 16}}}}
    outcome = _assert_same("PartsCatalogue", document)
    messages = [d.message for d in outcome[2]]
    assert "cpus.x.family: '23' is a string: write the number without quotes (23)" in messages
    assert "cpus.x.cores: true is not a whole number, e.g. 2" in messages
    assert "nics.n.speed: a bandwidth needs a rate unit: did you mean '200 Gb/s'?" in messages


# ---------------------------------------------------------------- the pieces the run-time form is made of


def test_every_integer_field_is_written_as_a_whole_number():
    """The '*' validator that refused "2" and true for integer fields is now the WholeNumber type:
    a new `int` field without it would silently accept "2". (Sizes parse their unit strings.)"""
    missing = []
    for module in (spec, workload):
        for name, model in vars(module).items():
            if isinstance(model, type) and issubclass(model, spec.Spec) and model.__module__ == module.__name__:
                for field_name, field in model.model_fields.items():
                    if field.annotation in (int, int | None):
                        funcs = [m.func for m in field.metadata if hasattr(m, "func")]
                        if funcs != [spec_checks.whole_number] and not any(f.__module__ == "hwspec.spec.units" for f in funcs):
                            missing.append(f"{name}.{field_name}")
    assert missing == []


@pytest.mark.parametrize("bound", ["gt", "ge", "lt", "le"])
@pytest.mark.parametrize("value", [-1.0, 0, 0.0, 1e6, 999999.0, 1e15, 1e16])
def test_bound_checks_raise_what_pydantics_own_raise(bound, value):
    """spec_compile replaces pydantic's checks of Field(gt/ge/lt/le) by spec_checks' own."""
    from pydantic._internal import _validators

    def errors(function) -> list:
        schema = {"type": "function-after", "function": {"type": "no-info", "function": function}, "schema": {"type": "float"}}
        try:
            SchemaValidator(schema).validate_python(value)
            return []
        except ValidationError as exc:
            return exc.errors(include_url=False)

    name = {"gt": "greater_than_validator", "ge": "greater_than_or_equal_validator",
            "lt": "less_than_validator", "le": "less_than_or_equal_validator"}[bound]
    ours = spec_compile.PYDANTIC_EQUIVALENTS[f"pydantic._internal._validators.{name}"]
    for limit in (0, 1e6, 1e15):
        assert errors(functools.partial(ours, **{bound: limit})) == errors(functools.partial(getattr(_validators, name), **{bound: limit}))


def test_a_closure_validator_is_refused_with_its_place():
    class Closure(BaseModel):
        name: Annotated[str, AfterValidator(lambda value: value)]

    with pytest.raises(spec_compile.CompileError, match=r"Closure\.schema\.fields\.name\.schema\.function\.function: .* cannot be "
                                                        r"named by import path \(a closure, lambda or object\); make it a "
                                                        r"module-level function"):
        spec_compile.render_module({"Closure": Closure})


def test_a_pydantic_internal_validator_without_an_equivalent_is_refused():
    class Multiple(BaseModel):
        count: Annotated[int, AfterValidator(spec_checks.whole_number), Field(multiple_of=2)]

    with pytest.raises(spec_compile.CompileError, match=r"Multiple\.schema\.fields\.count\..*: pydantic\._internal\._validators\."
                                                        r"multiple_of_validator belongs to pydantic; the run-time form must not import it"):
        spec_compile.render_module({"Multiple": Multiple})


# ---------------------------------------------------------------- run-time instances


def _zionex() -> Any:
    return spec_validator("NodeSpec").validate(expand(load_yaml_file(ROOT / "platforms" / "zionex.yaml")).data)


@needs_runtime_form
def test_runtime_instances_keep_the_shared_methods_and_class_tree():
    node = _zionex()
    link = node.pcie[0].link
    assert type(link).__module__ == "hwspec.spec._runtime"
    assert isinstance(link, spec_checks.LinkMethods) and link.generation == 4
    assert type(link).__name__ == "PcieLink" and type(link).__mro__[1].__name__ == "PhysicalLink"
    assert type(node.gpus[0]).__mro__[1].__name__ == "PartRef"


@needs_runtime_form
def test_runtime_instances_are_frozen_comparable_and_hashable():
    first, second = _zionex(), _zionex()
    assert first == second and first.gpus[0] == second.gpus[0] and first.gpus[0] != first.gpus[1]
    assert hash(first.gpus[0].pcie) == hash(second.gpus[0].pcie)
    with pytest.raises(AttributeError, match="GpuSpec is frozen: cannot set 'slot'"):
        first.gpus[0].slot = 3
    data = expand(load_yaml_file(ROOT / "platforms" / "zionex.yaml")).data
    assert repr(first.pcie[0].link) == repr(pydantic_validator("NodeSpec").validate(data).pcie[0].link) == (
        "PcieLink(source=None, assumed=None, gen=4, speed=None, width=16, physical=None)")


@needs_runtime_form
def test_runtime_instances_copy_and_pickle():
    import pickle

    node = _zionex()
    for copied in (copy.copy(node), copy.deepcopy(node), pickle.loads(pickle.dumps(node))):
        assert copied == node and _data(copied) == _data(node)
        assert copied.pcie[0].link.generation == 4


@needs_runtime_form
def test_default_factories_build_runtime_instances():
    """`declares:` left out: the schema's default factory is the run-time DeclaresSpec class."""
    document = {"hwspec": 1, "kind": "node", "name": "n", "sockets": [
        {"id": "cpu0", "part": "x", "numa_node": 0, "memory": {"capacity": "1 GiB", "bandwidth": "1 GB/s"}}]}
    node = spec_validator("NodeSpec").validate(document)
    assert type(node.declares).__module__ == "hwspec.spec._runtime"
    assert node.declares.sockets is None and node.declares.__pydantic_fields_set__ == set()
    assert _data(node) == _data(pydantic_validator("NodeSpec").validate(document))


@needs_runtime_form
def test_a_base_class_is_not_validated_on_its_own():
    from hwspec.spec import _runtime as _spec_runtime

    with pytest.raises(TypeError, match="Spec is a base class of the spec language; it is not validated on its own"):
        _spec_runtime.Spec()


def test_runtime_models_are_the_spec_models():
    from hwspec.spec import _runtime as _spec_runtime

    assert set(_spec_runtime.SCHEMAS) == set(RUNTIME_MODELS)
    for name in RUNTIME_MODELS:
        assert issubclass(getattr(spec, name), spec.Spec)


# ---------------------------------------------------------------- allowed keys from the core schema


def _unwrap(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _model_paths(model: type[BaseModel], path: tuple = (), depth: int = 0):
    """Every path to a mapping a model validates, read from the models' annotations (the way
    hwspec.spec.translate found the allowed keys before it read them from the core schema)."""
    yield path, model
    if depth > 6:
        return
    for name, field in model.model_fields.items():
        for option in _unwrap(field.annotation):
            steps: list[tuple[tuple, Any]] = [((name,), option)]
            origin = typing.get_origin(option)
            if origin in (list, tuple):
                steps = [((name, 0), typing.get_args(option)[0])]
            elif origin is dict:
                steps = [((name, "key"), typing.get_args(option)[1])]
            for suffix, inner in steps:
                for candidate in _unwrap(inner):
                    if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                        yield from _model_paths(candidate, path + suffix, depth + 1)


@pytest.mark.parametrize("name", RUNTIME_MODELS)
def test_allowed_keys_are_the_fields_of_the_model_at_each_path(name):
    checked = 0
    for path, model in _model_paths(getattr(spec, name)):
        expected = sorted(model.model_fields)
        assert allowed_keys(spec_validator(name), path) == expected, path
        assert allowed_keys(getattr(spec, name), path) == expected, path
        checked += 1
    assert checked >= {"CpuPart": 1, "GpuPart": 6, "NicPart": 2, "PartsCatalogue": 10, "NodeSpec": 20, "ClusterSpec": 6}[name]
