"""Printing diagnostics: text, JSON, GitHub workflow annotations and SARIF 2.1.0."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from hwspec import __version__
from hwspec.diagnostics import Diagnostic, Severity, real_path

FORMATS = ("text", "json", "github", "sarif")
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escalate(diagnostics: Iterable[Diagnostic], werror: bool) -> list[Diagnostic]:
    """With `werror`, warnings become errors (info stays info)."""
    out = []
    for d in diagnostics:
        if werror and d.severity == Severity.WARNING:
            d = Diagnostic(d.file, d.line, d.col, Severity.ERROR, d.code, d.message, d.hint, d.name, d.related)
        out.append(d)
    return out


def render(diagnostics: list[Diagnostic], fmt: str, rules: Iterable = ()) -> str:
    """The report in `fmt`; empty string for text/github with nothing to say."""
    if fmt == "text":
        return "".join(d.format() + "\n" for d in diagnostics)
    if fmt == "json":
        return json.dumps([_as_dict(d) for d in diagnostics], indent=2, sort_keys=True) + "\n"
    if fmt == "github":
        return "".join(_github(d) + "\n" for d in diagnostics)
    if fmt == "sarif":
        return json.dumps(sarif(diagnostics, rules), indent=2, sort_keys=True) + "\n"
    raise ValueError(f"unknown format {fmt!r}")


def _as_dict(d: Diagnostic) -> dict:
    return {"file": d.file, "line": d.line, "column": d.col, "severity": d.severity.label,
            "code": d.code, "rule": d.name or None, "message": d.message, "hint": d.hint}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _github(d: Diagnostic) -> str:
    message = d.message + (f"\nhint: {d.hint}" if d.hint else "")
    props = f"file={_escape_property(d.file)},line={d.line},col={d.col},title={_escape_property(d.tag)}"
    return f"::{_GITHUB_LEVEL[d.severity]} {props}::{_escape_data(message)}"


SRCROOT = "%SRCROOT%"
"""The uriBaseId of repository-relative artifact URIs (GitHub code scanning resolves them
against the checkout)."""


def repository_root(path: Path) -> Path | None:
    """The nearest directory at or above `path` holding `.git` (a directory, or a file in a
    git worktree), or None outside any repository."""
    for candidate in (path, *path.parents):
        if os.path.exists(candidate / ".git"):  # False (never an OSError) for a name over 255 bytes
            return candidate
    return None


def artifact_location(file: str) -> dict[str, str]:
    """A SARIF artifactLocation for a diagnostic's file, whatever path it was given by: relative
    to the root of the git repository holding it (uriBaseId %SRCROOT%, percent-encoded), else
    relative to the working directory when under it, else an absolute file: URI."""
    path = real_path(file) if file else Path.cwd()
    root = repository_root(path.parent)
    for base, base_id in ((root, SRCROOT), (real_path(Path.cwd()), None)):
        if base is not None and path.is_relative_to(base):
            location = {"uri": quote(os.fsencode(path.relative_to(base).as_posix()))}  # a non-UTF-8 name: its bytes
            return {**location, "uriBaseId": base_id} if base_id else location
    return {"uri": path.as_uri()}


def sarif(diagnostics: list[Diagnostic], rules: Iterable = ()) -> dict:
    """A SARIF 2.1.0 log with one run; rule metadata for every known rule and loader code."""
    descriptors: dict[str, dict] = {}
    for r in rules:
        descriptors[r.id] = {"id": r.id, "name": r.name, "shortDescription": {"text": r.summary or r.name},
                             "fullDescription": {"text": r.doc or r.name},
                             "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]}}
    for d in diagnostics:
        descriptors.setdefault(d.code, {"id": d.code, "name": d.name or d.code,
                                        "shortDescription": {"text": d.name or "platform file problem"}})
    ids = sorted(descriptors)
    results = []
    for d in diagnostics:
        text = d.message + (f"\nhint: {d.hint}" if d.hint else "")
        results.append({
            "ruleId": d.code, "ruleIndex": ids.index(d.code), "level": _SARIF_LEVEL[d.severity],
            "message": {"text": text},
            "locations": [{"physicalLocation": {
                "artifactLocation": artifact_location(d.file),
                "region": {"startLine": max(d.line, 1), "startColumn": max(d.col, 1)}}}],
        })
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "hwspec", "version": __version__,
                                "rules": [descriptors[i] for i in ids]}},
            "results": results,
        }],
    }
