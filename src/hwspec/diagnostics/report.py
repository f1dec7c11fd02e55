"""Printing diagnostics: text, JSON, GitHub workflow annotations and SARIF 2.1.0."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from hwspec import __version__
from hwspec.diagnostics import Code, Diagnostic, Severity, real_path
from hwspec.text import visible

FORMATS = ("text", "json", "github", "sarif")
class RuleInfo(Protocol):
    """What a SARIF log says of a rule (`hwspec.rules.Rule` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def severity(self) -> Severity: ...
    @property
    def summary(self) -> str: ...
    @property
    def doc(self) -> str: ...


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


def render(diagnostics: list[Diagnostic], fmt: str, rules: Iterable[RuleInfo] = (), codes: Iterable[Code] = ()) -> str:
    """The report in `fmt`; empty string for text/github with nothing to say. SARIF describes
    every one of `rules` and `codes` (those a command may report), and each code it reports."""
    if fmt == "text":
        return "".join(d.format() + "\n" for d in diagnostics)
    if fmt == "json":
        return json.dumps([_as_dict(d) for d in diagnostics], indent=2, sort_keys=True) + "\n"
    if fmt == "github":
        return github(diagnostics)
    if fmt == "sarif":
        return json.dumps(sarif(diagnostics, rules, codes), indent=2, sort_keys=True) + "\n"
    raise ValueError(f"unknown format {fmt!r}")


def _as_dict(d: Diagnostic) -> dict[str, Any]:
    return {"file": d.file, "line": d.line, "column": d.col, "severity": d.severity.label,
            "code": d.code, "rule": d.name or None, "message": d.message, "hint": d.hint}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(diagnostics: list[Diagnostic]) -> str:
    """GitHub workflow commands, one line each, whose `file=` is relative to the repository
    root (`source_root`) wherever hwspec ran, since GitHub resolves it against the checkout; a
    file outside that repository keeps the path it was reported with."""
    root = source_root(d.file for d in diagnostics)
    return "".join(_github(d, root) + "\n" for d in diagnostics)


def _github(d: Diagnostic, root: Path | None) -> str:
    file = _relative_to(_diagnostic_path(d.file), root) or d.file
    message = d.message + (f"\nhint: {d.hint}" if d.hint else "")
    props = f"file={_escape_property(file)},line={d.line},col={d.col},title={_escape_property(d.tag)}"
    return f"::{_GITHUB_LEVEL[d.severity]} {props}::{_escape_data(message)}"


SRCROOT = "%SRCROOT%"
"""The uriBaseId of repository-relative artifact URIs; the run's `originalUriBaseIds` says
where it was (GitHub code scanning resolves it against the checkout)."""


def repository_root(path: Path) -> Path | None:
    """The nearest directory at or above `path` holding `.git` (a directory, or a file in a
    git worktree or submodule), or None outside any repository."""
    for candidate in (path, *path.parents):
        if os.path.exists(candidate / ".git"):  # False (never an OSError) for a name over 255 bytes
            return candidate
    return None


def source_root(files: Iterable[str]) -> Path | None:
    """The one directory a report's paths are relative to: the root of the git repository
    holding the working directory, else of the first file that lies in one; None when none
    does. One root for the whole report, so that `%SRCROOT%` has one meaning."""
    starts = [real_path(Path.cwd()), *(_diagnostic_path(f).parent for f in dict.fromkeys(files))]
    return next((root for root in map(repository_root, starts) if root is not None), None)


def _diagnostic_path(file: str) -> Path:
    """A diagnostic's file, absolute with symlinks resolved; the working directory for none."""
    return real_path(file) if file else real_path(Path.cwd())


def _relative_to(path: Path, base: Path | None) -> str | None:
    """`path` relative to `base` with forward slashes, or None when it is not below it."""
    return path.relative_to(base).as_posix() if base is not None and path.is_relative_to(base) else None


def artifact_location(file: str, root: Path | None) -> dict[str, str]:
    """A SARIF artifactLocation for a diagnostic's file, whatever path it was given by:
    relative to `root` (uriBaseId %SRCROOT%) when below it, else relative to the working
    directory when below that, else an absolute file: URI. Relative URIs are percent-encoded
    (a non-UTF-8 name: its bytes)."""
    path = _diagnostic_path(file)
    for base, base_id in ((root, SRCROOT), (real_path(Path.cwd()), None)):
        relative = _relative_to(path, base)
        if relative is not None:
            location = {"uri": quote(os.fsencode(relative))}
            return {**location, "uriBaseId": base_id} if base_id else location
    return {"uri": path.as_uri()}


def _code_descriptor(code: Code) -> dict[str, Any]:
    """SARIF's description of a code: a live check's summary is its short name, so its
    description is its sentence; a drift code (`Code.is_drift`) is always reported as an error."""
    descriptor: dict[str, Any] = {"id": code.value, "name": code.printed_name or code.value,
                                  "shortDescription": {"text": code.doc if code.printed_name else code.summary},
                                  "fullDescription": {"text": code.doc}}
    if code.is_drift:
        descriptor["defaultConfiguration"] = {"level": "error"}
    return descriptor


def sarif(diagnostics: list[Diagnostic], rules: Iterable[RuleInfo] = (), codes: Iterable[Code] = ()) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run; rule metadata for every known rule and code (`rules`,
    `codes`) and every code the diagnostics carry."""
    descriptors: dict[str, dict[str, Any]] = {}
    for r in rules:
        descriptors[r.id] = {"id": r.id, "name": r.name, "shortDescription": {"text": r.summary or r.name},
                             "fullDescription": {"text": r.doc or r.name},
                             "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]}}
    for code in codes:
        descriptors[code.value] = _code_descriptor(code)
    for d in diagnostics:
        descriptors.setdefault(d.code, {"id": d.code, "name": d.name or d.code,
                                        "shortDescription": {"text": d.name or "platform file problem"}})
    ids = sorted(descriptors)
    root = source_root(d.file for d in diagnostics)
    results = []
    for d in diagnostics:
        text = d.message + (f"\nhint: {d.hint}" if d.hint else "")
        results.append({
            "ruleId": d.code, "ruleIndex": ids.index(d.code), "level": _SARIF_LEVEL[d.severity],
            "message": {"text": text},
            "locations": [{"physicalLocation": {
                "artifactLocation": artifact_location(d.file, root),
                "region": {"startLine": max(d.line, 1), "startColumn": max(d.col, 1)}}}],
        })
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "hwspec", "version": __version__, "rules": [descriptors[i] for i in ids]}},
        "results": results,
    }
    if root is not None:  # where %SRCROOT% was, as SARIF asks: an absolute URI ending in a slash
        run["originalUriBaseIds"] = {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}}
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}


# ------------------------------------------------------------------ health-check outputs of `hwspec diff`

NODE_REPORT_VERSION = 1
"""The `hwspec_report` version of the node report (`node_report`); readers ignore unknown keys."""
NODE_STATUS = {0: "clean", 1: "drift", 2: "unchecked"}
"""A node report's `status` by `hwspec diff`'s exit status."""
SUMMARY_LIMIT = 160
"""The longest `summary` (a Slurm drain reason, a Node Problem Detector message), in characters."""
_SUMMARY_UNSAFE = re.compile(r"[^A-Za-z0-9 _.:,=/@%+()-]")


def summary(diagnostics: list[Diagnostic], exit_code: int) -> str:
    """One line for a health checker: the first finding (`CODE message`, `+N more` when there are
    others) or what the status says. Only letters, digits, spaces and `_.:,=/@%+()-`, at most
    SUMMARY_LIMIT characters, so that it can go into a drain reason or a shell word as it is."""
    if not diagnostics:
        return {0: "the node matches its spec", 1: "the node differs from its spec"}.get(exit_code, "could not check the node")
    first = diagnostics[0]
    more = f" (+{len(diagnostics) - 1} more)" if len(diagnostics) > 1 else ""
    text = " ".join(_SUMMARY_UNSAFE.sub("_", f"{first.code} {first.message}").split())
    if len(text) + len(more) > SUMMARY_LIMIT:
        text = text[:SUMMARY_LIMIT - len(more) - 3].rstrip() + "..."
    return text + more


def node_report(findings: list[tuple[Diagnostic, str | None]], node: str, spec: str, platform: str | None,
                exit_code: int, fabric: tuple[str | None, int | None] | None = None) -> dict[str, Any]:
    """The node report (`hwspec diff --format json`, version NODE_REPORT_VERSION): which node, which
    spec, `status` and `exit_code`, and every finding with the spec device it is about (None when
    it is about no one device). Extra keys: `summary` is `summary()`; `fabric` is the NVLink
    domain (cluster UUID, clique id) all the node's GPUs are in, both null when the machine was
    asked (NVML, `nvidia-smi -q -x`) and its GPUs are in none, and `fabric` itself null when it
    was not asked or its GPUs disagree: not known, which `hwspec fleet-report --cluster` leaves out
    of its comparison across nodes. No timestamp: the same machine and spec give the same bytes."""
    diagnostics = [d for d, _ in findings]
    return {"hwspec_report": NODE_REPORT_VERSION, "node": node, "spec": spec, "platform": platform,
            "status": NODE_STATUS[exit_code], "exit_code": exit_code, "summary": summary(diagnostics, exit_code),
            "fabric": {"cluster_uuid": fabric[0], "clique_id": fabric[1]} if fabric is not None else None,
            "findings": [{"code": d.code, "severity": d.severity.label, "device": device, "message": d.message,
                          "file": d.file, "line": d.line, "col": d.col, "hint": d.hint, "rule": d.name or None}
                         for d, device in findings]}


def prometheus_label(value: str) -> str:
    """A label value of the Prometheus text exposition format, quotes included: backslash, double
    quote and line feed escaped (the only escapes the format has). The format is UTF-8: a value
    that cannot be written so (a non-UTF-8 `--node` or spec path, whose bytes Python holds as
    lone surrogates) is written as `visible` shows it (`\\xff` for the byte 0xff), never as the
    raw bytes, which the exposition's readers (promtool, Prometheus) refuse."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = visible(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def prometheus(findings: list[tuple[Diagnostic, str | None]], node: str, spec: str, exit_code: int) -> str:
    """The node's check in the Prometheus text exposition format (node_exporter's textfile
    collector): `hwspec_check_ok` (0 when the node could not be checked), `hwspec_node_drift`
    (1 when it differs from its spec) and one `hwspec_finding` sample per kind of finding, whose
    value is how many findings share its labels (a label set may appear only once)."""
    where = f"node={prometheus_label(node)},spec={prometheus_label(spec)}"
    counts: dict[tuple[str, str, str], int] = {}
    for d, device in findings:
        key = (d.code, device or "", d.severity.label)
        counts[key] = counts.get(key, 0) + 1
    lines = [
        "# HELP hwspec_check_ok Whether hwspec could compare the node with its spec (0: exit status 2).",
        "# TYPE hwspec_check_ok gauge",
        f"hwspec_check_ok{{{where}}} {int(exit_code != 2)}",
        "# HELP hwspec_node_drift Whether the node differs from its spec (1: exit status 1).",
        "# TYPE hwspec_node_drift gauge",
        f"hwspec_node_drift{{{where}}} {int(exit_code == 1)}",
        "# HELP hwspec_finding Findings of hwspec diff by code, spec device and severity.",
        "# TYPE hwspec_finding gauge",
    ]
    node_label = f"node={prometheus_label(node)}"
    for (code, device, severity), count in sorted(counts.items()):
        lines.append(f"hwspec_finding{{{node_label},code={prometheus_label(code)},device={prometheus_label(device)},"
                     f"severity={prometheus_label(severity)}}} {count}")
    return "\n".join(lines) + "\n"
