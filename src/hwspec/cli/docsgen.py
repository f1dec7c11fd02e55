"""The documentation's generated reference pages, rendered as Markdown from what defines them.

* `field_reference()`: every spec model's fields (type, unit, default, description), from the
  pydantic models' JSON Schema, with the descriptions the committed schema carries;
* `rule_reference()`: every built-in rule's id, name, severity, scope and docstring, from the
  rules loaded by path as `hwspec rules` loads them;
* `code_reference()`: every diagnostic code of the `Code` registry, as `hwspec explain` prints it;
* `parts_reference()`: every part of the built-in catalogue (src/hwspec/data/parts/), its kind,
  its figures as the catalogue writes them (with their units) and their sources;
* `diagram_images()`: the SVG diagrams the diagrams page and the tutorial show, drawn by
  hwspec's own diagram generators from shipped platforms (and the tutorial's node) and rendered
  by graphviz's `dot`;
* `model_reference()`: the resolved model's classes (`Platform`, `Gpu`, `Nic`, ...) with their
  attributes, types and docstrings, and the public strategies of `hwspec.testing` with their
  signatures, from the code itself; spliced into internals.md at `MODEL_REFERENCE_MARKER`;
* `query_reference()`: every query of `Topology` and `ClusterTopology`, what it takes and returns
  and its docstring, under the sections of the code; spliced into site-rules.md at
  `QUERY_REFERENCE_MARKER`.

`GENERATED_PAGES` maps each page's path under docs/ to its renderer: the mkdocs hook
(docs/hooks.py) adds them to the site at build time, so nothing generated is committed and
nothing can go stale. Each renderer is deterministic: the same models, rules and codes give the
same text.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hwspec.model.parts import Catalogue, Part
    from hwspec.rules.engine import Rule
    from hwspec.source.expand import Provenance

FIELDS_PAGE = "reference/fields.md"
RULES_PAGE = "reference/rules.md"
CODES_PAGE = "reference/codes.md"
PARTS_PAGE = "reference/parts.md"

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


def builtin_rules() -> list[Rule]:
    """The built-in rules, loaded by path as `hwspec rules` loads them, by id."""
    from hwspec import content
    from hwspec.rules import load_rules

    return sorted(load_rules([content.builtin_dir("rules")]), key=lambda r: r.id)


def rule_reference(rules: list[Rule] | None = None) -> str:
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
        if r.hint:
            lines += [f"What to do: {plain(r.hint)}", ""]
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
        "E100-E108 mean a file could not be read or parsed and E114 that an output could not be written (exit 2, as",
        "do E301, E302, E901, E902 and E903);",
        "the other E codes are error findings (exit 1).",
        "The live checks' codes follow: D101-D114, a machine (`hwspec diff`) or a fleet (`hwspec fleet-report`)",
        "that differs from its platform file (exit 1), and I100-I104, problems in the inputs of `import` and",
        "`diff` (I100 and I101 make an input unusable, exit 2). A report prints their summary beside them,",
        f"as it prints a rule's name: `error[{Code.PCIE_LINK} {Code.PCIE_LINK.printed_name}]`.",
        "",
    ]
    for code in Code:
        lines += [f"## {code.value} {plain(code.summary)} {{ #{anchor(code.value)} }}", "", plain(code.doc), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- parts


PART_SECTIONS = (("cpus", "CPUs", "CPU"), ("gpus", "GPUs", "GPU"), ("nics", "NICs", "NIC"),
                 ("pcie_switches", "PCIe switches", "PCIe switch"))
"""(catalogue section, heading, what one part is), in the order the page lists them."""


def builtin_catalogue() -> Catalogue:
    """The built-in parts catalogue, read as the loader reads it."""
    from hwspec import content
    from hwspec.model.parts import load_catalogue

    return load_catalogue([content.builtin_dir("parts")])


def _value_text(value: Any) -> str:
    """A figure as the catalogue writes it: quantities with their units (`80 GiB`, `3350 GB/s`),
    a PCIe link as `Gen5 x16`, yes/no, lists joined."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict) and {"gen", "width"} <= set(value):
        notes = {"source", "assumed"}
        rest = {key: item for key, item in value.items() if key not in notes | {"gen", "width"}}
        return f"Gen{value['gen']} x{value['width']}" + "".join(f", {key} {_value_text(item)}" for key, item in rest.items())
    if isinstance(value, list):
        return ", ".join(_value_text(item) for item in value) if value else "none"
    return str(value)


def _field_description(model: type[BaseModel] | None, path: tuple[str, ...], described: dict[str, Any]) -> str:
    """What the field at `path` under `model` (a pydantic model class) means: the model's
    description, else the committed schema's (`described`, by model name); nested models are
    followed, a mapping's entries take the mapping's description."""
    import typing

    from pydantic import BaseModel

    description = ""
    for key in path:
        if model is None:
            break  # an entry of a mapping (`compute.bf16`): the mapping's description stands
        info = model.model_fields.get(key)
        if info is None:
            return ""
        schema_words = described.get(model.__name__, {}).get("properties", {}).get(key, {}).get("description", "")
        unit = _UNIT_NOUN.match(schema_words)
        if unit:  # the value shows its unit; the field reference says how units are written
            schema_words = f"{unit.group(1)}{', per direction' if 'per direction' in schema_words else ''}"
        elif key == "kind":  # the schema's words for `kind` are the file's kind
            schema_words = ""
        description = info.description or schema_words
        candidates = [info.annotation, *typing.get_args(info.annotation)]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
    return description


def _figure_rows(raw: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, value) for every figure of a part as written, in file order; `source`/`assumed`
    notes are not figures, a PCIe link is one figure."""
    for key, value in raw.items():
        if key in ("source", "assumed"):
            continue
        if isinstance(value, dict) and not ({"gen", "width"} <= set(value)):
            yield from _figure_rows(value, prefix + (key,))
        else:
            yield prefix + (key,), value


def _provenance_text(note: Provenance | None) -> str:
    words = []
    if note is not None and note.source:
        words.append(note.source)
    if note is not None and note.assumed:
        words.append(f"assumed: {note.assumed}")
    return "; ".join(words)


def _part_section(part: Part, what: str, model: type[BaseModel], described: dict[str, Any]) -> list[str]:
    """One part: its heading (anchored by name), what it is and where it is written, its own
    source, then a row per figure: the key, the value with its unit, what the key means and the
    source given for that value, or for its block (on the block's first row)."""
    file = f"data/parts/{Path(part.file).name}"
    lines = [f"### {part.name} {{ #{anchor(part.name)} }}", "",
             f"{what}: **{cell(str(part.raw.get('model_name', part.name)))}**, `{part.kind}` in `{file}`.", ""]
    own = part.note()
    if own is not None and own.source:
        lines += [f"Source: {cell(own.source)}", ""]
    if own is not None and own.assumed:
        lines += [f"Assumed: {cell(own.assumed)}", ""]
    lines += ["| figure | value | meaning | source |", "|---|---|---|---|"]
    shown: set[tuple[str, ...]] = set()
    for path, value in _figure_rows(part.raw):
        noted = [path[:depth] for depth in range(len(path), 0, -1) if part.note(path[:depth]) is not None]
        note = ""
        if noted and noted[0] not in shown:
            shown.add(noted[0])
            note = _provenance_text(part.note(noted[0]))
            if noted[0] != path:
                note = f"`{'.'.join(noted[0])}`: {note}"
        lines.append(f"| `{'.'.join(path)}` | {cell(_value_text(value))} "
                     f"| {cell(_field_description(model, path, described))} | {cell(note)} |")
    return lines + [""]


SITE_PART_EXAMPLE = """\
# platforms/parts/site-cpus.yaml: parts this site's platforms use that hwspec does not ship
hwspec: 1
kind: parts
cpus:
  xeon-platinum-8275cl:
    source: "AWS p4d.24xlarge: 96 vCPUs of 2nd generation Intel Xeon Scalable (Cascade Lake) Platinum 8275CL on 2 sockets; CPUID family 6 model 0x55"
    assumed: "24 cores per socket, as the VM shows them (48 vCPUs per socket, 2 threads per core)"
    vendor: intel
    arch: x86_64
    model_name: Intel Xeon Platinum 8275CL
    family: 6
    model: 85
    cores: 24
    threads_per_core: 2
"""
"""The site part the parts page adds as its example (tests/test_docs_parts.py validates a platform using it)."""

SITE_PART_PLATFORM = """\
sockets:
  - repeat: {i: 0..1}
    id: cpu${i}
    part: xeon-platinum-8275cl
    numa_node: ${i}
"""
"""How a platform file names the site part (a fragment of its `sockets:`)."""


def parts_reference(catalogue: Catalogue | None = None) -> str:
    """The parts page: a table of every part by kind, then each part's section (heading and
    anchor = its name, so the site's search finds `epyc-7r13`), then how to add a site part."""
    from hwspec.spec.parts import PART_KINDS

    catalogue = builtin_catalogue() if catalogue is None else catalogue
    lines = [
        "# Parts catalogue",
        "",
        "Every part hwspec ships (the built-in catalogue, `src/hwspec/data/parts/`), generated from the",
        "catalogue when the site is built. A platform names a part by name (`part: h100-sxm5-80gb`) and",
        "may change single figures with `override:`; the figures below are the part's own, as the",
        "catalogue writes them: quantities with their units ([Field reference](fields.md#units)), bandwidths per",
        "direction. Each figure has its source: the part's own `source:` or the value's, and `assumed:`",
        "where the catalogue assumes it.",
        "",
    ]
    parts = catalogue.parts  # every part by kind and name, as `get` gives each
    for section, heading, _what in PART_SECTIONS:
        names = catalogue.names(section)
        lines += [f"## {heading}", "", "| part | model | file |", "|---|---|---|"]
        for name in names:
            part = parts[section][name]
            model_name = cell(str(part.raw.get("model_name", "")))
            lines.append(f"| [`{name}`](#{anchor(name)}) | {model_name} | `{Path(part.file).name}` |")
        lines.append("")
    from hwspec.spec import models
    from hwspec.spec.json_schema import platform_schema

    described = platform_schema()["$defs"]
    for section, heading, what in PART_SECTIONS:
        lines += [f"## {heading}: figures", ""]
        for name in catalogue.names(section):
            lines += _part_section(parts[section][name], what, getattr(models, PART_KINDS[section]), described)
    lines += [
        "## Adding a site part",
        "",
        "A part the catalogue lacks goes into a parts file (`kind: parts`) in a `parts/` directory beside",
        "the platform files, which every platform there reads after the built-in catalogue, or in any",
        "directory passed as `--parts DIR` (repeatable). A later part of the same name replaces an earlier",
        "one. Give each figure a `source:` (a datasheet, the vendor's instance page, a capture) and mark",
        "what no source gives with `assumed:` and the reason; `hwspec schema` lists every key, and the",
        "[field reference](fields.md#kind-parts) says what each one means.",
        "",
        "```yaml",
        SITE_PART_EXAMPLE.rstrip("\n"),
        "```",
        "",
        "A platform in `platforms/` then names it like a built-in part:",
        "",
        "```yaml",
        SITE_PART_PLATFORM.rstrip("\n"),
        "```",
        "",
        "`hwspec validate` checks the parts file as it loads the platform (a wrong unit or a missing key",
        "is reported at its line and column in the parts file), and `hwspec import` names site parts",
        "as it names built-in ones when their PCI ids fit.",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- the Python API


MODEL_REFERENCE_MARKER = "<!-- generated: python API -->"
"""The line of docs/internals.md that the mkdocs hook replaces with `model_reference()`."""

MODEL_MODULES = (("hwspec.model.node", "Platform", "A node platform: `hwspec.load_platform(path)`, `hwspec.check(path).platform`"),
                 ("hwspec.model.cluster", "Cluster", "A cluster: the same functions on a `kind: cluster` file"))
"""(module, its top class, how one gets it): the resolved model's modules, documented class by class."""


@functools.cache
def _class_nodes(module_name: str) -> dict[str, ast.ClassDef]:
    """The class definitions of `module_name`'s source, by name (attribute docstrings are in the
    source only: the string right after an annotated name)."""
    module = importlib.import_module(module_name)
    tree = ast.parse(Path(inspect.getsourcefile(module) or "").read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def attribute_docs(cls: type) -> dict[str, str]:
    """The docstring written under each annotated attribute of `cls` and its bases, by name
    (a subclass's wins)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        node = _class_nodes(klass.__module__).get(klass.__name__) if klass.__module__.startswith("hwspec.") else None
        if node is None:
            continue
        for statement, following in zip(node.body, node.body[1:] + [None], strict=True):
            if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                    and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def model_classes() -> list[tuple[str, list[type]]]:
    """(module, its public dataclasses): the top class first, then the others in source order."""
    import dataclasses

    listed = []
    for module_name, top, _how in MODEL_MODULES:
        module = importlib.import_module(module_name)
        order = list(_class_nodes(module_name))
        classes = [value for name, value in vars(module).items()
                   if not name.startswith("_") and isinstance(value, type) and dataclasses.is_dataclass(value)
                   and value.__module__ == module_name]
        classes.sort(key=lambda c: (c.__name__ != top, order.index(c.__name__)))
        listed.append((module_name, classes))
    return listed


def public_attributes(cls: type) -> list[tuple[str, str, str]]:
    """(name, type, description) for each public attribute of the dataclass `cls`: its fields
    (inherited ones included), then its properties and methods (`name()`, the signature as its
    type), with their docstrings."""
    import dataclasses

    docs = attribute_docs(cls)
    rows = [(f.name, str(f.type), docs.get(f.name, "")) for f in dataclasses.fields(cls) if not f.name.startswith("_")]
    seen = {name for name, _type, _doc in rows}
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(value, (property, functools.cached_property)):
                function: Any = value.fget if isinstance(value, property) else value.func
                returns = inspect.signature(function).return_annotation
                kind = "" if returns is inspect.Signature.empty else str(returns)
                rows.append((name, f"{kind} (property)".strip(), inspect.getdoc(value) or ""))
            elif inspect.isfunction(value):
                signature = str(_unquoted(inspect.signature(value))).replace("(self, ", "(").replace("(self)", "()")
                rows.append((f"{name}()", f"method {signature}", inspect.getdoc(value) or ""))
    return rows


def public_strategies() -> list[tuple[str, Any]]:
    """(name, object) for each name `hwspec.testing.__all__` lists, in that order."""
    import hwspec.testing

    return [(name, getattr(hwspec.testing, name)) for name in hwspec.testing.__all__]


class _Shown:
    """An annotation shown as written: `from __future__ import annotations` keeps annotations as
    text, which `inspect` would quote."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _unquoted(signature: inspect.Signature) -> inspect.Signature:
    def shown(annotation: object) -> object:
        if isinstance(annotation, str):
            return _Shown(annotation)
        # hypothesis' composite returns SearchStrategy[<the function's return annotation>], text here
        (argument, *more) = typing.get_args(annotation) or (None,)
        if getattr(typing.get_origin(annotation), "__name__", "") == "SearchStrategy" and isinstance(argument, typing.ForwardRef) and not more:
            return _Shown(f"st.SearchStrategy[{argument.__forward_arg__}]")
        return annotation

    parameters = [p.replace(annotation=shown(p.annotation)) for p in signature.parameters.values()]
    return signature.replace(parameters=parameters, return_annotation=shown(signature.return_annotation))


def _signature_block(name: str, function: Any) -> list[str]:
    """`function`'s signature as a Python block, one parameter a line when it is long."""
    signature = _unquoted(inspect.signature(function))
    one_line = f"{name}{signature}"
    if len(one_line) <= 100:
        return ["```python", one_line, "```"]
    parameters = []
    star_done = False
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and not star_done:
            parameters.append("*")
            star_done = True
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            star_done = True
        parameters.append(str(parameter))
    returns = "" if signature.return_annotation is inspect.Signature.empty else f" -> {signature.return_annotation}"
    return ["```python", f"{name}(", *[f"    {text}," for text in parameters], f"){returns}", "```"]


@functools.cache
def _module_constant_docs(module_name: str) -> dict[str, str]:
    """The docstring written under each module-level name of `module_name`'s source."""
    module = importlib.import_module(module_name)
    body = ast.parse(Path(inspect.getsourcefile(module) or "").read_text()).body
    docs = {}
    for statement, following in zip(body, body[1:] + [None], strict=True):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] if isinstance(statement, ast.AnnAssign) else []
        if (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)):
            docs.update({target.id: inspect.cleandoc(following.value.value) for target in targets if isinstance(target, ast.Name)})
    return docs


def _constant_text(name: str, value: Any) -> str:
    """A constant of `hwspec.testing`: its docstring where its module has one, and its value when short."""
    import hwspec.testing

    modules = sorted({getattr(hwspec.testing, other).__module__ for other in hwspec.testing.__all__
                      if hasattr(getattr(hwspec.testing, other), "__module__")})
    doc = next((_module_constant_docs(module)[name] for module in modules
                if module.startswith("hwspec.testing.") and name in _module_constant_docs(module)), "")
    shown = repr(value)
    if "`" in shown or len(shown) > 240:
        count = f" of {len(value)}" if hasattr(value, "__len__") else ""
        shown_text = f"a {type(value).__name__}{count}"
    else:
        shown_text = f"`{shown}`"
    return f"{plain(doc) + ' ' if doc else ''}Value: {shown_text}."


def _code_cell(text: str) -> str:
    """`text` for a code span in a table cell, on one line: a `|` inside a code span does not end
    the cell (Python-Markdown's tables), and an escape would show, as would any in code."""
    return " ".join(text.split())


def model_reference() -> str:
    """The Python API section of internals.md: every public dataclass of the resolved model
    (`hwspec.model.node`, `hwspec.model.cluster`) with a row per attribute (name, type as
    annotated, docstring: units are said there), then every public name of `hwspec.testing`
    (each strategy's signature and docstring)."""
    lines = [
        "## The resolved model: classes and attributes",
        "",
        "What rules, generators and property tests read: frozen dataclasses, generated from the classes",
        "themselves when the site is built. Attributes are flat: a GPU's bus id is `gpu.bus`, its PCIe",
        "link `gpu.physical` (not `gpu.pcie.bus`). Units are canonical: bytes, bytes/s per direction,",
        "FLOP/s; `None` is a figure the platform does not know (`part: unknown`, `capacity: unknown`).",
        "Connectivity (paths, NUMA placement, NIC shares) is the platform's topology's, `topology_of(platform)`",
        "(`hwspec.topology.node.Topology`).",
        "",
    ]
    for (module_name, classes), (_module, _top, how) in zip(model_classes(), MODEL_MODULES, strict=True):
        lines += [f"### `{module_name}`", "", f"{how}.", ""]
        for cls in classes:
            bases = [base.__name__ for base in cls.__bases__ if base is not object]
            heading = f"#### {cls.__name__}" + (f" ({', '.join(bases)})" if bases else "")
            lines += [f"{heading} {{ #{anchor(cls.__name__)} }}", ""]
            if cls.__doc__:
                lines += [plain(inspect.cleandoc(cls.__doc__)), ""]
            lines += ["| attribute | type | what |", "|---|---|---|"]
            for name, kind, doc in public_attributes(cls):
                lines.append(f"| `{_code_cell(name)}` | `{_code_cell(kind)}` | {cell(doc)} |")
            lines.append("")
    lines += [
        "## Strategies: `hwspec.testing`",
        "",
        "Every public name of `hwspec.testing` (its `__all__`), generated from the code: each",
        "strategy's signature and docstring. It needs hypothesis (`pip install 'hwspec[test]'`).",
        "",
    ]
    for name, value in public_strategies():
        lines += [f"### {name} {{ #{anchor(name)} }}", ""]
        if inspect.isfunction(value):
            lines += [*_signature_block(name, value), ""]
            lines += [plain(inspect.getdoc(value) or ""), ""]
        elif isinstance(value, type):
            lines += [plain(inspect.getdoc(value) or ""), ""]
        else:
            lines += [_constant_text(name, value), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the topology's queries


QUERY_REFERENCE_MARKER = "<!-- generated: topology queries -->"
"""The line of docs/site-rules.md that the mkdocs hook replaces with `query_reference()`."""

QUERY_CLASSES = (("hwspec.topology.node", "Topology", "`ctx.topology` of a node rule or generator; `topology_of(platform)`"),
                 ("hwspec.topology.cluster", "ClusterTopology", "`ctx.topology` of a cluster rule or generator; `topology_of(cluster)`"))
"""(module, class, who gets one): the topologies whose queries `query_reference` lists."""

_SECTION_COMMENT = re.compile(r"^\s*# -{5,} (.+?)\s*$")


def _member_sections(cls: type) -> dict[str, str]:
    """Each member defined in `cls`'s own body -> the section it is under: the text of the last
    `# ----- section` comment above it in the class's source ("" before the first)."""
    node = _class_nodes(cls.__module__)[cls.__name__]
    lines = Path(inspect.getsourcefile(cls) or "").read_text().splitlines()
    sections: dict[str, str] = {}
    current, line = "", node.lineno
    for statement in node.body:
        first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
        for text in lines[line:first - 1]:
            match = _SECTION_COMMENT.match(text)
            if match:
                current = match.group(1)
        line = statement.end_lineno or first
        names = ([statement.name] if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) else
                 [statement.target.id] if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) else
                 [t.id for t in statement.targets if isinstance(t, ast.Name)] if isinstance(statement, ast.Assign) else [])
        sections.update(dict.fromkeys(names, current))
    return sections


def _annotation_text(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))


def topology_queries(cls: type) -> list[tuple[str, str, str, str]]:
    """(section, query as called, what it returns, docstring) for every public member of the
    topology class `cls`: the members of its bases (`name`, `locate()`, ...) and those of `cls`
    above its first section comment (`platform`, `graph`) in section "the model", then `cls`'s
    others in source order under its source's section comments.
    Methods show their parameters (`nics_of(gpu_id: str)`), attributes and properties their name."""
    rows: list[tuple[str, str, str, str]] = []
    seen: set[str] = set()
    for klass in reversed([k for k in cls.__mro__ if k.__module__.startswith("hwspec.topology.")]):
        sections = _member_sections(klass)
        docs = attribute_docs(klass)
        own = klass is cls
        for name in sections:
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            section = (sections[name] if own else "") or "the model"
            value = vars(klass).get(name)
            if isinstance(value, (property, functools.cached_property)):
                function: Any = value.fget if isinstance(value, property) else value.func
                rows.append((section, name, _annotation_text(inspect.signature(function).return_annotation), inspect.getdoc(value) or ""))
            elif inspect.isfunction(value):
                signature = _unquoted(inspect.signature(value))
                shown = signature.replace(parameters=list(signature.parameters.values())[1:], return_annotation=inspect.Signature.empty)
                rows.append((section, f"{name}{shown}", _annotation_text(signature.return_annotation), inspect.getdoc(value) or ""))
            else:
                annotation = vars(klass).get("__annotations__", {}).get(name)
                rows.append((section, name, _annotation_text(annotation) if annotation is not None else type(value).__name__,
                             docs.get(name, "")))
    return rows


def query_reference() -> str:
    """The query reference of docs/site-rules.md: for `Topology` and `ClusterTopology`, every
    public query (`topology_queries`) with what it takes and returns and its docstring, under the
    sections the code groups them in; generated from the classes when the site is built."""
    lines: list[str] = []
    for module_name, name, who in QUERY_CLASSES:
        cls = getattr(importlib.import_module(module_name), name)
        lines += [f"### {name} {{ #{anchor(name)} }}", "", f"`{module_name}.{name}`: {who}.", ""]
        if cls.__doc__:
            lines += [plain(inspect.cleandoc(cls.__doc__)), ""]
        section = None
        for where, query, returns, doc in topology_queries(cls):
            if where != section:
                if section is not None:
                    lines.append("")
                lines += [f"#### {name}: {where}", "", "| query | returns | what |", "|---|---|---|"]
                section = where
            lines.append(f"| `{_code_cell(query)}` | `{_code_cell(returns)}` | {cell(doc)} |")
        lines.append("")
    return "\n".join(lines)


GENERATED_SECTIONS: dict[str, dict[str, Callable[[], str]]] = {
    "internals.md": {MODEL_REFERENCE_MARKER: model_reference},
    "site-rules.md": {QUERY_REFERENCE_MARKER: query_reference},
}
"""Page under docs/ -> {marker line: the function whose text replaces it} (docs/hooks.py)."""


# ---------------------------------------------------------------- diagrams


DIAGRAMS_DIR = "images/diagrams"
"""Where the rendered diagrams are on the site: `images/diagrams/<platform>/<file>.svg`."""

SHIPPED_DIAGRAMS: tuple[tuple[str, str], ...] = (
    ("platforms/gb200-tray.yaml", "diagram"),
    ("platforms/aws-p5-48xlarge.yaml", "diagram"),
    ("platforms/gb200-nvl72.yaml", "cluster-diagram"),
)
"""(platform file, generator) whose drawings the diagrams page shows: a node drawn whole, a
node whose repeats are summarised (with its fabric view), a cluster with an NVLink domain."""

TUTORIAL_PAGE = "tutorial.md"
"""The page whose first ```yaml block is the node the tutorial builds; its diagram is drawn too."""

PLACEHOLDER_SVG = """<svg xmlns="http://www.w3.org/2000/svg" width="480" height="60" viewBox="0 0 480 60">
<text x="10" y="35" font-family="sans-serif" font-size="14">graphviz's dot was not installed when this site was built</text>
</svg>
"""
"""What stands in for each diagram when the site is built without graphviz."""


def _first_yaml_block(text: str) -> str:
    return text.split("```yaml\n", 1)[1].split("```", 1)[0]


def diagram_images(root: Path, docs_dir: Path, dot: str | None) -> dict[str, str]:
    """{path under the site: SVG} for every diagram of `SHIPPED_DIAGRAMS` (files under `root`)
    and of the tutorial's node (docs_dir/tutorial.md's first ```yaml block): the `.dot` files the
    generators plan, rendered by `dot` (None: `PLACEHOLDER_SVG`, so that the site still builds).
    Raises HwspecError when a platform does not load, GenerationError when dot fails."""
    import tempfile

    import hwspec
    from hwspec.generate.engine import render_svg

    def rendered(path: Path, generator: str) -> dict[str, str]:
        checked = hwspec.check(path)
        if checked.failed() or checked.topology is None:
            raise hwspec.HwspecError(checked.diagnostics)
        plan = hwspec.plan_for(checked.topology, only=[generator])
        return {f"{DIAGRAMS_DIR}/{name[:-4]}.svg": render_svg(dot, name, text) if dot else PLACEHOLDER_SVG
                for name, text in plan.items() if name.endswith(".dot")}

    images: dict[str, str] = {}
    for file, generator in SHIPPED_DIAGRAMS:
        images.update(rendered(root / file, generator))
    with tempfile.TemporaryDirectory() as work:
        node = Path(work) / "node.yaml"
        node.write_text(_first_yaml_block((docs_dir / TUTORIAL_PAGE).read_text()))
        images.update(rendered(node, "diagram"))
    return dict(sorted(images.items()))


GENERATED_PAGES: dict[str, Callable[[], str]] = {
    FIELDS_PAGE: field_reference,
    RULES_PAGE: rule_reference,
    CODES_PAGE: code_reference,
    PARTS_PAGE: parts_reference,
}
"""Path under docs/ -> the function that renders the page."""
