"""mkdocs hook: adds the generated reference pages (hwspec.cli.docsgen.GENERATED_PAGES) to the
site at build time, rendered from the spec models, the built-in rules and the code registry of
the hwspec that runs mkdocs. Nothing generated is committed, so nothing can go stale."""

from __future__ import annotations

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from hwspec.cli.docsgen import GENERATED_PAGES


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path, render in GENERATED_PAGES.items():
        files.append(File.generated(config, path, content=render()))
    return files
