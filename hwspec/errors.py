"""Turning pydantic validation errors into diagnostics that point into the YAML file."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from hwspec.diagnostics import Diagnostic, HwspecError, Position, Severity

DataPath = tuple[str | int, ...]


def dotted(path: DataPath) -> str:
    """`("gpus", 3, "pcie")` -> `gpus[3].pcie`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def nearest(word: str, choices: typing.Iterable[str]) -> str | None:
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


def _unwrap(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def model_at(model: type[BaseModel], path: DataPath) -> type[BaseModel] | None:
    """The pydantic model class that validates the mapping at `path`, if there is one."""
    current: Any = model
    for part in path:
        candidates = []
        for option in _unwrap(current):
            if isinstance(option, type) and issubclass(option, BaseModel) and isinstance(part, str):
                field = option.model_fields.get(part)
                if field is not None:
                    candidates.append(field.annotation)
            origin = typing.get_origin(option)
            if origin in (list, tuple) and isinstance(part, int):
                args = typing.get_args(option)
                candidates.append(args[0] if args else Any)
            if origin is dict and isinstance(part, str):
                candidates.append(typing.get_args(option)[1])
        if not candidates:
            return None
        current = candidates[0]
    models = [t for t in _unwrap(current) if isinstance(t, type) and issubclass(t, BaseModel)]
    return models[0] if models else None


def _describe(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validation_diagnostics(
    exc: ValidationError,
    model: type[BaseModel],
    data: Any,
    file: str,
    locate: Callable[[DataPath], Position],
    prefix: DataPath = (),
    locate_key: Callable[[DataPath], Position] | None = None,
) -> list[Diagnostic]:
    """One diagnostic per distinct problem in `exc`.

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
            owner = model_at(model, path[:-1])
            allowed = sorted(owner.model_fields) if owner else []
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


M = typing.TypeVar("M", bound=BaseModel)


def validate_document(model: type[M], doc: Any, expanded: Any) -> M:
    """`expanded.data` (an expanded `SourceDoc`) validated as `model`; on failure, HwspecError
    with one diagnostic per problem, located at the written line and column."""

    def locate(p: DataPath) -> Position:
        return doc.locate(expanded.written_path(p))

    try:
        return model.model_validate(expanded.data)
    except ValidationError as exc:
        raise HwspecError(validation_diagnostics(exc, model, expanded.data, doc.file, locate,
                                                 locate_key=lambda p: doc.locate_key(expanded.written_path(p)))) from None
