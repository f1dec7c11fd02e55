"""JSON Schema of platform files as people write them, for editors (yaml-language-server) and
check-jsonschema.

The spec models describe files after expansion; written files may also contain repeat
blocks, `${...}` placeholders and `{value, source, assumed}` annotated values. The schema is
the models' schema widened for exactly those three forms. It accepts a file exactly when the
models do (tests/test_properties_schema.py), but for what JSON Schema is not told: a
placeholder outside a repeat block, and the models' whole-entry checks (`gen` or `speed`, one
NUMA form, ...), which it leaves to the loader. (The loader refuses the YAML values that YAML
1.1 and the editors' YAML 1.2 read differently, so both read the same data.)

Readable errors: JSON Schema validators report the error of the branch they could not match,
and with `anyOf`/`oneOf` they must guess which branch was meant (check-jsonschema's best match
then blames the root, or a `${` pattern). So every choice here is made by `if`/`then`/`else`
on what the value is: the file by its `kind`, a value by being a `${...}` string, an annotated
`{value: ...}` mapping or null, a list item by having `repeat`. Errors then come from the one
schema that applies: `'12' is not of type 'integer'`, a unit pattern that lists the units.
Every property carries a description (the model's, else `FIELD_DESCRIPTIONS`).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hwspec.spec.models import ClusterSpec, NodeSpec, PartsCatalogue
from hwspec.spec.workload import WorkloadSpec

SCHEMA_ID = "https://hwspec.dev/schema/hwspec.schema.json"
KINDS = {"node": "NodeSpec", "cluster": "ClusterSpec", "parts": "PartsCatalogue", "workload": "WorkloadSpec"}
_TEMPLATED_IF = {"type": "string", "pattern": r"\$\{"}
_REPEAT = {
    "type": "object",
    "description": "Repeat this item for every value of the variables: {i: 0..7}; a list of texts is a table, "
                   "indexed as ${name[i]}.",
    "additionalProperties": {"anyOf": [{"type": "string", "pattern": r"^\s*-?\d+\s*\.\.\s*-?\d+\s*$"},
                                        {"type": "integer"}, {"type": "array", "items": {"type": "integer"}},
                                        {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
    "minProperties": 1,
}
_ANNOTATIONS = ("title", "description", "default", "examples")

FIELD_DESCRIPTIONS: dict[str, str] = {
    "hwspec": "Version of the platform file format: 1.",
    "kind": "What the file describes: node (one machine), cluster (nodes and networks), parts (a catalogue) or workload (a model to estimate).",
    "name": "Name of the platform; generated files go to generated/<name>/ (letters, digits, _.-).",
    "title": "A human title, shown in reports and diagrams.",
    "description": "Free text about the platform.",
    "sources": "Documents the values come from, by key; entries cite them.",
    "rules": "Per-platform rule changes by rule id or name, each with a reason.",
    "sockets": "CPU sockets (one NUMA node each): part, NUMA node, DDR.",
    "cpu_interconnect": "The links between sockets (UPI/xGMI).",
    "pcie": "PCIe switches and root ports: upstream, bus id, link.",
    "baseboard": "The accelerator baseboard's physical wiring (superset of the NVLinks in use).",
    "gpus": "GPUs: part, baseboard slot, place in the PCIe tree.",
    "nvlink": "The logical GPU fabric in use; must embed in the baseboard wiring.",
    "nics": "Network cards: role, transport, RDMA device and interface names, place in the PCIe tree.",
    "ssds": "Local SSDs.",
    "backend": "The scale-out network: transport, GPUDirect, rails, RoCE settings (node) or fabric (cluster).",
    "declares": "Counts and totals the platform promises; checked against the wiring.",
    "frontend": "The front-end network: speed and the share used for data ingestion.",
    "nodes": "Node groups: platform file, count, host names and addresses.",
    "rendezvous": "torchrun rendezvous: backend and port on the first node.",
    "cpus": "CPU parts by name (parts file), or the logical CPU list of a NUMA node (socket).",
    "id": "Identifier of this entry, unique in the file; other entries refer to it.",
    "part": "Catalogue part by name.",
    "memory": "DDR attached to this socket: capacity and bandwidth.",
    "numa_node": "NUMA node number of this socket.",
    "links": "Links: socket pairs, or 'fully-connected' (CPU interconnect); link count (NVLink pair or part).",
    "upstream": "The socket or PCIe bridge this device or bridge hangs from.",
    "bus": "PCI bus id, dddd:bb:dd.f.",
    "link": "The upstream PCIe link: gen (or speed) and width.",
    "slot": "Baseboard slot of this GPU.",
    "slots": "Accelerator slots on the baseboard.",
    "ports_per_slot": "Fabric ports per slot.",
    "topology": "Fabric topology name.",
    "transport": ("Network transport: infiniband, rocev2, efa (AWS, libfabric via aws-ofi-nccl), tcpx or tcpxo "
                  "(GCP GPUDirect-TCPX/-TCPXO), slingshot (HPE, libfabric cxi) or tcp."),
    "transports": "Transports the part supports.",
    "role": "What the NIC carries: backend (collectives), ingestion, frontend or management.",
    "port": "Port number (NIC port; rendezvous TCP port).",
    "ports": "Ports (NIC ports, switch ports).",
    "traffic_class": "RoCE traffic class of the backend network (NCCL_IB_TC), 0-255.",
    "service_level": "InfiniBand service level of the backend network (NCCL_IB_SL), 0-15.",
    "gid_index": "RoCE GID index (NCCL_IB_GID_INDEX).",
    "leaf": "Leaf switches: ports and uplinks.",
    "spine": "Spine switches: ports and count.",
    "count": "How many.",
    "severity": "error, warning, info or off.",
    "DeclaresSpec.sockets": "Declared number of CPU sockets.",
    "DeclaresSpec.gpus": "Declared number of GPUs.",
    "PartsCatalogue.cpus": "CPU parts by name.",
    "PartsCatalogue.gpus": "GPU parts by name.",
    "PartsCatalogue.nics": "NIC parts by name.",
    "PartsCatalogue.pcie_switches": "PCIe switch parts by name.",
    "NvlinkPair.gpus": "The two GPUs (ids) this entry links.",
    "NvlinkPair.links": "NVLinks between the two GPUs.",
    "ClusterSpec.backend": "The backend (scale-out) fabric: transport, speed per NIC, topology, switches.",
    "vendor": "Vendor name.",
    "model_name": "Marketing model name.",
    "arch": "CPU architecture as NCCL writes it (x86_64, arm64).",
    "threads_per_core": "Hardware threads per core.",
    "fabric": "The GPU's accelerator fabric: kind and links.",
    "form_factor": "sxm or oam (pcie for add-in cards).",
    "hbm": "On-package memory: capacity and bandwidth.",
    "pci_vendor": "PCI vendor id, e.g. 0x10de.",
    "pci_device": "PCI device id.",
    "rdma": "Whether the NIC does RDMA (RoCE/InfiniBand verbs).",
}
"""Descriptions for properties whose model field has none: `Model.property` first, else by
property name."""


def _human_pattern(pattern: str) -> str:
    """A unit pattern people can read in an error: `\\s` for the whitespace class, a plain
    number, `(` for `(?:`. Accepts a superset of the exact pattern (never rejects what the
    loader reads)."""
    from hwspec.spec.units import _NUMBER, _WS

    return pattern.replace(_NUMBER, "[0-9][0-9_.eE+-]*").replace(_WS, r"\s").replace("(?:", "(")


def _annotations(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: schema[key] for key in _ANNOTATIONS if key in schema}


def _strip_optional(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """`anyOf: [X, {type: null}]` (pydantic's Optional) -> (X with the outer annotations, True)."""
    options = schema.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        (inner,) = [o for o in options if o != {"type": "null"}]
        return {**copy.deepcopy(inner), **_annotations(schema)}, True
    return schema, False


def _description(model: str, name: str) -> str | None:
    return FIELD_DESCRIPTIONS.get(f"{model}.{name}") or FIELD_DESCRIPTIONS.get(name)


def _leaf(schema: dict[str, Any], description: str | None) -> dict[str, Any]:
    """A property value as written: a `${...}` string, or an annotated `{value: ...}` mapping,
    or null where the field is optional, or else the value itself."""
    schema, optional = _strip_optional(schema)
    for form in (schema, schema.get("else")):  # the value, or its known form beside the word `unknown`
        if isinstance(form, dict) and "pattern" in form:
            form["pattern"] = _human_pattern(form["pattern"])
    outer = _annotations(schema)
    if description and "description" not in outer:
        outer["description"] = description
        schema = {**schema, "description": description}
    value = {"if": {"type": "null"}, "then": True, "else": schema} if optional else schema
    annotated = {"type": "object", "required": ["value"], "additionalProperties": False,
                 "properties": {"value": value,
                                "source": {"type": ["string", "null"], "description": "Where the value comes from."},
                                "assumed": {"type": ["string", "null"], "description": "Why the value is an assumption."}}}
    plain: dict[str, Any] = {"if": {"type": "object", "required": ["value"]}, "then": annotated, "else": schema}
    if optional:
        plain = {"if": {"type": "null"}, "then": True, "else": plain}
    return {**outer, "if": _TEMPLATED_IF, "then": {"description": "A value computed in a repeat block: ${expr} or ${expr:fmt}."},
            "else": plain}


def _keys_by_pattern(node: dict[str, Any]) -> None:
    """A mapping whose keys have a pattern (`dict[PartName, ...]`): pydantic writes
    `patternProperties`, which lets any other key through; validation refuses them, so the
    pattern goes to `propertyNames` and the values to `additionalProperties` (in place)."""
    patterns = node.get("patternProperties")
    if isinstance(patterns, dict) and len(patterns) == 1 and "additionalProperties" not in node:
        ((pattern, values),) = patterns.items()
        del node["patternProperties"]
        node["propertyNames"] = {**node.get("propertyNames", {}), "pattern": pattern}
        node["additionalProperties"] = values


def _widen(node: Any, defs: dict[str, Any], model: str = "") -> Any:
    """Widen every property and array item of `node` (in place) and return it."""
    if not isinstance(node, dict):
        return node
    _keys_by_pattern(node)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if key in node:
            node[key] = [_widen(option, defs) for option in node[key]]
    if "items" in node and isinstance(node["items"], dict):
        item = _widen(node["items"], defs)
        node["items"] = ({"if": {"type": "object", "required": ["repeat"]}, "then": _repeat_variant(item, defs), "else": item}
                         if _is_object_ref(item, defs) else item)
    if isinstance(node.get("additionalProperties"), dict):
        node["additionalProperties"] = _leaf(_widen(node["additionalProperties"], defs), None)
    for name, prop in list(node.get("properties", {}).items()):
        node["properties"][name] = _leaf(_widen(prop, defs), _description(model, name))
    return node


def _is_object_ref(node: dict[str, Any], defs: dict[str, Any]) -> bool:
    ref = str(node.get("$ref", ""))
    return ref.startswith("#/$defs/") and bool(defs.get(ref.split("/")[-1], {}).get("type") == "object")


def _repeat_variant(item: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A reference to the repeat-block form of `item`'s model. The form itself is made by
    `_add_repeat_variants` once every model is widened, so that it copies the widened model."""
    name = item["$ref"].split("/")[-1]
    defs.setdefault(f"{name}Repeat", None)
    return {"$ref": f"#/$defs/{name}Repeat"}


def _add_repeat_variants(defs: dict[str, Any]) -> None:
    for variant in [name for name, body in defs.items() if body is None]:
        name = variant.removesuffix("Repeat")
        body = copy.deepcopy(defs[name])
        body["properties"] = {"repeat": _REPEAT, **body.get("properties", {})}
        body["required"] = ["repeat"]
        body["description"] = f"A repeat block of {name} entries."
        defs[variant] = body


def _describe_refs(defs: dict[str, Any]) -> None:
    """A property that is a bare `$ref` gets the referenced model's description beside it."""
    for body in defs.values():
        for prop in body.get("properties", {}).values():
            target = prop.get("$ref", "")
            if target.startswith("#/$defs/") and "description" not in prop:
                described = defs.get(target.split("/")[-1], {}).get("description")
                if described:
                    prop["description"] = described


def platform_schema() -> dict[str, Any]:
    """One schema for node, cluster, parts and workload files, chosen by `kind` (if/then, so
    that an error is reported inside the kind the file says it is)."""
    node = NodeSpec.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
    parts = PartsCatalogue.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
    cluster = ClusterSpec.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
    workload = WorkloadSpec.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
    defs = {**node.pop("$defs", {}), **parts.pop("$defs", {}), **cluster.pop("$defs", {}), **workload.pop("$defs", {})}
    defs["NodeSpec"], defs["PartsCatalogue"], defs["ClusterSpec"] = node, parts, cluster
    defs["WorkloadSpec"] = workload
    _describe_refs(defs)
    for name in list(defs):
        _widen(defs[name], defs, name)
    _add_repeat_variants(defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "hwspec platform file",
        "description": ("A hwspec node platform (kind: node), cluster (kind: cluster), parts catalogue (kind: parts) "
                        "or workload (kind: workload)."),
        "type": "object",
        "required": ["hwspec", "kind"],
        "properties": {"hwspec": {"const": 1, "description": FIELD_DESCRIPTIONS["hwspec"]},
                       "kind": {"enum": list(KINDS), "description": FIELD_DESCRIPTIONS["kind"]}},
        "allOf": [{"if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
                   "then": {"$ref": f"#/$defs/{model}"}} for kind, model in KINDS.items()],
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    return json.dumps(platform_schema(), indent=2, sort_keys=True) + "\n"


def undescribed_properties(schema: dict[str, Any]) -> list[str]:
    """`Model.property` for every property of the schema's models without a description."""
    missing = []
    for model, body in schema["$defs"].items():
        for name, prop in body.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{model}.{name}")
    return missing


