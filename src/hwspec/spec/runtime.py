"""The spec language at run time: validators of platform and parts files without pydantic.

`hwspec.spec.models` (pydantic models) is the one definition of the spec language. Importing pydantic
and building validators from those models costs about 100 ms per process, more than the rest of
`hwspec validate`. So `hwspec.spec.compile` derives from the models, mechanically, the module
`hwspec.spec._runtime`: their pydantic_core schemas as Python literals, every validator named by
import path (`hwspec.spec.checks`, `hwspec.spec.units`), and a plain class per model. Validating
with it needs only `pydantic_core`. It is committed, never edited by hand, and a test fails when
it no longer matches what the models produce.

`spec_validator(name)` gives the validator of a top-level model (`RUNTIME_MODELS`). When the
installed pydantic_core is not the one the module was made with (pyproject allows any pydantic
2.6+), the schema format may differ: then the validators are built from the pydantic models,
as before, correct but slower (`runtime_form_current()` says which path is in use).

Instances of the run-time classes behave as the pydantic models' do for everything hwspec
does with them: attributes (the same `__dict__`), the methods of `hwspec.spec.checks` mixins
(`PcieLink.generation`), equality (same class and fields), hashing, frozenness, repr, copying
and pickling.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

from hwspec.spec import pydantic_core_ext
from hwspec.spec.pydantic_core_ext import SchemaValidator
from hwspec.record import Record, record

RUNTIME_MODELS = ("PartsCatalogue", "CpuPart", "GpuPart", "NicPart", "NodeSpec", "ClusterSpec")
"""The models hwspec validates documents (or part overrides) against, by name in `hwspec.spec.models`."""


class RuntimeSpec:
    """Base of the run-time spec classes in `hwspec.spec._runtime`.

    pydantic_core's model validator creates instances without calling `__init__` and sets the
    four slots below, as it does for a pydantic model; `__dict__` holds the fields. Calling the
    class with keyword arguments validates them (the default factories of the schemas do, e.g.
    `DeclaresSpec()`). Instances are frozen."""

    __slots__ = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    __core_schema__: Mapping[str, Any] | None = None
    """The class's own core schema (None for bases that are never validated on their own)."""

    def __init__(self, **data: Any) -> None:
        _class_validator(type(self)).validate_python(data, self_instance=self)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set '{name}'")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete '{name}'")

    def __getstate__(self) -> dict[str, Any]:
        return {"__dict__": self.__dict__, "__pydantic_fields_set__": self.__pydantic_fields_set__,
                "__pydantic_extra__": self.__pydantic_extra__, "__pydantic_private__": self.__pydantic_private__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():  # copy and pickle restore a frozen instance
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RuntimeSpec):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), tuple(self.__dict__.values())))

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value!r}" for key, value in self.__dict__.items())
        return f"{type(self).__name__}({fields})"


@functools.cache
def _class_validator(cls: type[RuntimeSpec]) -> SchemaValidator:
    if cls.__core_schema__ is None:
        raise TypeError(f"{cls.__name__} is a base class of the spec language; it is not validated on its own")
    return SchemaValidator(cls.__core_schema__)


@record
class SpecValidator(Record):
    """The validator of one spec model: `validate(data)` gives its instance or raises
    pydantic_core's `ValidationError`; `core_schema` is what it validates with (the error
    reporting in `hwspec.spec.translate` reads the allowed keys of a mapping from it)."""

    name: str
    core_schema: Mapping[str, Any]
    validator: SchemaValidator

    def validate(self, data: Any) -> Any:
        return self.validator.validate_python(data)


def runtime_form_current() -> bool:
    """True when `hwspec.spec._runtime` was made with the installed pydantic_core (it is used)."""
    from hwspec.spec import _runtime as _spec_runtime

    return _spec_runtime.PYDANTIC_CORE_VERSION == pydantic_core_ext.__version__


@functools.cache
def spec_validator(name: str) -> SpecValidator:
    """The validator of the model `name` (one of RUNTIME_MODELS): from the generated run-time
    form when it is current, else built from the pydantic model in `hwspec.spec.models`."""
    if name not in RUNTIME_MODELS:
        raise KeyError(f"{name} is not one of the run-time spec models {RUNTIME_MODELS}")
    if runtime_form_current():
        from hwspec.spec import _runtime as _spec_runtime

        schema = _spec_runtime.SCHEMAS[name]
        return SpecValidator(name, schema, SchemaValidator(schema))
    return pydantic_validator(name)


def pydantic_validator(name: str) -> SpecValidator:
    """The validator of the model `name` built from the pydantic model (imports pydantic)."""
    from hwspec.spec import models as spec

    model = getattr(spec, name)
    model.model_rebuild()
    return SpecValidator(name, model.__pydantic_core_schema__, model.__pydantic_validator__)
