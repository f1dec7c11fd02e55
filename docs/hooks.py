"""mkdocs hook: adds the generated reference pages (hwspec.cli.docsgen.GENERATED_PAGES) to the
site at build time, rendered from the spec models, the built-in rules, the code registry and the
parts catalogue of the hwspec that runs mkdocs, and fills the generated sections of hand-written
pages (hwspec.cli.docsgen.GENERATED_SECTIONS: the Python API in internals.md). Nothing generated
is committed, so nothing can go stale."""

from __future__ import annotations

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from hwspec.cli.docsgen import GENERATED_PAGES, GENERATED_SECTIONS


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path, render in GENERATED_PAGES.items():
        files.append(File.generated(config, path, content=render()))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    for marker, render in GENERATED_SECTIONS.get(page.file.src_uri, {}).items():
        if markdown.count(marker) != 1:
            raise PluginError(f"{page.file.src_uri} must hold the line {marker!r} once: the hook puts the generated text there")
        markdown = markdown.replace(marker, render())
    return markdown
