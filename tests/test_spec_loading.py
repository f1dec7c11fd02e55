"""The spec language end to end: files -> diagnostics with exact text and positions, or a
resolved platform with the values the file means."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.diagnostics import HwspecError
from hwspec.model.load import load_platform
from hwspec.topology import topology_of

FIXTURES = Path(__file__).parent / "fixtures" / "spec"
ROOT = Path(__file__).resolve().parent.parent


def errors_of(name: str) -> list[str]:
    with pytest.raises(HwspecError) as caught:
        load_platform(FIXTURES / name)
    return [d.format().replace(str(FIXTURES) + "/", "") for d in caught.value.diagnostics]


@pytest.fixture(autouse=True)
def _relative_paths(monkeypatch):
    # diagnostics show paths relative to the working directory
    monkeypatch.chdir(FIXTURES)


def test_unknown_and_misspelt_keys_are_reported_at_the_key_with_allowed_keys_and_a_suggestion():
    # 'numa_node' is optional since a socket may list 'numa_nodes' instead: the misspelt key is
    # the one error, and its hint names the key meant
    assert errors_of("unknown_and_misspelt_keys.yaml") == [
        "unknown_and_misspelt_keys.yaml:7:5: error[E112]: sockets[0]: unknown key 'numa_nod'\n"
        "  hint: did you mean 'numa_node'? allowed keys here: assumed, cpus, id, memory, numa_node, numa_nodes, override, "
        "part, source",
        "unknown_and_misspelt_keys.yaml:9:1: error[E112]: unknown key 'colour'\n"
        "  hint: allowed keys here: assumed, backend, baseboard, cpu_interconnect, declares, description, environment, gpus, hwspec, "
        "kind, name, nics, nvlink, pcie, rules, sockets, source, sources, ssds, title",
    ]


def test_duplicate_key_names_both_places():
    assert errors_of("duplicate_key.yaml") == [
        "duplicate_key.yaml:8:5: error[E107]: duplicate key 'numa_node' (first defined at line 7, column 5)"]


def test_malformed_yaml_points_at_the_syntax_error():
    assert errors_of("malformed_yaml.yaml") == [
        "malformed_yaml.yaml:7:1: error[E103]: invalid YAML: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence at line 6, column 11)"]


def test_dangling_reference_suggests_the_nearest_id():
    assert errors_of("dangling_reference.yaml") == [
        "dangling_reference.yaml:17:22: error[E201]: gpus[0].pcie.upstream: 'sw9' does not name a socket or PCIe bridge\n"
        "  hint: did you mean 'sw0'? known: cpu0, sw0"]


def test_every_problem_in_a_file_is_reported_with_its_line_and_column():
    assert errors_of("several_errors.yaml") == [
        "several_errors.yaml:6:11: error[E203]: sockets[0]: unknown CPU part 'xeon-platinum-838oh'\n"
        "  hint: did you mean 'xeon-platinum-8380h'? known CPU parts: epyc-7763, epyc-7r13, epyc-7v12, epyc-9575f, epyc-9654, epyc-9965, grace, mi300a-zen4, xeon-6776p, xeon-6980p, xeon-platinum-8280, xeon-platinum-8380h, xeon-platinum-8460y, xeon-platinum-8480c, xeon-platinum-8480p, xeon-platinum-8481c",
        "several_errors.yaml:7:16: error[E110]: sockets[0].numa_node: 'zero' is not a whole number, e.g. 2",
        "several_errors.yaml:8:24: error[E110]: sockets[0].memory.capacity: expected a size with a unit, e.g. '40 GiB' "
        "or '1.5 TB', got the bare number 256; accepted units: B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB",
        "several_errors.yaml:8:40: error[E110]: sockets[0].memory.bandwidth: a bandwidth needs a rate unit: "
        "did you mean '80 Gb/s'?",
        "several_errors.yaml:12:22: error[E201]: gpus[0].pcie.upstream: 'sw9' does not name a socket or PCIe bridge\n"
        "  hint: known: cpu0",
        "several_errors.yaml:12:32: error[E110]: gpus[0].pcie.bus: '0000:1A:00.0' is not a PCI bus id in lower-case "
        "'dddd:bb:dd.f' form, as the kernel and NCCL print it, e.g. '0000:17:00.0'",
        "several_errors.yaml:13:9: error[E202]: duplicate id 'gpu0' (also used by gpus[0])",
        "several_errors.yaml:15:71: error[E110]: gpus[1].pcie.link.width: Input should be 0, 1, 2, 4, 8, 16 or 32, got 12",
        "several_errors.yaml:20:16: error[E110]: nics[0].transport: Input should be 'infiniband', 'rocev2', 'efa', 'tcpx', 'tcpxo', 'slingshot' or 'tcp', got 'rdma'",
    ]


def test_part_override_is_merged_and_its_errors_point_into_the_platform_file():
    assert errors_of("part_override.yaml") == [
        "part_override.yaml:19:24: error[E110]: gpus[1].override.hbm.bandwidth: cannot read 'lots' as a bandwidth: "
        "expected a number followed by a unit, e.g. '200 Gb/s'"]


def test_part_override_changes_only_the_named_fields(tmp_path, monkeypatch):
    text = (FIXTURES / "part_override.yaml").read_text().replace("bandwidth: lots", "bandwidth: 1 TB/s")
    (tmp_path / "ok.yaml").write_text(text)
    platform = load_platform(tmp_path / "ok.yaml")
    gpu0, gpu1 = platform.gpus
    assert (gpu0.hbm_capacity, gpu0.hbm_bandwidth) == (32 * 2**30, 1555e9)
    assert (gpu1.hbm_capacity, gpu1.hbm_bandwidth) == (40 * 2**30, 1e12)
    assert platform.sockets[0].cores == 24
    assert platform.sockets[0].cpus == tuple(range(48))


def test_repeat_blocks_expand_and_keep_their_template_line():
    platform = load_platform(FIXTURES / "minimal_node.yaml")
    assert [(g.id, g.bus, g.slot) for g in platform.gpus] == [("gpu0", "0000:14:00.0", 0), ("gpu1", "0000:1c:00.0", 1)]
    assert [(n.id, n.device, n.interface) for n in platform.backend_nics] == [("nic0", "mlx5_0", "eth1"), ("nic1", "mlx5_1", "eth2")]
    assert platform.locate("gpu1", "pcie", "bus").line == 22
    assert platform.locate("nic1").line == 25  # the "- repeat:" item


def test_minimal_node_resolves_topology_and_units():
    platform = load_platform(FIXTURES / "minimal_node.yaml")
    assert platform.memory_capacity == 256 * 2**30
    assert platform.sockets[0].memory_bandwidth == 80e9
    assert platform.gpus[0].socket == "cpu0" and platform.gpus[0].numa_node == 0
    assert [topology_of(platform).nics_of(g) for g in ("gpu0", "gpu1")] == [(platform.nics[0].id,), (platform.nics[1].id,)]
    assert [(c.a, c.b, c.links, c.bandwidth) for c in platform.nvlinks] == [("gpu0", "gpu1", 12, 300e9)]
    assert platform.nics[0].speed == 25e9
    assert platform.gpus[0].link.bandwidth == pytest.approx(31.5e9, rel=1e-3)


def test_shipped_zionex_matches_the_reference():
    platform = load_platform(ROOT / "platforms" / "zionex.yaml")
    assert len(platform.sockets) == 4 and len(platform.gpus) == 8
    assert platform.memory_capacity == int(1.5 * 2**40)
    assert sum(s.memory_bandwidth for s in platform.sockets) == 320e9
    assert {g.hbm_capacity for g in platform.gpus} == {40 * 2**30}
    assert [topology_of(platform).nvlink_bandwidth(g.id) for g in platform.gpus] == [300e9] * 8
    assert len(platform.backend_nics) == 8 and {n.speed for n in platform.backend_nics} == {25e9}
    for gpu in platform.gpus:
        (nic_id,) = topology_of(platform).nics_of(gpu.id)
        nic = platform.nic_by_id[nic_id]
        assert nic.upstream == gpu.upstream and nic.transport == "rocev2"
    assert {n.upstream for n in platform.host_nics} == {"cpu0", "cpu1", "cpu2", "cpu3"}
    assert platform.backend.gpudirect and platform.backend.nic_per_gpu
    assert any(a.path == "nvlink" for a in platform.assumptions)



def test_the_resolved_model_is_frozen_and_compared_by_value():
    import dataclasses

    first, second = load_platform(ROOT / "platforms" / "zionex.yaml"), load_platform(ROOT / "platforms" / "zionex.yaml")
    assert first is not second and first == second
    assert first.gpus[0] == second.gpus[0] and first.gpus[0] != first.gpus[1]
    assert hash(first.gpus[0].link) == hash(second.gpus[0].link) and len({first.gpus[0].link, second.gpus[0].link}) == 1
    assert repr(first.gpus[0].link) == "PcieLink(gen=4, width=16)"
    for entry, name in ((first, "name"), (first.gpus[0], "index"), (first.gpus[0].link, "width")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(entry, name, 3)
    assert topology_of(first) is topology_of(first) and first.by_id["gpu0"] is first.gpus[0]  # cached on the frozen Platform

def test_shipped_zion_matches_the_reference():
    platform = load_platform(ROOT / "platforms" / "zion.yaml")
    assert len(platform.sockets) == 8 and len(platform.gpus) == 8
    assert platform.backend_nics == ()
    assert {n.transport for n in platform.nics} == {"tcp"}
    assert {n.speed for n in platform.nics} == {12.5e9}
    assert all(n.upstream.startswith("cpu") for n in platform.nics)
    assert [topology_of(platform).nvlink_links(g.id) for g in platform.gpus] == [6] * 8


def test_a_changed_parts_file_is_read_again(tmp_path):
    (tmp_path / "parts").mkdir()
    cpus = (ROOT / "src/hwspec/data/parts" / "cpus.yaml").read_text()
    local = tmp_path / "parts" / "site.yaml"
    local.write_text(cpus.replace("xeon-platinum-8380h:", "site-cpu:").replace("xeon-platinum-8280:", "other-cpu:"))
    platform_file = tmp_path / "node.yaml"
    platform_file.write_text((FIXTURES / "minimal_node.yaml").read_text().replace("part: xeon-platinum-8380h", "part: site-cpu"))
    assert load_platform(platform_file).sockets[0].cores == 28
    local.write_text(local.read_text().replace("cores: 28\n    threads_per_core: 2\n\n  other-cpu", "cores: 20\n    threads_per_core: 2\n\n  other-cpu"))
    assert load_platform(platform_file).sockets[0].cores == 20


def test_an_unquoted_placeholder_in_a_flow_mapping_gets_a_hint(tmp_path):
    path = tmp_path / "flow.yaml"
    path.write_text("a:\n  - repeat: {g: 0..1}\n    pcie: {upstream: sw${g//2}, bus: x}\n")
    with pytest.raises(HwspecError) as caught:
        load_platform(path)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.line, diagnostic.col, diagnostic.code) == (3, 25, "E103")
    assert diagnostic.hint == 'inside {...} or [...], quote values that contain ${...}: upstream: "sw${g//2}"'


def test_a_zero_bandwidth_is_refused(tmp_path):
    path = tmp_path / "zero.yaml"
    path.write_text((FIXTURES / "minimal_node.yaml").read_text().replace("bandwidth: 80 GB/s}", "bandwidth: 0 GB/s}"))
    with pytest.raises(HwspecError) as caught:
        load_platform(path)
    assert [d.format().split(": ", 1)[1] for d in caught.value.diagnostics] == [
        "error[E110]: sockets[0].memory.bandwidth: Input should be greater than 0, got '0 GB/s'"]


# ---------------------------------------------------------------- the spec models themselves


def test_every_integer_field_is_written_as_a_whole_number():
    """The '*' validator that refused "2" and true for integer fields is now the WholeNumber type:
    a new `int` field without it would silently accept "2". (Sizes parse their unit strings.)"""
    from hwspec.spec import checks, models, workload

    missing = []
    for module in (models, workload):
        for name, model in vars(module).items():
            if isinstance(model, type) and issubclass(model, models.Spec) and model.__module__ == module.__name__:
                for field_name, field in model.model_fields.items():
                    if field.annotation in (int, int | None):
                        funcs = [m.func for m in field.metadata if hasattr(m, "func")]
                        if funcs != [checks.whole_number] and not any(f.__module__ == "hwspec.spec.units" for f in funcs):
                            missing.append(f"{name}.{field_name}")
    assert missing == []


def test_every_float_and_boolean_field_takes_only_what_the_json_schema_takes():
    """pydantic's lax mode reads "0.8" and true as numbers and 1, "1" and "yes" as booleans,
    which the JSON Schema refuses: a plain float field is a RealNumber, a boolean a StrictBool."""
    from pydantic import Strict

    from hwspec.spec import checks, models, workload

    lax = []
    for module in (models, workload):
        for name, model in vars(module).items():
            if isinstance(model, type) and issubclass(model, models.Spec) and model.__module__ == module.__name__:
                for field_name, field in model.model_fields.items():
                    funcs = [m.func for m in field.metadata if hasattr(m, "func")]
                    if field.annotation in (float, float | None):
                        if funcs != [checks.real_number] and not any(f.__module__ == "hwspec.spec.units" for f in funcs):
                            lax.append(f"{name}.{field_name}")
                    elif field.annotation is bool and not any(isinstance(m, Strict) for m in field.metadata):
                        lax.append(f"{name}.{field_name}")
    assert lax == []


def test_quoted_integers_and_bad_units_in_a_parts_file_are_reported_in_the_spec_language(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "site.yaml").write_text(
        "hwspec: 1\nkind: parts\ncpus:\n  x: {vendor: amd, arch: x86_64, model_name: X, family: '23', model: 1, cores: true}\n"
        "nics:\n  n: {vendor: v, model_name: N, speed: 200 Gb, transports: [tcp], rdma: false, gpudirect: false,\n"
        "      pci_vendor: '0x15b3', pci_device: '0x101b', pcie: {gen: 4, width: 16}}\n")
    (tmp_path / "node.yaml").write_text((FIXTURES / "minimal_node.yaml").read_text())
    with pytest.raises(HwspecError) as caught:
        load_platform(tmp_path / "node.yaml")
    assert [d.format().replace(str(tmp_path) + "/", "") for d in caught.value.diagnostics] == [
        "parts/site.yaml:4:57: error[E110]: cpus.x.family: '23' is a string: write the number without quotes (23)",
        "parts/site.yaml:4:80: error[E110]: cpus.x.cores: true is not a whole number, e.g. 2",
        "parts/site.yaml:6:40: error[E110]: nics.n.speed: a bandwidth needs a rate unit: did you mean '200 Gb/s'?"]


def _modules_after(argv: list[str]) -> dict:
    import json
    import subprocess
    import sys

    code = ("import json, sys\nfrom hwspec import cli\nrc = cli.main({argv!r})\n"
            "print(json.dumps({{'rc': rc, 'modules': sorted({{m.split('.')[0] for m in sys.modules}})}}))")
    result = subprocess.run([sys.executable, "-c", code.format(argv=argv)], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a fresh interpreter per case
@pytest.mark.parametrize("argv", [["validate", "platforms/zionex.yaml"], ["generate", "--check", "platforms/zionex.yaml"],
                                  ["generate", "--check", "--no-svg"]],
                         ids=["validate", "generate-check", "generate-check-every-shipped-platform-and-cluster"])
def test_validate_and_generate_check_leave_the_graph_library_alone(argv):
    """networkx costs a third of a second to import: neither validating nor checking the generated
    files of the shipped platforms needs it; validating needs no template engine either."""
    outcome = _modules_after(argv)
    assert outcome["rc"] == 0
    assert "pydantic" in outcome["modules"]  # the spec models validate
    assert "networkx" not in outcome["modules"]
    if argv[0] == "validate":
        assert "jinja2" not in outcome["modules"]


def _unwrap(annotation):
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _model_paths(model, path: tuple = (), depth: int = 0):
    """Every path to a mapping a model validates, read from the models' annotations."""
    import typing

    from pydantic import BaseModel

    yield path, model
    if depth > 6:
        return
    for name, field in model.model_fields.items():
        for option in _unwrap(field.annotation):
            steps: list[tuple[tuple, typing.Any]] = [((name,), option)]
            origin = typing.get_origin(option)
            if origin in (list, tuple):
                steps = [((name, 0), typing.get_args(option)[0])]
            elif origin is dict:
                steps = [((name, "key"), typing.get_args(option)[1])]
            for suffix, inner in steps:
                for candidate in _unwrap(inner):
                    if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                        yield from _model_paths(candidate, path + suffix, depth + 1)


@pytest.mark.parametrize("name", ["PartsCatalogue", "CpuPart", "GpuPart", "NicPart", "NodeSpec", "ClusterSpec"])
def test_allowed_keys_are_the_fields_of_the_model_at_each_path(name):
    from hwspec.spec import models
    from hwspec.spec.translate import allowed_keys

    checked = 0
    for path, model in _model_paths(getattr(models, name)):
        assert allowed_keys(getattr(models, name), path) == sorted(model.model_fields), path
        checked += 1
    assert allowed_keys(getattr(models, name), ("no-such-key",)) == []
    assert checked >= {"CpuPart": 1, "GpuPart": 6, "NicPart": 2, "PartsCatalogue": 10, "NodeSpec": 20, "ClusterSpec": 6}[name]


def test_the_allowed_keys_are_what_a_document_writes_an_aliased_field_as():
    """`global` is a Python keyword: the workload's field is `global_`, written `global`."""
    from hwspec.spec.translate import allowed_keys
    from hwspec.spec.workload import WorkloadSpec

    assert allowed_keys(WorkloadSpec, ("batch",)) == ["assumed", "global", "per_gpu", "source"]
    assert allowed_keys(WorkloadSpec, ("embeddings", "tables", 3)) == [
        "assumed", "cache", "column_shards", "count", "dim", "name", "pooling", "precision", "rows", "sharding", "source"]


NODE = {"hwspec": 1, "kind": "node", "name": "n", "sockets": [
    {"id": "cpu0", "part": "x", "numa_node": 0, "memory": {"capacity": "1 GiB", "bandwidth": "1 GB/s"}}]}
LINK = {"id": "sw0", "upstream": "cpu0", "bus": "0000:00:01.0", "link": {"gen": 4, "width": 16}}


def _with(path: tuple, value) -> dict:
    import copy

    document = copy.deepcopy(NODE)
    node = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return document


@pytest.mark.parametrize(("document", "expected"), [
    (_with(("sockets", 0, "memory", "bandwidth"), "0 GB/s"),
     ["sockets[0].memory.bandwidth: Input should be greater than 0, got '0 GB/s'"]),
    (_with(("pcie",), [{**LINK, "max_oversubscription": 0}]), ["pcie[0].max_oversubscription: Input should be greater than 0, got 0"]),
    (_with(("sockets", 0, "numa_node"), 1024), ["sockets[0].numa_node: Input should be less than or equal to 1023, got 1024"]),
    (_with(("declares",), {"sockets": 0}), ["declares.sockets: Input should be greater than or equal to 1, got 0"]),
    (_with(("sockets",), []), ["sockets: List should have at least 1 item after validation, not 0, got a list"]),
    (_with(("cpu_interconnect",), {"kind": "upi", "links": [["cpu0", "cpu1", "cpu2"]], "bandwidth": "1 GB/s"}),
     ["cpu_interconnect.links: Input should be 'fully-connected', got a list",
      "cpu_interconnect.links[0]: Tuple should have at most 2 items after validation, not 3, got a list"]),
    (_with(("name",), "x" * 70), ["name: String should have at most 64 characters, got "
                                  "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."]),
    (_with(("rules",), {"HW101": {"severity": "loud", "reason": ""}}),
     ["rules.HW101.severity: Input should be 'error', 'warning', 'info' or 'off', got 'loud'",
      "rules.HW101.reason: String should have at least 1 character, got ''"]),
    (_with(("title",), 5), ["title: Input should be a valid string, got 5"]),
    (_with(("pcie",), [{**LINK, "max_oversubscription": "x"}]),
     ["pcie[0].max_oversubscription: 'x' is not a number, e.g. 0.5"]),
    (_with(("backend",), {"transport": "tcp", "nic_per_gpu": "maybe", "rail_optimized": []}),
     ["backend.nic_per_gpu: Input should be a valid boolean, got 'maybe'",
      "backend.rail_optimized: Input should be a valid boolean, got a list"]),
    (_with(("baseboard",), {"slots": 2, "wiring": [[0, "a"], [1, 2.5], 3]}),
     ["baseboard.wiring: matches none of the accepted forms: Input should be 'fully-connected' or 'hybrid-cube-mesh', "
      "got a list; or Input should be 'nvswitch', got a list",
      "baseboard.wiring[0][1]: 'a' is not a whole number, e.g. 2",
      "baseboard.wiring[1][1]: 2.5 is not a whole number, e.g. 2",
      "baseboard.wiring[2]: Input should be a valid tuple, got 3"]),
    (_with(("sources",), ["a"]), ["sources: Input should be a valid dictionary, got a list"]),
    (_with(("gpus",), "none"), ["gpus: Input should be a valid list, got 'none'"]),
    (_with(("backend",), "tcp"), ["backend: Input should be a valid dictionary or instance of BackendSpec, got 'tcp'"]),
    (_with(("environment",), {"nccl_debug": "INFO"}),
     ["environment.nccl_debug: 'nccl_debug' is not an environment variable name (upper-case letters, digits, '_'), "
      "e.g. 'NCCL_IB_TIMEOUT'"]),
], ids=["gt-unit", "gt", "le", "ge", "too-short", "too-long", "string-too-long", "literal-and-string-too-short", "string-type",
        "float-parsing", "bool", "union-int-tuple", "dict-type", "list-type", "model-type", "key"])
def test_each_kind_of_error_has_its_message_whatever_the_pydantic_release(document, expected):
    """Built from the error's type, context and the value as written (pydantic 2.6 gives the
    parsed 0.0 of '0 GB/s' as the input of the bound check, 2.14 the string)."""
    from pydantic import ValidationError

    from hwspec.diagnostics import Location
    from hwspec.spec.models import NodeSpec
    from hwspec.spec.translate import validation_diagnostics

    with pytest.raises(ValidationError) as caught:
        NodeSpec.model_validate(document)
    class AtTop:
        file = "f.yaml"

        def value(self, path):
            return Location("f.yaml", 1, 1)

        key = value

    diagnostics = validation_diagnostics(caught.value, NodeSpec, document, AtTop())
    assert [d.message for d in diagnostics] == expected
