"""Turning pydantic validation errors into diagnostics that point into the YAML file.

Everything is read from pydantic's public API: the allowed keys of a mapping from the models'
`model_fields` and their annotations, and each message from the error's `type` and `ctx`
(`ValidationError.errors()`) in the words of pydantic's own messages, with the value as the
user wrote it, so that no message depends on the installed pydantic (only an error type the
spec models never raise keeps pydantic's `msg`).
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, TypeVar

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity
from hwspec.source.expand import Expanded
from hwspec.source.loader import SourceDoc

if typing.TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError
    from pydantic_core import ErrorDetails

DataPath = tuple[str | int, ...]

Model = TypeVar("Model", bound="BaseModel")


class Where(Protocol):
    """Where the data being validated is written: `value(path)` and `key(path)` give the line
    and column of the value, and of the key, at a data path of it (1-based)."""

    @property
    def file(self) -> str: ...

    def value(self, path: DataPath) -> Location: ...

    def key(self, path: DataPath) -> Location: ...


@dataclass(frozen=True)
class Written:
    """Where the data at `base` in an expanded document (`doc`, `expanded`) is written. An
    unknown key is located at the key itself, or with `keys=False` at its value."""

    doc: SourceDoc
    expanded: Expanded
    base: DataPath = ()
    keys: bool = True

    @property
    def file(self) -> str:
        return self.doc.file

    def value(self, path: DataPath) -> Location:
        return self.doc.locate(self.expanded.written_path(self.base + path))

    def key(self, path: DataPath) -> Location:
        if not self.keys:
            return self.value(path)
        return self.doc.locate_key(self.expanded.written_path(self.base + path))


@dataclass(frozen=True)
class Overlay:
    """Where a mapping merged from two is written: a path in `overridden` (or below one) in
    `over`, any other in `under` (a part's entry with the platform's `override` merged in).
    Keys are located at their values, as `over` locates them."""

    over: Where
    under: Where
    overridden: Collection[DataPath]

    @property
    def file(self) -> str:
        return self.over.file

    def value(self, path: DataPath) -> Location:
        if any(path[:n] in self.overridden for n in range(len(path), 0, -1)):
            return self.over.value(path)
        return self.under.value(path)

    def key(self, path: DataPath) -> Location:
        return self.value(path)

_ABSENT = object()
"""No value written at a place (a missing key, an index past the end)."""


def dotted(path: DataPath) -> str:
    """`("gpus", 3, "pcie")` -> `gpus[3].pcie`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def nearest(word: str, choices: typing.Iterable[str], cutoff: float = 0.6) -> str | None:
    """The choice most like `word` (difflib's similarity ratio, at least `cutoff`), or None."""
    import difflib  # only a misspelt name needs it

    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return matches[0] if matches else None


def _data_path(data: Any, loc: tuple[str | int, ...]) -> tuple[DataPath, Any]:
    """The path in `data` that pydantic's error location `loc` names: its union and function
    tags dropped, keeping keys that exist in `data`; with the value written there (`_ABSENT`
    when there is none).

    The last element is kept even when absent (a missing key still names its place)."""
    path: list[str | int] = []
    node = data
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(part, str) and isinstance(node, dict) and part in node:
            path.append(part)
            node = node[part]
        elif last and ((isinstance(part, str) and isinstance(node, dict)) or (isinstance(part, int) and isinstance(node, (list, tuple)))):
            path.append(part)
            node = _ABSENT
    return tuple(path), node


def _options(annotation: Any) -> list[Any]:
    """The types a value of `annotation` is validated as: `Annotated` metadata dropped, unions
    flattened in the order they are written."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _options(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _options(arg)]
    return [annotation]


def _is_model(annotation: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """The model's fields by the key a document writes them with (the alias where there is one)."""
    return {field.validation_alias if isinstance(field.validation_alias, str) else field.alias or name: field
            for name, field in model.model_fields.items()}


def _item(annotation: Any, part: str | int) -> tuple[bool, Any]:
    """(whether `part` can be a key or index of a value of `annotation`, the annotation of the item there)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if _is_model(annotation) and isinstance(part, str):
        field = _fields(annotation).get(part)
        return (True, field.annotation) if field is not None else (False, None)
    if origin is tuple and isinstance(part, int):
        if len(args) == 2 and args[1] is Ellipsis:
            return True, args[0]
        return (True, args[part]) if 0 <= part < len(args) else (not args, Any)
    if origin in (list, set, frozenset) and isinstance(part, int):
        return True, args[0] if args else Any
    if origin is dict and isinstance(part, str):
        return True, args[1] if len(args) == 2 else Any
    return False, None


def model_at(model: type[BaseModel], path: DataPath) -> type[BaseModel] | None:
    """The pydantic model class that validates the mapping at `path` in a document `model`
    validates, if there is one. Where several branches of a union fit, the first one written
    in the model is taken."""
    current: Any = model
    for part in path:
        candidates = [inner for option in _options(current) for fits, inner in [_item(option, part)] if fits]
        if not candidates:
            return None
        current = candidates[0]
    models = [option for option in _options(current) if _is_model(option)]
    return models[0] if models else None


def allowed_keys(model: type[BaseModel], path: DataPath) -> list[str]:
    """The keys the mapping at `path` may have, sorted; empty when no model validates it."""
    owner = model_at(model, path)
    return sorted(_fields(owner)) if owner is not None else []


def _describe(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any) -> str:
    """A bound in an error's `ctx` as pydantic writes it: no exponent, no '.0' on a whole float."""
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else format(Decimal(repr(value)), "f")
    return str(value)


def _plural(count: Any) -> str:
    return "" if count == 1 else "s"


_MESSAGES: dict[str, Callable[[dict[str, Any]], str]] = {
    "literal_error": lambda ctx: f"Input should be {ctx['expected']}",
    "greater_than": lambda ctx: f"Input should be greater than {_number(ctx['gt'])}",
    "greater_than_equal": lambda ctx: f"Input should be greater than or equal to {_number(ctx['ge'])}",
    "less_than": lambda ctx: f"Input should be less than {_number(ctx['lt'])}",
    "less_than_equal": lambda ctx: f"Input should be less than or equal to {_number(ctx['le'])}",
    "too_short": lambda ctx: (f"{ctx['field_type']} should have at least {ctx['min_length']} item{_plural(ctx['min_length'])} "
                              f"after validation, not {ctx['actual_length']}"),
    "too_long": lambda ctx: (f"{ctx['field_type']} should have at most {ctx['max_length']} item{_plural(ctx['max_length'])} "
                             f"after validation, not {ctx['actual_length']}"),
    "string_too_short": lambda ctx: f"String should have at least {ctx['min_length']} character{_plural(ctx['min_length'])}",
    "string_too_long": lambda ctx: f"String should have at most {ctx['max_length']} character{_plural(ctx['max_length'])}",
    "string_pattern_mismatch": lambda ctx: f"String should match pattern '{ctx['pattern']}'",
    "string_type": lambda ctx: "Input should be a valid string",
    "int_type": lambda ctx: "Input should be a valid integer",
    "int_parsing": lambda ctx: "Input should be a valid integer, unable to parse string as an integer",
    "int_from_float": lambda ctx: "Input should be a valid integer, got a number with a fractional part",
    "float_type": lambda ctx: "Input should be a valid number",
    "float_parsing": lambda ctx: "Input should be a valid number, unable to parse string as a number",
    "finite_number": lambda ctx: "Input should be a finite number",
    "bool_type": lambda ctx: "Input should be a valid boolean",
    "bool_parsing": lambda ctx: "Input should be a valid boolean, unable to interpret input",
    "dict_type": lambda ctx: "Input should be a valid dictionary",
    "list_type": lambda ctx: "Input should be a valid list",
    "tuple_type": lambda ctx: "Input should be a valid tuple",
    "model_type": lambda ctx: f"Input should be a valid dictionary or instance of {ctx['class_name']}",
    "model_attributes_type": lambda ctx: "Input should be a valid dictionary or object to extract fields from",
}
"""The message of each error type the spec models raise, from the error's `ctx` (pydantic's
wording, fixed here). The spec's own errors (`hwspec_*`, `unit`) carry their message as
written in `hwspec.spec.checks` and `hwspec.spec.units`; any other type keeps pydantic's."""


def _message(error: ErrorDetails) -> str:
    build = _MESSAGES.get(error["type"])
    if build is not None:
        try:
            return build(error.get("ctx") or {})
        except KeyError:  # a context this release of pydantic does not give: its own words
            pass
    return error["msg"]


def _written(loc: tuple[str | int, ...], at_path: Any, error: ErrorDetails) -> Any:
    """The value the user wrote where the error is: `at_path` (from `_data_path`), or the key
    itself for an error about a mapping key. (pydantic's `input` may be a value a validator
    already converted, e.g. the 0.0 of '0 GB/s', depending on its release.)"""
    if (loc and loc[-1] == "[key]") or at_path is _ABSENT:
        return error.get("input", _ABSENT)
    return at_path


def validation_diagnostics(exc: ValidationError, model: type[BaseModel], data: Any, where: Where,
                           prefix: DataPath = ()) -> list[Diagnostic]:
    """One diagnostic per distinct problem in `exc`, raised validating `data` with `model` (the
    pydantic model class: where the allowed keys come from), located by `where` (paths in `data`).

    Errors that only differ by union branch are merged into one message. `prefix` is prepended
    to the paths the messages name when `data` is a part of a larger document (a part
    override). Unknown keys are located at `where.key`, other problems at `where.value`."""
    grouped: dict[tuple[DataPath, str], list[tuple[ErrorDetails, Any]]] = {}
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        path, at_path = _data_path(data, loc)
        kind = error["type"]
        group = "extra" if kind == "extra_forbidden" else ("missing" if kind == "missing" else "value")
        grouped.setdefault((path, group), []).append((error, _written(loc, at_path, error)))

    diagnostics = []
    for (path, group), errors in grouped.items():
        full = prefix + path
        named = dotted(full)
        hint = None
        if group == "extra":
            key = str(path[-1])
            allowed = allowed_keys(model, path[:-1])
            guess = nearest(key, allowed)
            message = f"{dotted(full[:-1]) + ': ' if full[:-1] else ''}unknown key '{key}'"
            if allowed:
                hint = (f"did you mean '{guess}'? " if guess else "") + "allowed keys here: " + ", ".join(allowed)
            code, pos = Code.UNKNOWN_KEY, where.key(path)
        elif group == "missing":
            message = f"{dotted(full[:-1]) + ': ' if full[:-1] else ''}missing required key '{path[-1]}'"
            code, pos = Code.MISSING_KEY, where.value(path[:-1])
        else:
            messages = []
            for error, written in errors:
                text = _message(error)
                if error["type"] != "unit" and not error["type"].startswith("hwspec") and written is not _ABSENT:
                    text += f", got {_describe(written)}"
                if text not in messages:
                    messages.append(text)
            body = messages[0] if len(messages) == 1 else "matches none of the accepted forms: " + "; or ".join(messages)
            message = f"{named + ': ' if named else ''}{body}"
            code, pos = Code.WRONG_VALUE, where.value(path)
        diagnostics.append(Diagnostic(where.file, pos.line, pos.col, Severity.ERROR, code, message, hint))
    return diagnostics


def validate(model: type[Model], data: Any, where: Where, prefix: DataPath = ()) -> tuple[Model | None, list[Diagnostic]]:
    """`data` validated with `model` (a pydantic model class): the instance and no diagnostics,
    or None and one located diagnostic per problem (`validation_diagnostics`)."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, validation_diagnostics(exc, model, data, where, prefix)


def validate_document(model: type[Model], doc: SourceDoc, expanded: Expanded) -> Model:
    """`expanded.data` (an expanded `SourceDoc`) validated with `model` (a pydantic model class);
    on failure, HwspecError with one diagnostic per problem, located at the written line and
    column."""
    valid, errors = validate(model, expanded.data, Written(doc, expanded))
    if valid is None:
        raise HwspecError(errors)
    return valid
