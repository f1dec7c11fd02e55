"""The documentation's generated reference pages, rendered as Markdown from what defines them.

* `field_reference()`: every spec model's fields (type, unit, default, description), from the
  pydantic models' JSON Schema, with the descriptions the committed schema carries;
* `rule_reference()`: every built-in rule's id, name, severity, scope and docstring, from the
  rules loaded by path as `hwspec rules` loads them;
* `code_reference()`: every diagnostic code of the `Code` registry, as `hwspec explain` prints it.

`GENERATED_PAGES` maps each page's path under docs/ to its renderer: the mkdocs hook
(docs/hooks.py) adds them to the site at build time, so nothing generated is committed and
nothing can go stale. Each renderer is deterministic: the same models, rules and codes give the
same text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FIELDS_PAGE = "reference/fields.md"
RULES_PAGE = "reference/rules.md"
CODES_PAGE = "reference/codes.md"

_KINDS = (("node", "NodeSpec", "one machine"), ("cluster", "ClusterSpec", "nodes and the networks between them"),
          ("parts", "PartsCatalogue", "a catalogue of CPU, GPU, NIC and PCIe switch parts"),
          ("workload", "WorkloadSpec", "a model for `hwspec estimate` and `compare`"))
_UNIT_NOUN = re.compile(r"^An? (.+?) written as a number and a unit")


def plain(text: str) -> str:
    """Plain text (a docstring, a description) as Markdown that shows it as written: outside
    `code` spans, `*` cannot start emphasis (`NCCL_*`) and `<` cannot open an HTML tag
    (`generated/<name>/`)."""
    parts = text.split("`")
    for index in range(0, len(parts), 2):  # the even parts are outside code spans
        parts[index] = parts[index].replace("\\", "\\\\").replace("*", "\\*").replace("<", "&lt;")
    return "`".join(parts)


def cell(text: str) -> str:
    """`text` as one Markdown table cell: plain, on one line, a `|` escaped so that it cannot end the cell."""
    return plain(" ".join(text.split())).replace("|", "\\|")


def anchor(name: str) -> str:
    """The anchor of a model's, rule's or code's heading on its page (`SocketSpec` -> `socketspec`)."""
    return name.lower()


# ---------------------------------------------------------------- fields


def _raw_definitions() -> dict[str, dict[str, Any]]:
    """Every spec model's own JSON Schema (not widened for repeat blocks and `${...}`), by name."""
    from hwspec.spec.models import ClusterSpec, NodeSpec, PartsCatalogue
    from hwspec.spec.workload import WorkloadSpec

    definitions: dict[str, dict[str, Any]] = {}
    for model in (NodeSpec, ClusterSpec, PartsCatalogue, WorkloadSpec):
        schema = model.model_json_schema(ref_template="#/$defs/{model}", mode="validation")
        definitions.update(schema.pop("$defs", {}))
        definitions[model.__name__] = schema
    return definitions


def _references(schema: Any) -> Iterator[str]:
    """The names of the models `schema` refers to, in the order they appear."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            yield ref.rsplit("/", 1)[-1]
        for value in schema.values():
            yield from _references(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _references(value)


def _models_in_order(definitions: dict[str, dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """(kind, its models) per file kind: the kind's top model, then every model it reaches
    (depth first, in field order), each model under the first kind that reaches it."""
    seen: set[str] = set()
    order = []
    for kind, top, _what in _KINDS:
        models: list[str] = []
        pending = [top]
        while pending:
            name = pending.pop()
            if name in seen or name not in definitions:
                continue
            seen.add(name)
            models.append(name)
            fields = definitions[name].get("properties", {}).values()
            pending += reversed([target for field in fields for target in _references(field)])
        order.append((kind, models))
    return order


def _number_range(schema: dict[str, Any]) -> str:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    above = "exclusiveMinimum" in schema
    if low is not None and high is not None:
        return f" {'above ' + str(low) if above else low} to {high}" if above else f" {low}-{high}"
    if low is not None:
        return f" above {low}" if above else f" at least {low}"
    if high is not None:
        return f" at most {high}"
    return ""


def _literal(value: Any) -> str:
    return f"`{value}`" if isinstance(value, str) else f"`{json.dumps(value)}`"


def type_text(schema: dict[str, Any], units: dict[str, str]) -> str:
    """How a field's value is written, in a few words (`size, e.g. \\`40 GiB\\``, `list of
    [GpuSpec](#gpuspec)`); records each unit's description in `units` by its noun."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{anchor(name)})"
    if "anyOf" in schema or "oneOf" in schema:
        options = [o for o in schema.get("anyOf", schema.get("oneOf", [])) if o != {"type": "null"}]
        return " or ".join(type_text(option, units) for option in options)
    if schema.get("if") == {"const": "unknown"}:
        return f"{type_text(schema['else'], units)} or `unknown`"
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(_literal(value) for value in schema["enum"])
    noun = _UNIT_NOUN.match(schema.get("description", "")) if "examples" in schema else None
    if noun:
        units[noun.group(1)] = schema["description"]
        return f"{noun.group(1)}, e.g. `{schema['examples'][0]}`"
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return "list of " + (type_text(items, units) if isinstance(items, dict) else "values")
    if kind == "object":
        values = schema.get("additionalProperties")
        if not isinstance(values, dict):
            patterns = schema.get("patternProperties", {})
            values = next(iter(patterns.values()), None) if len(patterns) == 1 else None
        return f"mapping of names to {type_text(values, units)}" if isinstance(values, dict) else "mapping"
    if kind == "integer":
        return "whole number" + _number_range(schema)
    if kind == "number":
        return "number" + _number_range(schema)
    if kind == "boolean":
        return "`true` or `false`"
    if kind == "string":
        return "text"
    if isinstance(kind, list):
        return " or ".join(type_text({"type": one}, units) for one in kind if one != "null")
    raise ValueError(f"no words for the schema {json.dumps(schema, sort_keys=True)[:200]}")


def _default_text(name: str, field: dict[str, Any], required: set[str]) -> str:
    if name in required:
        return "required"
    default = field.get("default")
    if default is None or default == [] or default == {}:
        return ""
    return _literal(default)


def field_reference() -> str:
    """The field reference: per file kind, every model it uses, each with one row per field:
    its key, how it is written (type and unit), whether it is required or its default, and its
    description (the model's, else the JSON Schema's: the committed schema's words)."""
    from hwspec.spec.json_schema import platform_schema

    definitions = _raw_definitions()
    described = platform_schema()["$defs"]
    units: dict[str, str] = {}
    body: list[str] = []
    for kind, models in _models_in_order(definitions):
        what = next(words for name, _top, words in _KINDS if name == kind)
        body += [f"## `kind: {kind}`", "", f"A {kind} file describes {what}. Its models, top first:", ""]
        for model in models:
            body += _model_section(model, definitions[model], described[model], units)
    head = [
        "# Field reference",
        "",
        "Every key of every platform, parts and workload file, generated from hwspec's spec models (the",
        "pydantic models in `src/hwspec/spec/`) when the site is built. `hwspec schema` prints the same",
        "language as a JSON Schema for editors.",
        "",
        "Every value may also be written as `{value: ..., source: \"...\", assumed: \"...\"}` (where it",
        "comes from, and why it is an assumption), and in a `repeat:` block as a `${...}` expression.",
        "",
        "## Units",
        "",
        "Quantities are written as a number and a unit, and stored canonically:",
        "",
        *[f"- **{noun}**: {description}" for noun, description in sorted(units.items())],
        "",
    ]
    return "\n".join(head + body)


def _model_section(model: str, raw: dict[str, Any], described: dict[str, Any], units: dict[str, str]) -> list[str]:
    required = set(raw.get("required", []))
    lines = [f"### {model}", ""]
    if raw.get("description"):
        lines += [plain(" ".join(raw["description"].split())), ""]
    lines += ["| key | written as | required / default | description |", "|---|---|---|---|"]
    for name, field in raw.get("properties", {}).items():
        description = described["properties"][name].get("description", "")
        lines.append(f"| `{name}` | {cell(type_text(field, units))} | {cell(_default_text(name, field, required))} "
                     f"| {cell(description)} |")
    return lines + [""]


# ---------------------------------------------------------------- rules


def builtin_rules() -> list[Any]:
    """The built-in rules, loaded by path as `hwspec rules` loads them, by id."""
    from hwspec import content
    from hwspec.rules import load_rules

    return sorted(load_rules([content.builtin_dir("rules")]), key=lambda r: r.id)


def rule_reference(rules: list[Any] | None = None) -> str:
    """The rule pages: a table of every rule, then each rule's heading (`HW202 backend-nic-locality`,
    anchor `#hw202`), its default severity, scope, whether a platform may change it, and its
    docstring (the invariant, then why it matters), as `hwspec explain ID` prints it."""
    rules = builtin_rules() if rules is None else rules
    lines = [
        "# Rules",
        "",
        "Every built-in rule, generated from the rules' own docstrings when the site is built.",
        "`hwspec rules` lists them and `hwspec explain ID` prints one. A platform changes a rule's",
        "severity, or switches it off, under `rules:` by id or name, with a reason.",
        "",
        "| rule | name | severity | scope | invariant |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| [{r.id}](#{anchor(r.id)}) | `{r.name}` | {r.severity.label} | {r.scope} | {cell(r.summary)} |" for r in rules]
    lines.append("")
    for r in rules:
        changeable = "may be changed under `rules:`" if r.waivable else "cannot be switched off or lowered (E304)"
        lines += [f"## {r.id} {r.name} {{ #{anchor(r.id)} }}", "",
                  f"Default severity **{r.severity.label}**, scope {r.scope}; {changeable}. "
                  f"Defined in `{Path(r.file).name}`.", "",
                  plain(r.doc), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- codes


def code_reference() -> str:
    """The code pages: every code of the `Code` registry in registry order, with its summary
    and doc as `hwspec explain CODE` prints them, anchored by code (`#e110`)."""
    from hwspec.diagnostics.codes import Code

    lines = [
        "# Codes",
        "",
        "Every code hwspec reports besides rule findings (`HW...`, see [Rules](rules.md)), generated",
        "from the code registry when the site is built; `hwspec explain CODE` prints one.",
        "E100-E108 mean a file could not be read or parsed (exit 2, as do E301, E302, E901, E902 and E903);",
        "the others are error findings (exit 1).",
        "",
    ]
    for code in Code:
        lines += [f"## {code.value} {plain(code.summary)} {{ #{anchor(code.value)} }}", "", plain(code.doc), ""]
    return "\n".join(lines)


GENERATED_PAGES: dict[str, Callable[[], str]] = {
    FIELDS_PAGE: field_reference,
    RULES_PAGE: rule_reference,
    CODES_PAGE: code_reference,
}
"""Path under docs/ -> the function that renders the page."""
