"""JSON Schema of platform files as people write them, for editors (yaml-language-server).

The spec models describe files after expansion; written files may also contain repeat
blocks, `${...}` placeholders and `{value, source, assumed}` annotated values. The schema is
the models' schema widened for exactly those three forms, so it never rejects a file the
loader accepts (it may accept some that the loader then refuses, e.g. a placeholder outside
a repeat block).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hwspec.spec import ClusterSpec, NodeSpec, PartsCatalogue
from hwspec.workload import WorkloadSpec

SCHEMA_ID = "https://hwspec.dev/schema/hwspec.schema.json"
_TEMPLATED = {"type": "string", "pattern": r"\$\{", "description": "A value computed in a repeat block: ${expr} or ${expr:fmt}."}
_REPEAT = {
    "type": "object",
    "description": "Repeat this item for every value of the variables: {i: 0..7}.",
    "additionalProperties": {"anyOf": [{"type": "string", "pattern": r"^\s*-?\d+\s*\.\.\s*-?\d+\s*$"},
                                        {"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]},
    "minProperties": 1,
}


def _widen_leaf(schema: dict) -> dict:
    annotated = {"type": "object", "required": ["value"], "additionalProperties": False,
                 "properties": {"value": copy.deepcopy(schema), "source": {"type": "string"}, "assumed": {"type": "string"}}}
    return {"anyOf": [schema, annotated, _TEMPLATED]}


def _widen(node: Any, defs: dict) -> Any:
    """Widen every property and array item of `node` (in place) and return it."""
    if not isinstance(node, dict):
        return node
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if key in node:
            node[key] = [_widen(option, defs) for option in node[key]]
    if "items" in node and isinstance(node["items"], dict):
        item = _widen(node["items"], defs)
        node["items"] = {"anyOf": [item, _repeat_variant(item, defs)]} if _is_object_ref(item, defs) else item
    if isinstance(node.get("additionalProperties"), dict):
        node["additionalProperties"] = _widen_leaf(_widen(node["additionalProperties"], defs))
    for name, prop in list(node.get("properties", {}).items()):
        node["properties"][name] = _widen_leaf(_widen(prop, defs))
    return node


def _is_object_ref(node: dict, defs: dict) -> bool:
    ref = node.get("$ref", "")
    return ref.startswith("#/$defs/") and defs.get(ref.split("/")[-1], {}).get("type") == "object"


def _repeat_variant(item: dict, defs: dict) -> dict:
    name = item["$ref"].split("/")[-1]
    variant = f"{name}Repeat"
    if variant not in defs:
        body = copy.deepcopy(defs[name])
        body["properties"] = {"repeat": _REPEAT, **body.get("properties", {})}
        body["required"] = ["repeat"]
        body["description"] = f"A repeat block of {name} entries."
        defs[variant] = body
    return {"$ref": f"#/$defs/{variant}"}


def platform_schema() -> dict:
    """One schema for node, cluster, parts and workload files (chosen by `kind`)."""
    node = NodeSpec.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
    parts = PartsCatalogue.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
    cluster = ClusterSpec.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
    workload = WorkloadSpec.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
    defs = {**node.pop("$defs", {}), **parts.pop("$defs", {}), **cluster.pop("$defs", {}), **workload.pop("$defs", {})}
    defs["NodeSpec"], defs["PartsCatalogue"], defs["ClusterSpec"] = node, parts, cluster
    defs["WorkloadSpec"] = workload
    for name in list(defs):
        if not name.endswith("Repeat"):
            _widen(defs[name], defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "hwspec platform file",
        "description": ("A hwspec node platform (kind: node), cluster (kind: cluster), parts catalogue (kind: parts) "
                        "or workload (kind: workload)."),
        "oneOf": [{"$ref": "#/$defs/NodeSpec"}, {"$ref": "#/$defs/ClusterSpec"}, {"$ref": "#/$defs/PartsCatalogue"},
                  {"$ref": "#/$defs/WorkloadSpec"}],
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    return json.dumps(platform_schema(), indent=2, sort_keys=True) + "\n"
