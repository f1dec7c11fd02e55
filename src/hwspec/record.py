"""`record`: the frozen dataclasses of the resolved model, made cheaper to define.

`@dataclass(frozen=True)` generates and compiles six methods per class (`__init__`,
`__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`), which made defining the
model's classes a tenth of `hwspec validate`'s run time. A `record` class is still a frozen
dataclass as far as its users can tell (`dataclasses.fields`, `replace` and `asdict` work,
assignment and deletion raise `FrozenInstanceError`), but only its `__init__` is compiled:
`__eq__`, `__hash__`, `__repr__`, `__setattr__` and `__delattr__` come from `Record`, written
once, with the meaning the generated ones have: equal when of the same class with equal
compared fields, hashed by those fields, shown with the `repr=True` ones, never assigned.

The one visible difference: `dataclasses` records such a class as not frozen
(`__dataclass_params__.frozen` is False), because `Record` freezes it, not `dataclass`.
"""

from __future__ import annotations

import operator
import reprlib
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, fields
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

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

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
    """`@dataclass(frozen=True)` for a subclass of `Record` (see the module docstring).
    Fields may have defaults, default factories, `init=False`, `repr`/`compare` flags, and the
    class a `__post_init__`; not `InitVar` (its `__init__` takes no such parameter) and not
    keyword-only fields (refused)."""
    if not issubclass(cls, Record):
        raise TypeError(f"{cls.__name__}: a record class derives from hwspec.record.Record")
    dataclass(init=False, eq=False, repr=False)(cls)  # fields and match_args: nothing compiled
    if "__init__" not in cls.__dict__:
        cls.__init__ = _initializer(cls)  # type: ignore[misc]
    return cls


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()
"""Default of an `__init__` parameter whose field has a default factory: call the factory."""


def _initializer(cls: type) -> Callable[..., None]:
    """The `__init__` a frozen dataclass would have: parameters in field order, each field set
    with `object.__setattr__`, then `__post_init__` if the class has one."""
    namespace: dict[str, Any] = {"__record_set__": object.__setattr__, "__record_factory__": _FACTORY}
    parameters, body = ["self"], []
    for f in fields(cls):  # the plain fields: not ClassVar, not InitVar (which records do not take)
        if f.kw_only is True:
            raise TypeError(f"{cls.__name__}.{f.name}: a record has no keyword-only fields")
        value = _field_value(f, namespace, parameters)
        if value is not None:
            body.append(f"__record_set__(self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__({', '.join(parameters)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _field_value(f: Field, namespace: dict[str, Any], parameters: list[str]) -> str | None:
    """The expression `__init__` sets field `f` to (None: left unset), adding its parameter."""
    default, factory = f"__record_default_{f.name}__", f"__record_factory_{f.name}__"  # no field's name
    if f.default is not MISSING:
        namespace[default] = f.default
    if f.default_factory is not MISSING:
        namespace[factory] = f.default_factory
    if not f.init:
        return default if f.default is not MISSING else f"{factory}()" if f.default_factory is not MISSING else None
    if f.default is MISSING and f.default_factory is MISSING and "=" in parameters[-1]:
        raise TypeError(f"non-default argument {f.name!r} follows default argument")
    if f.default_factory is not MISSING:
        parameters.append(f"{f.name}=__record_factory__")
        return f"{factory}() if {f.name} is __record_factory__ else {f.name}"
    parameters.append(f"{f.name}={default}" if f.default is not MISSING else f.name)
    return f.name
