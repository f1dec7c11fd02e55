"""Turning pydantic validation errors into diagnostics that point into the YAML file.

The allowed keys of a mapping are read from the core schema of the pydantic model that
validated it.
"""

from __future__ import annotations

import typing
from typing import Any, Callable, Mapping

from hwspec.diagnostics import Diagnostic, HwspecError, Position, Severity

if typing.TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

DataPath = tuple[str | int, ...]


def dotted(path: DataPath) -> str:
    """`("gpus", 3, "pcie")` -> `gpus[3].pcie`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def nearest(word: str, choices: typing.Iterable[str]) -> str | None:
    import difflib  # only a misspelt name needs it

    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def real_path(data: Any, loc: tuple) -> DataPath:
    """Drop pydantic's union/function tags from `loc`, keeping keys that exist in `data`.

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
        elif isinstance(part, str) and isinstance(node, dict) and last:
            path.append(part)
        elif isinstance(part, int) and isinstance(node, (list, tuple)) and last:
            path.append(part)
    return tuple(path)


def core_schema_of(model: type[BaseModel] | Mapping[str, Any]) -> Mapping[str, Any]:
    """The pydantic_core schema `model` validates with."""
    if isinstance(model, Mapping):
        return model
    model.model_rebuild()  # a pydantic model built on first use (defer_build)
    return model.__pydantic_core_schema__


_WRAPPERS = frozenset({"nullable", "default", "function-before", "function-after", "function-wrap"})


def _branches(schema: Mapping[str, Any], definitions: dict[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The schemas a value here is validated by, wrappers and references removed, unions
    flattened in their order (`definitions` collects what `definitions` schemas name)."""
    kind = schema["type"]
    if kind == "definitions":
        definitions.update({d["ref"]: d for d in schema["definitions"]})
        return _branches(schema["schema"], definitions)
    if kind == "definition-ref":
        return _branches(definitions[schema["schema_ref"]], definitions)
    if kind in _WRAPPERS and "schema" in schema:
        return _branches(schema["schema"], definitions)
    if kind == "union":
        return [b for choice in schema["choices"]
                for b in _branches(choice[0] if isinstance(choice, tuple) else choice, definitions)]
    if kind == "tagged-union":
        return [b for choice in schema["choices"].values() for b in _branches(choice, definitions)]
    return [schema]


_ANY: Mapping[str, Any] = {"type": "any"}


def model_at(model: type[BaseModel] | Mapping[str, Any], path: DataPath,
             definitions: dict[str, Mapping[str, Any]] | None = None) -> Mapping[str, Any] | None:
    """The core schema of the model (`type: model`) that validates the mapping at `path` in a
    document `model` validates, if there is one. Where several branches of a union fit, the
    first one written in the model is taken. `definitions` receives the named schemas seen."""
    definitions = {} if definitions is None else definitions
    current = core_schema_of(model)
    for part in path:
        candidates = []
        for option in _branches(current, definitions):
            kind = option["type"]
            if kind == "model" and isinstance(part, str):
                fields = _fields(option, definitions)
                if part in fields:
                    candidates.append(fields[part]["schema"])
            elif kind in ("list", "tuple") and isinstance(part, int):
                items = option.get("items_schema", _ANY)
                candidates.append((items[0] if items else _ANY) if isinstance(items, list) else items)
            elif kind == "dict" and isinstance(part, str):
                candidates.append(option.get("values_schema", _ANY))
        if not candidates:
            return None
        current = candidates[0]
    models = [b for b in _branches(current, definitions) if b["type"] == "model"]
    return models[0] if models else None


def _fields(model: Mapping[str, Any], definitions: dict[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The fields of a `type: model` core schema (its inner `model-fields`)."""
    inner = [b for b in _branches(model["schema"], definitions) if b["type"] == "model-fields"]
    return inner[0]["fields"] if inner else {}


def allowed_keys(model: type[BaseModel] | Mapping[str, Any], path: DataPath) -> list[str]:
    """The keys the mapping at `path` may have, sorted; empty when no model validates it."""
    definitions: dict[str, Mapping[str, Any]] = {}
    owner = model_at(model, path, definitions)
    return sorted(_fields(owner, definitions)) if owner is not None else []


def _describe(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validation_diagnostics(
    exc: ValidationError,
    model: type[BaseModel] | Mapping[str, Any],
    data: Any,
    file: str,
    locate: Callable[[DataPath], Position],
    prefix: DataPath = (),
    locate_key: Callable[[DataPath], Position] | None = None,
) -> list[Diagnostic]:
    """One diagnostic per distinct problem in `exc`, raised validating `data` with `model` (a
    pydantic model class or a core schema: where the allowed keys come from).

    Errors that only differ by union branch are merged into one message. `prefix` is prepended
    to paths when `data` is a part of a larger document (used for part overrides). Unknown keys
    are located with `locate_key` (the key itself) when given, other problems at the value."""
    grouped: dict[tuple[DataPath, str], list[dict]] = {}
    for error in exc.errors(include_url=False):
        path = real_path(data, tuple(error["loc"]))
        kind = error["type"]
        group = "extra" if kind == "extra_forbidden" else ("missing" if kind == "missing" else "value")
        grouped.setdefault((path, group), []).append(error)

    diagnostics = []
    for (path, group), errors in grouped.items():
        full = prefix + path
        where = dotted(full)
        hint = None
        if group == "extra":
            key = str(path[-1])
            allowed = allowed_keys(model, path[:-1])
            guess = nearest(key, allowed)
            message = f"{dotted(full[:-1]) + ': ' if full[:-1] else ''}unknown key '{key}'"
            if allowed:
                hint = (f"did you mean '{guess}'? " if guess else "") + "allowed keys here: " + ", ".join(allowed)
            code, pos = "E112", (locate_key or locate)(full)
        elif group == "missing":
            message = f"{dotted(full[:-1]) + ': ' if full[:-1] else ''}missing required key '{path[-1]}'"
            code, pos = "E111", locate(full[:-1])
        else:
            messages = []
            for error in errors:
                text = error["msg"]
                if error["type"] not in ("unit",) and not error["type"].startswith("hwspec") and "input" in error:
                    text += f", got {_describe(error['input'])}"
                if text not in messages:
                    messages.append(text)
            message = f"{where + ': ' if where else ''}" + ("; or ".join(messages) if len(messages) > 1 else messages[0])
            if len(messages) > 1:
                message = f"{where + ': ' if where else ''}matches none of the accepted forms: " + "; or ".join(messages)
            code, pos = "E110", locate(full)
        diagnostics.append(Diagnostic(file, pos.line, pos.col, Severity.ERROR, code, message, hint))
    return diagnostics


def validate_document(model: type[BaseModel], doc: Any, expanded: Any) -> Any:
    """`expanded.data` (an expanded `SourceDoc`) validated with `model` (a pydantic model class);
    on failure, HwspecError with one diagnostic per problem, located at the written line and
    column."""
    from pydantic import ValidationError

    def locate(p: DataPath) -> Position:
        return doc.locate(expanded.written_path(p))

    try:
        return model.model_validate(expanded.data)
    except ValidationError as exc:
        raise HwspecError(validation_diagnostics(exc, model, expanded.data, doc.file, locate,
                                                 locate_key=lambda p: doc.locate_key(expanded.written_path(p)))) from None
