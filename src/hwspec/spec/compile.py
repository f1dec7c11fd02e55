"""Derive `hwspec/_spec_runtime.py`, the run-time form of the spec language, from `hwspec.spec.models`.

    python -m hwspec.spec.compile           # write hwspec/_spec_runtime.py
    python -m hwspec.spec.compile --check   # exit 1 when the committed module is stale

The pydantic models build their pydantic_core schemas; this module writes them out as Python
literals. Mechanically, with no knowledge of any particular model:

- keys pydantic keeps only for JSON Schema and serialization (`metadata`, `serialization`) are
  dropped: the run-time form only validates;
- every sub-schema that carries a `ref` (a model, with its model validators around it) is
  written once, as a module-level variable named after the model, and reused where it appears;
  the `ref` strings (pydantic puts object ids in them) become the model names;
- a model's `cls` (and a default factory that is a model) becomes a plain class of the same
  name, with the same bases (`hwspec.spec.runtime.RuntimeSpec` for `BaseModel`), so shared
  methods come from the same pydantic-free mixins (`hwspec.spec.checks.LinkMethods`);
- every other callable is written as its import path (`spec_checks.check_id`,
  `units.validate_bytes`), checked to name the very same object and to be outside pydantic.
  Anything else (a closure, a lambda, a partial, an object) is refused with its place in the
  schema: such a validator has to move to a module-level function first.

The module records the pydantic_core version it was made with; `hwspec.spec.runtime` uses it
only with that version.
"""

from __future__ import annotations

import argparse
import builtins
import functools
import importlib
import math
import re
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

import pydantic
import pydantic_core
from pydantic import BaseModel

from hwspec.spec import models as spec

from hwspec.spec import checks as spec_checks
from hwspec.spec.runtime import RUNTIME_MODELS

TARGET = Path(__file__).with_name("_spec_runtime.py")
DROPPED_KEYS = frozenset({"metadata", "serialization"})
LINE = 120


PYDANTIC_EQUIVALENTS: dict[str, Callable[..., Any]] = {
    "pydantic._internal._validators.greater_than_validator": spec_checks.greater_than,
    "pydantic._internal._validators.greater_than_or_equal_validator": spec_checks.greater_than_or_equal,
    "pydantic._internal._validators.less_than_validator": spec_checks.less_than,
    "pydantic._internal._validators.less_than_or_equal_validator": spec_checks.less_than_or_equal,
}
"""pydantic's own checks of `Field(gt=.., ge=.., lt=.., le=..)` on a value a validator function
produced (pydantic cannot put the bound on the inner `float` then), by import path, and their
pydantic-free equivalents (same error type and context; tests/test_spec_runtime.py compares them)."""


class CompileError(Exception):
    """A schema the run-time form cannot express; the message says where and why."""


def _import_path(obj: Any, where: str) -> str:
    """`module.qualname` of a module-level function or class, checked to name `obj` itself."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if module is None or qualname is None or "<" in qualname:
        raise CompileError(f"{where}: {obj!r} cannot be named by import path (a closure, lambda or object); "
                           "make it a module-level function")
    if module == "pydantic" or module.startswith(("pydantic.", "pydantic_core")):
        raise CompileError(f"{where}: {module}.{qualname} belongs to pydantic; the run-time form must not import it")
    target: Any = importlib.import_module(module)
    for attribute in qualname.split("."):
        target = getattr(target, attribute, None)
    if target is not obj:
        raise CompileError(f"{where}: {module}.{qualname} does not name {obj!r}")
    return f"{module}.{qualname}"


class _Writer:
    """Collects the model classes, the named sub-schemas and the imports of one module."""

    def __init__(self) -> None:
        self.classes: dict[type, str] = {}          # pydantic class -> run-time source
        self.refs: dict[str, list[tuple[Any, str]]] = {}  # canonical ref -> (comparable schema, variable name)
        self.variables: dict[str, str] = {}         # variable name -> rendered schema, in dependency order
        self.modules: set[str] = set()
        self.qualified: dict[str, str] = {}         # short ref -> the ref it stands for

    # -- names

    def model_class(self, cls: type, where: str) -> str:
        """The run-time class of a pydantic spec model (written, with its bases, on first use)."""
        if cls not in self.classes:
            bases = [self.base(base, where) for base in cls.__bases__]
            doc = f"Run-time form of `{cls.__module__}.{cls.__qualname__}`."
            self.classes[cls] = f"class {cls.__name__}({', '.join(bases)}):\n    \"\"\"{doc}\"\"\"\n\n    __slots__ = ()\n"
        return cls.__name__

    def base(self, base: type, where: str) -> str:
        if base is BaseModel:
            return "RuntimeSpec"
        if issubclass(base, BaseModel):
            return self.model_class(base, where)
        return self.callable(base, where)

    def callable(self, obj: Any, where: str) -> str:
        if isinstance(obj, type) and issubclass(obj, BaseModel):
            return self.model_class(obj, where)
        if getattr(builtins, getattr(obj, "__name__", ""), None) is obj:
            return obj.__name__
        if isinstance(obj, functools.partial):
            args = [self.render(arg, 0, f"{where}.args") for arg in obj.args]
            args += [f"{key}={self.render(value, 0, f'{where}.{key}')}" for key, value in obj.keywords.items()]
            self.modules.add("functools")
            return f"functools.partial({', '.join([self.callable(obj.func, where)] + args)})"
        named = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
        if named in PYDANTIC_EQUIVALENTS:
            obj = PYDANTIC_EQUIVALENTS[named]
        _import_path(obj, where)
        module = obj.__module__
        short = module.rpartition(".")[2]
        if any(other.rpartition(".")[2] == short and other != module for other in self.modules):
            raise CompileError(f"{where}: modules {module} and another both end in '{short}'")
        self.modules.add(module)
        return f"{short}.{obj.__qualname__}"

    def canonical_ref(self, ref: str) -> str:
        """`hwspec.spec.models.PcieLink:93975454884912` -> `PcieLink` (pydantic puts the object's id in it)."""
        qualified = re.sub(r":\d+$", "", ref)
        short = qualified.rpartition(".")[2]
        if self.qualified.setdefault(short, qualified) != qualified:
            raise CompileError(f"{ref}: two models are both named {short}")
        return short

    # -- rendering

    def render(self, node: Any, indent: int, where: str, inline: bool = False) -> str:
        """`node` as a Python expression starting at column `indent`; a sub-schema with a `ref`
        becomes the name of its variable unless `inline`."""
        if isinstance(node, dict):
            if "ref" in node and not inline:
                return self.named(node, where)
            items = []
            for key, value in node.items():
                if key in DROPPED_KEYS:
                    continue
                if key in ("ref", "schema_ref"):
                    value = self.canonical_ref(value)
                if key == "cls" or key == "default_factory" or (key == "function" and callable(value)):
                    items.append((key, self.callable(value, f"{where}.{key}")))
                else:
                    items.append((key, self.render(value, indent + 4, f"{where}.{key}")))
            return self.layout("{", "}", [f"{key!r}: {text}" for key, text in items], indent)
        if isinstance(node, (list, tuple)):
            parts = [self.render(value, indent + 4, f"{where}[{i}]") for i, value in enumerate(node)]
            if isinstance(node, tuple):
                return self.layout("(", ",)" if len(parts) == 1 else ")", parts, indent)
            return self.layout("[", "]", parts, indent)
        if node is None or isinstance(node, (bool, int, str)) or (isinstance(node, float) and math.isfinite(node)):
            return repr(node)
        raise CompileError(f"{where}: {node!r} is not a literal the run-time form can write")

    @staticmethod
    def layout(open_: str, close: str, parts: list[str], indent: int) -> str:
        flat = open_ + ", ".join(parts) + close
        if len(flat) + indent <= LINE and "\n" not in flat:
            return flat
        inner = " " * (indent + 4)
        return open_ + "\n" + "".join(f"{inner}{part},\n" for part in parts) + " " * indent + close

    def named(self, node: dict, where: str) -> str:
        """A sub-schema with a `ref`, written once as a module-level variable. pydantic may write
        one model inline in one schema and through `definitions` in another: such variants
        get variables of their own (`GpuPart_schema_2`), so that each is used where it is valid."""
        ref = self.canonical_ref(node["ref"])
        variants = self.refs.setdefault(ref, [])
        comparable = _comparable(node)
        for seen, name in variants:
            if seen == comparable:
                return name
        name = f"{ref}_schema" + (f"_{len(variants) + 1}" if variants else "")
        variants.append((comparable, name))
        self.variables[name] = self.render(node, 0, ref, inline=True)  # nested variables are added first
        return name


def _comparable(node: Any) -> Any:
    """`node` as the run-time form writes it, comparable with `==` (partials by their parts)."""
    if isinstance(node, dict):
        return {k: _comparable(v) for k, v in node.items() if k not in DROPPED_KEYS}
    if isinstance(node, (list, tuple)):
        return [_comparable(v) for v in node]
    if isinstance(node, functools.partial):
        return ("partial", node.func, _comparable(node.args), _comparable(node.keywords))
    return node


def _refers(node: Any) -> bool:
    """Whether `node` uses a `definition-ref` (it is valid only inside its `definitions`)."""
    if isinstance(node, dict):
        return node.get("type") == "definition-ref" or any(_refers(v) for v in node.values())
    if isinstance(node, list):
        return any(_refers(v) for v in node)
    return False


def _built(model: type[BaseModel]) -> Any:
    model.model_rebuild()
    return model.__pydantic_core_schema__


HEADER = '''"""GENERATED by `python -m hwspec.spec.compile` from the pydantic models in hwspec/spec.py. Do not edit.

The run-time form of the spec language: the pydantic_core schemas of {models}
and a plain class per model. `hwspec.spec.runtime` validates with them without importing
pydantic, when the installed pydantic_core is the one below. tests/test_spec_runtime.py
fails when this module no longer matches the models.
"""

from __future__ import annotations

{imports}
from hwspec.spec.runtime import RuntimeSpec

PYDANTIC_CORE_VERSION = {version!r}
PYDANTIC_VERSION = {pydantic_version!r}  # what made the schemas; the test extra of pyproject.toml pins it
'''


def render_module(models: Mapping[str, type[BaseModel]] | None = None) -> str:
    """The text of `hwspec/_spec_runtime.py` for the installed pydantic: the models of
    RUNTIME_MODELS in `hwspec.spec.models` (or `models`, by name). Raises CompileError."""
    if models is None:
        models = {name: getattr(spec, name) for name in RUNTIME_MODELS}
    writer = _Writer()
    top: dict[str, str] = {}
    for name, model in models.items():
        schema = _built(model)
        top[name] = writer.render(schema, 4, name)
    imports = "\n".join(f"from {module.rpartition('.')[0]} import {module.rpartition('.')[2]}"
                        if "." in module else f"import {module}" for module in sorted(writer.modules, key=lambda m: ("." in m, m)))
    out = [HEADER.format(models=", ".join(models), imports=imports, version=pydantic_core.__version__,
                       pydantic_version=pydantic.VERSION)]
    out.append("\n# ---------------------------------------------------------------- classes\n")
    for source in writer.classes.values():
        out.append(f"\n{source}\n")
    out.append("\n# ---------------------------------------------------------------- schemas\n")
    for variable, text in writer.variables.items():
        out.append(f"\n{variable} = {text}\n")
    out.append("\n# ---------------------------------------------------------------- models\n\n")
    for cls in writer.classes:
        standalone = [name for comparable, name in writer.refs.get(cls.__name__, ()) if not _refers(comparable)]
        if standalone:  # a variant that needs no `definitions` around it (for `Model()` and default factories)
            out.append(f"{cls.__name__}.__core_schema__ = {standalone[0]}\n")
    out.append("\nSCHEMAS = {\n" + "".join(f"    {name!r}: {text},\n" for name, text in top.items()) + "}\n")
    out.append('"""The core schema of each model of `hwspec.spec.runtime.RUNTIME_MODELS`."""\n')
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hwspec.spec.compile", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed module is stale; write nothing")
    args = parser.parse_args(argv)
    try:
        text = render_module()
    except CompileError as error:
        print(f"hwspec.spec.compile: {error}", file=sys.stderr)
        return 2
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else None
    if args.check:
        if current != text:
            print(f"{TARGET.name} is stale: run python -m hwspec.spec.compile", file=sys.stderr)
            return 1
        return 0
    if current != text:
        from hwspec.generate.writer import write_atomic_bytes

        write_atomic_bytes(TARGET, text.encode("utf-8"))
    print(f"{TARGET.name}: {'written' if current != text else 'up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
