"""The built-in templates compiled when hwspec is built, not on every run.

    python -m hwspec.generate.build_templates     # after changing generate/templates/ or the environment

jinja2 compiles a template to Python source and that to code; for the built-in templates
(`generate/templates/`, package data) the Python source is written once, into the package
`hwspec.generate.compiled` (one module per template, and `__init__.py` recording each
template's SHA-256 and the environment it was compiled for). A run loads a template's code
from that module with Python's own source loader, which keeps its bytecode beside it as for
every hwspec module: no cache is read from anywhere hwspec did not ship (see
`hwspec.generate.engine.template_environment`).

A compiled module is used only while its template's source hashes to the recorded SHA-256 and
the environment compiles as it did then (`fingerprint`: the jinja2 release and the lexer and
escaping options); otherwise the template is compiled from its source, as jinja2 does. So an
edited template renders as edited before the modules are written again, and another jinja2
release compiles its own. tests/test_prebuilt_templates.py fails while the
committed modules differ from what `hwspec.generate.build_templates` writes.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import re
import types
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import jinja2  # imported by the template environment only: `validate` never loads this module

COMPILED_PACKAGE = "hwspec.generate.compiled"
"""The package holding the compiled built-in templates."""


def compiled_dir() -> Path:
    """`generate/compiled/`, beside `generate/templates/`."""
    return Path(__file__).resolve().with_name("compiled")


def fingerprint(environment: jinja2.Environment) -> str:
    """What the compiled code of a template depends on besides its source: the jinja2 release
    and the environment's syntax, whitespace and escaping options."""
    options = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
               "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
               "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "autoescape",
               "optimized", "is_async")
    settings = ", ".join(f"{option}={getattr(environment, option)!r}" for option in options)
    extensions = ", ".join(sorted(environment.extensions))
    return f"jinja2 {jinja2.__version__}; {settings}; extensions=[{extensions}]"


def source_hash(source: str) -> str:
    """The SHA-256 of a template's source (as the loader reads it), in hex."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def module_name(template: str) -> str:
    """The compiled module's name for `template` (`cluster/nccl.conf.j2` -> `cluster__nccl_conf`)."""
    stem = template.removesuffix(".j2").replace("/", "__")
    return re.sub(r"\W", "_", stem)


def compiled_code(environment: jinja2.Environment, name: str, source: str) -> types.CodeType | None:
    """The code of built-in template `name` compiled when hwspec was built, or None when there is
    none for this `source` and `environment` (the caller compiles the source)."""
    from hwspec.generate import compiled

    entry = compiled.TEMPLATES.get(name)
    if entry is None or entry[1] != source_hash(source) or compiled.FINGERPRINT != fingerprint(environment):
        return None
    fullname = f"{COMPILED_PACKAGE}.{entry[0]}"
    spec = importlib.util.find_spec(fullname)
    if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
        return None
    return spec.loader.get_code(fullname)


class BuiltinLoader(jinja2.FileSystemLoader):
    """Loads the built-in templates: each one's code from `compiled_code` when it can, compiled
    from source otherwise. Templates reload as jinja2's do: a template whose file changed is
    loaded again (and, no longer matching its hash, compiled from source)."""

    def load(self, environment: jinja2.Environment, name: str,
             globals: MutableMapping[str, Any] | None = None) -> jinja2.Template:
        source, filename, uptodate = self.get_source(environment, name)
        code = compiled_code(environment, name, source) or environment.compile(source, name, filename)
        return environment.template_class.from_code(environment, code, globals or {}, uptodate)
