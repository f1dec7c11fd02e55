"""The path from a file to its model goes one way: source -> spec -> model (issue 38).

`benchmarks/walk_path.py` records the calls while `pipeline.check` loads a file; here, that
loading a node platform never climbs back (no lower layer calls into a higher one, no callee
calls back into its caller's layer), with or without errors to report; and that the table of
references names keys the spec models have."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from hwspec.spec.models import NodeSpec
from hwspec.spec.references import ID_SECTIONS, REFERENCES, matches
from hwspec.spec.translate import allowed_keys

ROOT = Path(__file__).resolve().parent.parent


def walk_path_module():
    if "walk_path" not in sys.modules:
        spec = importlib.util.spec_from_file_location("walk_path", ROOT / "benchmarks" / "walk_path.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["walk_path"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules["walk_path"]


@pytest.mark.parametrize("file", ["platforms/hgx-h100.yaml", "tests/fixtures/spec/several_errors.yaml"])
def test_loading_a_node_file_never_climbs_back_to_a_higher_layer(file):
    walk_path = walk_path_module()
    import hwspec.pipeline

    hwspec.pipeline.check(ROOT / file)  # imports and caches warm, as the benchmark walks
    tree = walk_path.record(ROOT / file)
    climbs = [step for step in walk_path.walk(tree, walk_path.layer_of).steps if step[0] == "climb"]
    assert climbs == []
    assert {"source", "spec", "model"} <= {to for _, _, to, _ in walk_path.walk(tree, walk_path.layer_of).steps}


@pytest.mark.parametrize("file", ["platforms/hgx-h100.yaml", "tests/fixtures/spec/several_errors.yaml"])
def test_the_catalogue_is_one_module_on_a_node_files_path(file):
    """The parts catalogue lives in `hwspec.model.parts` alone (issue 46): loading a node file
    enters `hwspec.model.load` once, from the pipeline, and no module calls back into one
    already on the stack (the catalogue's prebuilt parts once climbed from parts into load)."""
    walk_path = walk_path_module()
    import hwspec.pipeline

    hwspec.pipeline.check(ROOT / file)
    steps = walk_path.walk(walk_path.record(ROOT / file)).steps
    assert [(source, function) for kind, source, to, function in steps
            if to == "hwspec.model.load" and kind != "return"] == [("hwspec.pipeline", "load_node")]
    assert [step for step in steps if step[0] == "climb"] == []


def test_a_callback_into_the_callers_layer_counts_as_a_climb():
    """The walk sees what the test above forbids: a lower layer calling back up."""
    walk_path = walk_path_module()
    Call = walk_path.Call
    callback = Call("hwspec.model.load", ("load.py", 3, "locate"))
    translate = Call("hwspec.spec.translate", ("translate.py", 1, "validation_diagnostics"), [callback])
    top = Call("hwspec.model.load", ("load.py", 1, "load_node"), [translate])
    assert [kind for kind, *_ in walk_path.walk(top, walk_path.layer_of).steps] == ["down", "climb", "return", "return"]


def concrete(path):
    """A pattern of `REFERENCES` with index 0 for every `*`."""
    return tuple(0 if step == "*" else step for step in path)


@pytest.mark.parametrize("pattern", [pattern for pattern, _, _ in REFERENCES], ids=lambda p: ".".join(map(str, p)))
def test_every_reference_in_the_table_is_a_key_the_node_models_have(pattern):
    keyed = pattern
    while keyed[-1] == "*":
        keyed = keyed[:-1]
    assert keyed[-1] in allowed_keys(NodeSpec, concrete(keyed[:-1]))


def test_every_section_with_ids_has_entries_with_an_id_and_their_sub_entries_too():
    for section, _, sub in ID_SECTIONS:
        assert "id" in allowed_keys(NodeSpec, (section, 0))
        if sub is not None:
            assert sub[0] in allowed_keys(NodeSpec, (section, 0))
            assert "id" in allowed_keys(NodeSpec, (section, 0, sub[0], 0))
    assert "id" in allowed_keys(NodeSpec, ("baseboard", "nvswitches", 0))


def test_a_pattern_matches_each_written_place_in_order_and_skips_what_is_not_there():
    data = {"nics": [{"gpus": ["g0", "g1"]}, "not a mapping", {"gpu": "g2"}, {"gpus": "not a list"}]}
    assert list(matches(data, ("nics", "*", "gpus", "*"))) == [(("nics", 0, "gpus", 0), "g0"), (("nics", 0, "gpus", 1), "g1")]
    assert list(matches(data, ("nics", "*", "gpu"))) == [(("nics", 2, "gpu"), "g2")]
    assert list(matches(data, ("ssds", "*", "id"))) == []
