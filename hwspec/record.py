"""`record`: the frozen dataclasses of the resolved model, made cheaper to define.

`@dataclass(frozen=True)` generates and compiles six methods per class (`__init__`,
`__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`), which made defining the
model's classes a tenth of `hwspec validate`'s run time. A `record` class is still a frozen
dataclass (`dataclasses.fields`, `replace` and `asdict` work, assignment raises
`FrozenInstanceError`), but its `__eq__`, `__hash__` and `__repr__` come from `Record`, written
once, with the meaning the generated ones have: equal when of the same class with equal
compared fields, hashed by those fields, shown with the `repr=True` ones.
"""

from __future__ import annotations

import operator
import reprlib
from dataclasses import dataclass, fields
from typing import Any, Callable, TypeVar

T = TypeVar("T", bound=type)


class Record:
    """Base of `record` classes: value equality, hash and repr over the dataclass fields."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        compared = _getters(self.__class__)[0]
        return compared(self) == compared(other)

    def __hash__(self) -> int:
        return hash(_getters(self.__class__)[0](self))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = _getters(self.__class__)[1]
        return f"{self.__class__.__qualname__}(" + ", ".join(f"{name}={value!r}" for name, value in shown(self)) + ")"


_GETTERS: dict[type, tuple[Callable[[Any], tuple], Callable[[Any], list[tuple[str, Any]]]]] = {}


def _getters(cls: type) -> tuple[Callable[[Any], tuple], Callable[[Any], list[tuple[str, Any]]]]:
    """(the compared fields' values as a tuple, the shown fields' (name, value) pairs) of `cls`."""
    found = _GETTERS.get(cls)
    if found is None:
        compared = [f.name for f in fields(cls) if f.compare]
        shown = [f.name for f in fields(cls) if f.repr]
        values = operator.attrgetter(*compared) if compared else (lambda obj: ())
        get_compared = (lambda obj: (values(obj),)) if len(compared) == 1 else values
        get_shown = lambda obj: [(name, getattr(obj, name)) for name in shown]  # noqa: E731
        found = _GETTERS[cls] = (get_compared, get_shown)
    return found


def record(cls: T) -> T:
    """`@dataclass(frozen=True)` for a subclass of `Record` (see the module docstring)."""
    if not issubclass(cls, Record):
        raise TypeError(f"{cls.__name__}: a record class derives from hwspec.record.Record")
    return dataclass(frozen=True, eq=False, repr=False)(cls)
