"""Property tests: the JSON Schema (what editors and check-jsonschema check) and hwspec's own
validation accept the same documents.

Documents are drawn valid (`hwspec.testing`'s node and cluster strategies, the built-in parts
files, a small workload), then one to three of their values are replaced by values of another
type: integers as strings, floats for integers, booleans, octal-looking text, unit strings,
lists, null. The schema (Draft 2020-12, as it declares) must accept the document exactly when
the spec models do, except for the whole-entry checks the schema does not state (`gen` or
`speed`, one NUMA form, `wiring: nvswitch` with its switches, a link of width 0 with its
physical link, `global` or `per_gpu`): a document refused only by those is accepted by the
schema. Cross-reference rules (HW codes) are not part of either.

Left out on purpose: `environment:` (its names and values follow a policy owned elsewhere),
`${...}` placeholders and repeat blocks (the schema accepts a placeholder anywhere, the loader
only inside a repeat block), and nan/inf (their refusal in numbers is a change of its own).
"""

from __future__ import annotations

import copy
import functools
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hwspec.diagnostics import HwspecError
from hwspec.source.expand import expand
from hwspec.source.loader import SourceDoc, load_yaml_file, load_yaml_text
from hwspec.spec.json_schema import platform_schema
from hwspec.spec.models import ClusterSpec, NodeSpec, PartsCatalogue
from hwspec.spec.workload import WorkloadSpec
from hwspec.testing import cluster_specs, dump_yaml, node_specs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = settings.default.max_examples
MODELS = {"node": NodeSpec, "cluster": ClusterSpec, "parts": PartsCatalogue, "workload": WorkloadSpec}
WHOLE_ENTRY_CHECKS = {"hwspec_link", "hwspec_numa", "hwspec_baseboard", "hwspec_batch", "hwspec_fabric"}
"""Error types of the models' whole-entry checks (`hwspec.spec.checks`), which the schema does not state."""
LEFT_OUT = {"environment", "kind"}

WORKLOAD = {
    "hwspec": 1, "kind": "workload", "name": "tiny", "batch": {"per_gpu": 10}, "compute_dtype": "fp16",
    "bottom_mlp": [4, 8, 2], "top_mlp": [6, 3, 1], "interaction": "cat",
    "embeddings": {"precision": "fp32", "optimizer": "sgd", "index_dtype": "int32", "hbm_share": 0.5,
                   "tables": [{"name": "t", "count": 2, "rows": 100, "dim": 2, "pooling": 3.5, "column_shards": 2}]},
    "communication": {"forward": "fp32", "backward": "fp32", "allreduce": "fp32"},
}

ODD_TEXT = ("010", "0o10", "0x1f", "1_000", "1:30", "yes", "off", "2", "2.0", " 4 ", "-1", "1e3", "16 GB/s", "200 Gb/s",
            "8 GT/s", "40 GiB", "312 TFLOPS", "x", "", "fully-connected", "cpu0", "0000:17:00.0", "X Y", "Gpu0")
ODD_VALUES = st.one_of(
    st.sampled_from(ODD_TEXT), st.integers(-3, 70), st.integers(-2**70, 2**70), st.booleans(), st.none(),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([0.5, 2.0, 16.0, 1e300]),
    st.lists(st.integers(0, 3), max_size=2), st.just({"a": 1}),
)


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    schema = platform_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    return jsonschema.Draft202012Validator(schema)


@functools.cache
def parts_files() -> tuple[dict, ...]:
    return tuple(load_yaml_file(path).data for path in sorted((ROOT / "src/hwspec/data/parts").glob("*.yaml")))


def leaves(document: Any, path: tuple = ()) -> list[tuple]:
    """The path of every scalar value in `document`, but under LEFT_OUT keys."""
    if not isinstance(document, (dict, list)):
        return [path]
    items = document.items() if isinstance(document, dict) else enumerate(document)
    return [found for key, value in items if key not in LEFT_OUT for found in leaves(value, path + (key,))]


def value_at(document: Any, path: tuple) -> Any:
    for part in path:
        document = document[part]
    return document


def type_variants(value: Any) -> list[Any]:
    """`value` written as the other types a careless (or adversarial) author would use."""
    if isinstance(value, bool):
        return [int(value), str(value).lower(), "yes" if value else "no"]
    if isinstance(value, (int, float)):
        return [str(value), float(value), bool(value), f"0{abs(int(value))}"] + ([int(value)] if math.isfinite(value) else [])
    if isinstance(value, str):
        return [value.upper(), value + "-", f"{value} GB/s"]
    return []


@st.composite
def mutated_documents(draw) -> dict:
    kind = draw(st.sampled_from(["node", "cluster", "parts", "workload"]))
    if kind == "node":
        document = draw(node_specs(max_gpus=4, max_sockets=2))
    elif kind == "cluster":
        document = draw(cluster_specs(max_gpus=2, max_sockets=2, max_nodes=4)).cluster
    else:
        document = copy.deepcopy(draw(st.sampled_from(parts_files())) if kind == "parts" else WORKLOAD)
    paths = leaves(document)
    for path in draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3, unique=True)):
        try:
            current, holder = value_at(document, path), value_at(document, path[:-1])
        except (KeyError, IndexError, TypeError):  # an earlier change replaced what held it
            continue
        if not isinstance(holder, (dict, list)):
            continue
        variants = type_variants(current)
        holder[path[-1]] = draw(st.sampled_from(variants) if variants and draw(st.booleans()) else ODD_VALUES)
    return document


def validation_errors(document: dict) -> set[str] | None:
    """The error types hwspec reports for the document (annotated values expanded, then the spec
    model of its kind); None when it accepts it."""
    try:
        expanded = expand(SourceDoc("d.yaml", copy.deepcopy(document)))
        MODELS[document["kind"]].model_validate(expanded.data)
    except HwspecError as exc:
        return {d.code for d in exc.diagnostics}
    except ValidationError as exc:
        return {error["type"] for error in exc.errors()}
    return None


@settings(max_examples=EXAMPLES * 10)
@given(mutated_documents())
def test_the_json_schema_accepts_a_document_exactly_when_validation_does(document):
    note(dump_yaml(document))
    errors = validation_errors(document)
    schema_errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(document)]
    note(f"validation: {errors}; schema: {schema_errors}")
    expected = errors is None or errors <= WHOLE_ENTRY_CHECKS
    assert (not schema_errors) == expected


@pytest.mark.consumer
@settings(max_examples=EXAMPLES * 25)
@given(st.one_of(st.sampled_from(ODD_TEXT + ("on", "No", "0b101", "-.5", ".inf", "1.5e+3", "1.5e3", "+0x10", "~", "null",
                                             "True", "012_3", "1__0", "0o8", "0x", "1:60", "60:30")),
                 st.text("0123456789_.:+-eEoxbOn", min_size=1, max_size=6)))
def test_a_plain_value_is_refused_or_read_as_yaml_1_2_reads_it(text):
    """check-jsonschema reads YAML 1.2 (ruamel.yaml), hwspec YAML 1.1 (PyYAML): a plain value
    is either read the same by both or refused with a located E110."""
    pytest.importorskip("ruamel.yaml", reason="ruamel.yaml (check-jsonschema's YAML reader) is not installed: "
                                              "pip install check-jsonschema (the consumers extra; .ci/run installs it)")
    from ruamel.yaml import YAML

    document = f"a: {text}\n"
    try:
        editor = YAML(typ="safe", pure=True).load(document)
    except Exception:  # not YAML to a 1.2 reader either (e.g. '1:60' as a flow key)
        return
    try:
        ours = load_yaml_text(document, "v.yaml").data
    except HwspecError as exc:
        assert [(d.code, d.line, d.col) for d in exc.diagnostics] in ([("E110", 1, 4)], [("E103", 1, 4)]), exc
        return
    expected = editor["a"]
    assert type(ours["a"]) is type(expected) and (ours["a"] == expected or expected != expected), (ours, editor)
