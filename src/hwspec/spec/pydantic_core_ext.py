"""pydantic_core's compiled validator, loaded without the package's Python part.

`import pydantic_core` runs the package's `__init__`, which imports `typing_extensions` and
`pydantic_core.core_schema`: about a hundred TypedDicts that type-check schema *construction*,
plus `fractions` and `decimal` for their annotations. That is about 17 ms of every hwspec run,
more than validating all the shipped platforms takes. At run time hwspec only calls the
compiled module `pydantic_core._pydantic_core` (schema validators and their errors) with schemas
it holds as literals (`hwspec.spec._runtime`). So this module loads that extension module by
itself and registers it under its own name in `sys.modules`, exactly as the import system
would: a later `import pydantic_core` (pydantic, `hwspec schema`, tests) finds it there, and
every class is the same object either way (`hwspec.spec.pydantic_core_ext.ValidationError is
pydantic_core.ValidationError`). One thing differs: the package then has no attribute
`_pydantic_core` (the import system binds it only when the package loads the module itself);
`from pydantic_core._pydantic_core import ...` and `import pydantic_core._pydantic_core as m`
work as always.

Whenever that is not plainly possible (pydantic_core already imported, installed other than as
files, no single extension module beside its `__init__`, or loading the module alone fails),
the ordinary import is used.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType

_EXTENSION = "pydantic_core._pydantic_core"


def _compiled_module() -> ModuleType:
    loaded = sys.modules.get(_EXTENSION)
    if loaded is not None:
        return loaded
    path = None if "pydantic_core" in sys.modules else _extension_path()
    if path is not None:
        try:
            return _load_alone(path)
        except Exception:  # e.g. a release whose module needs its package: import it as usual
            sys.modules.pop(_EXTENSION, None)
    import pydantic_core._pydantic_core as compiled  # the package, then its module, as usual

    return compiled


def _load_alone(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(_EXTENSION, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no loader for {path}")
    module = importlib.util.module_from_spec(spec)  # runs the module's initialisation
    sys.modules[_EXTENSION] = module
    spec.loader.exec_module(module)
    return module


def _extension_path() -> str | None:
    """The file of `pydantic_core._pydantic_core` when pydantic_core is a directory holding
    exactly one extension module of that name for this interpreter, else None."""
    package = importlib.util.find_spec("pydantic_core")  # finds the package without running it
    if package is None or not package.submodule_search_locations:
        return None
    found = [os.path.join(directory, "_pydantic_core" + suffix)
             for directory in package.submodule_search_locations
             for suffix in importlib.machinery.EXTENSION_SUFFIXES
             if os.path.isfile(os.path.join(directory, "_pydantic_core" + suffix))]
    return found[0] if len(found) == 1 else None


_core = _compiled_module()

SchemaValidator = _core.SchemaValidator
ValidationError = _core.ValidationError
PydanticCustomError = _core.PydanticCustomError
PydanticKnownError = _core.PydanticKnownError
__version__: str = _core.__version__
