"""mkdocs hook: adds what hwspec generates to the site at build time, from the hwspec that runs
mkdocs: the reference pages (hwspec.cli.docsgen.GENERATED_PAGES: fields, rules, codes, parts),
the generated sections of hand-written pages (GENERATED_SECTIONS: the Python API in
internals.md, the topology queries in site-rules.md) and the diagrams the diagrams page and the tutorial show (diagram_images: drawn
by hwspec's diagram generators, rendered by graphviz's `dot`). Nothing generated is committed,
so nothing can go stale."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from hwspec.cli.docsgen import GENERATED_PAGES, GENERATED_SECTIONS, diagram_images

log = logging.getLogger("mkdocs.hooks.hwspec")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path, render in GENERATED_PAGES.items():
        files.append(File.generated(config, path, content=render()))
    dot = shutil.which("dot")
    if dot is None:
        log.info("graphviz's dot is not installed: the diagrams are placeholders (apt-get install graphviz)")
    root = Path(config.config_file_path).parent
    for path, svg in diagram_images(root, Path(config.docs_dir), dot).items():
        files.append(File.generated(config, path, content=svg))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    for marker, render in GENERATED_SECTIONS.get(page.file.src_uri, {}).items():
        if markdown.count(marker) != 1:
            raise PluginError(f"{page.file.src_uri} must hold the line {marker!r} once: the hook puts the generated text there")
        markdown = markdown.replace(marker, render())
    return markdown
