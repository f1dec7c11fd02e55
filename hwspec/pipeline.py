"""The main flow for one platform file: load -> graph -> rules -> findings.

`check` never raises for bad input: everything becomes a diagnostic, and `Checked.ok`
says whether generation may go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import networkx as nx

from hwspec import content
from hwspec.diagnostics import Diagnostic, HwspecError, Severity

READ_ERROR_CODES = frozenset({"E100", "E101", "E102", "E103", "E104", "E105", "E106", "E107", "E108"})
"""Loader codes meaning the file could not be read or parsed as YAML (exit status 2)."""


@dataclass
class Checked:
    """Outcome of checking one file. `platform`/`graph` are None when loading failed."""

    path: Path
    platform: Any = None
    graph: nx.Graph | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def unreadable(self) -> bool:
        return any(d.code in READ_ERROR_CODES for d in self.diagnostics)

    def failed(self, werror: bool = False) -> bool:
        worst = Severity.WARNING if werror else Severity.ERROR
        return self.platform is None or any(d.severity >= worst for d in self.diagnostics)


def rule_directories(extra: Iterable[Path] = ()) -> list[Path]:
    return [content.builtin_dir("validators"), *map(Path, extra)]


def load_any(path: Path, parts_dirs: Iterable[Path] = ()) -> Any:
    """Load a node or cluster platform file (by its `kind`)."""
    from hwspec.load import load_platform

    return load_platform(path, parts_dirs)


def build_graph_for(platform: Any) -> nx.Graph:
    from hwspec.graph import build_graph

    return build_graph(platform)


def check(path: Path, rules: list | None = None, parts_dirs: Iterable[Path] = ()) -> Checked:
    """Load `path` and run `rules` (all built-in rules when None) on it."""
    from hwspec.rules import load_rules, run_rules

    result = Checked(Path(path))
    try:
        result.platform = load_any(Path(path), parts_dirs)
    except HwspecError as exc:
        result.diagnostics = list(exc.diagnostics)
        return result
    if rules is None:
        rules = load_rules(rule_directories())
    result.graph = build_graph_for(result.platform)
    result.diagnostics = run_rules(result.platform, result.graph, rules, scope=getattr(result.platform, "kind", "node"))
    return result


def platform_files(paths: Iterable[Path]) -> list[Path]:
    """Expand directories to the platform files directly in them (sorted); keep files."""
    files: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            files.extend(sorted(p for p in path.glob("*.yaml") if p.is_file()))
            files.extend(sorted(p for p in path.glob("*.yml") if p.is_file()))
        else:
            files.append(path)
    return files
