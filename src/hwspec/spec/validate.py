"""A node platform document validated as the spec language says: its references, the part
names it uses, then the models (`NodeSpec`), every problem located where it is written.

The references and part names are checked on the expanded data, before the models, so that
they are reported together with type errors elsewhere in the file.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity
from hwspec.source.expand import Expanded
from hwspec.source.loader import SourceDoc
from hwspec.spec.checks import UNKNOWN
from hwspec.spec.parts import PART_SECTIONS
from hwspec.spec.references import matches, reference_diagnostics
from hwspec.spec.translate import Where, Written, dotted, nearest, validate

if TYPE_CHECKING:
    from hwspec.spec.models import NodeSpec


def validate_node(doc: SourceDoc, expanded: Expanded, part_names: Mapping[str, Collection[str]]) -> NodeSpec:
    """The node platform in `expanded` (the expanded `doc`) as a `NodeSpec`. `part_names` holds
    the names of the catalogue's parts by catalogue section (`cpus`, `gpus`, ...), sorted.

    Raises HwspecError with every problem found: E201/E202/E204 (references), E203 (unknown
    parts) and E1xx (shape and types)."""
    from hwspec.spec.models import NodeSpec

    where = Written(doc, expanded)
    errors = reference_diagnostics(expanded.data, where) + part_name_diagnostics(expanded.data, part_names, where)
    spec, invalid = validate(NodeSpec, expanded.data, where)
    errors += invalid
    if spec is None or errors:
        raise HwspecError(errors)
    return spec


def part_name_diagnostics(data: Any, part_names: Mapping[str, Collection[str]], where: Where) -> list[Diagnostic]:
    """E203 for every entry whose `part` is not in `part_names` (nor `unknown`), with the
    nearest known name and every known one."""
    found: list[Diagnostic] = []
    for section, kind, label in PART_SECTIONS:
        known = part_names.get(kind, ())
        for path, entry in matches(data, (section, "*")):
            name = entry.get("part") if isinstance(entry, dict) else None
            if isinstance(name, str) and name != UNKNOWN and name not in known:
                guess = nearest(name, known)
                pos = where.value(path + ("part",))
                found.append(Diagnostic(where.file, pos.line, pos.col, Severity.ERROR, Code.UNKNOWN_PART,
                                        f"{dotted(path)}: unknown {label} part '{name}'",
                                        (f"did you mean '{guess}'? " if guess else "") + f"known {label} parts: {', '.join(known) or 'none'}"))
    return found
