"""The main flow for one platform file: load -> topology -> rules -> findings.

`check` never raises for bad input: everything becomes a diagnostic, and `Checked.failed()`
says whether generation may go on. `Checked` is typed: `platform` is one of the `Model` kinds and
`topology` a `Topology` or `ClusterTopology`; `isinstance` narrows them, and `node_topology()` and
`cluster_topology()` give the one a script expects or raise.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from hwspec import content
from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity, real_path
from hwspec.formats.environment import STRICT, EnvironmentPolicy
from hwspec.model.cluster import Cluster
from hwspec.model.load import load_platform as load_platform  # the public one (`hwspec.load_platform`)
from hwspec.model.node import Platform
from hwspec.model.parts import Catalogue
from hwspec.topology import topology_of
from hwspec.topology.cluster import ClusterTopology
from hwspec.topology.node import Topology

if TYPE_CHECKING:
    from hwspec.model.workload import Workload
    from hwspec.rules.engine import Rule
    from hwspec.rules.sandbox import Sandbox

READ_ERROR_CODES = frozenset({Code.CANNOT_READ_FILE, Code.FILE_TOO_LARGE, Code.NOT_UTF8, Code.INVALID_YAML,
                              Code.NON_STRING_KEY, Code.EXPANSION_TOO_LARGE, Code.NESTING_TOO_DEEP, Code.DUPLICATE_KEY,
                              Code.NOT_A_PLATFORM_DOCUMENT})
"""Loader codes meaning the file could not be read or parsed as YAML (exit status 2)."""


@dataclass
class PartsFile:
    """A parts file (`kind: parts`, as in a `parts/` directory beside the platforms) given where a
    platform may be: validated as its parts directory's loading validates it, with nothing to
    generate. `parts` holds its parts."""

    path: Path
    parts: Catalogue
    kind: str = "parts"


Model: TypeAlias = "Platform | Cluster | Workload | PartsFile"
"""What a file given to `check` or `load_any` loads as, by its `kind:` (node, cluster, workload,
parts)."""


_T = TypeVar("_T", Topology, ClusterTopology)


@dataclass
class Checked:
    """Outcome of checking one file.

    `platform` is the loaded model (`Platform`, `Cluster`, `Workload` or `PartsFile`, by the
    file's `kind:`), None when loading failed. `topology` is the resolved `Topology` of a node or
    `ClusterTopology` of a cluster that rules and generators read, None when loading failed and for
    a workload or parts file; when set, `topology.platform is platform`. `isinstance` narrows
    either; `node_topology()` and `cluster_topology()` return the one a caller expects or raise."""

    path: Path
    platform: Model | None = None
    topology: Topology | ClusterTopology | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def unreadable(self) -> bool:
        """Whether the file could not be read or parsed as YAML (`READ_ERROR_CODES`)."""
        return any(d.code in READ_ERROR_CODES for d in self.diagnostics)

    def failed(self, werror: bool = False) -> bool:
        """Whether loading failed or an error (with `werror`, a warning too) was found."""
        worst = Severity.WARNING if werror else Severity.ERROR
        return self.platform is None or any(d.severity >= worst for d in self.diagnostics)

    def node_topology(self) -> Topology:
        """The `Topology` of the node file checked (its `.platform` is the `Platform`). Raises
        HwspecError with the diagnostics when the file did not load, TypeError when it loaded as
        another kind. Rule findings do not raise: `failed()` says whether there are any."""
        return self._topology(Topology)

    def cluster_topology(self) -> ClusterTopology:
        """The `ClusterTopology` of the cluster file checked (its `.platform` is the `Cluster`).
        Raises as `node_topology` does."""
        return self._topology(ClusterTopology)

    def _topology(self, expected: type[_T]) -> _T:
        if self.platform is None:
            raise HwspecError(self.diagnostics)
        if not isinstance(self.topology, expected):
            raise TypeError(f"{self.path} is a {self.platform.kind} file, not a {expected.kind} file")
        return self.topology


def rule_directories(extra: Iterable[Path] = ()) -> list[Path]:
    return [content.builtin_dir("rules"), *map(Path, extra)]


Version: TypeAlias = tuple[str, str, bytes, tuple[tuple[str, bytes], ...]]
"""What a loaded node platform depends on (`LoadedNodes.version`): its path as given and as shown,
its bytes, and its parts files with theirs."""


class LoadedNodes(dict[Version, Platform]):
    """Node platforms already loaded in one run, by `version`: `hwspec generate` of platforms/
    loads zionex.yaml once for zionex.yaml and zionex-16.yaml, and runs its node rules once.
    The CLI makes one per command; without one (a library call) every load is fresh, so no
    state outlives a run."""

    def __init__(self) -> None:
        super().__init__()
        self.findings: dict[tuple[int, int], tuple[Platform, list[Rule], tuple[Diagnostic, ...]]] = {}
        """(id(platform), id(rules)) -> (platform, rules, node-rule findings); the platform and
        rules are kept so that their ids stay theirs for the run."""
        self.parts: dict[tuple[str, ...], tuple[tuple[str, bytes], ...]] = {}
        """The parts files of each list of parts directories, with their bytes, read once."""

    def node_findings(self, platform: Platform, rules: list[Rule], sandbox: Sandbox | None = None,
                      policy: EnvironmentPolicy = STRICT) -> list[Diagnostic]:
        """The node rules' findings on `platform` (a node platform of this run), run once
        (in `sandbox`, when given, and under `policy`: see `hwspec.rules.engine.run_rules`).
        A run has one sandbox and one policy."""
        from hwspec.rules.engine import run_rules

        key = (id(platform), id(rules))
        if key not in self.findings:
            findings = run_rules(topology_of(platform), rules, scope="node", sandbox=sandbox, policy=policy)
            self.findings[key] = (platform, rules, tuple(findings))
        return list(self.findings[key][2])

    def version(self, path: Path, parts_dirs: tuple[Path, ...]) -> Version | None:
        """What a loaded node platform depends on: the path as given and as shown in findings
        and file headers (relative to the working directory), the file's bytes, and its parts
        files with theirs (bytes, not modification times: a file rewritten within one clock
        tick keeps its time; each list of parts directories is read once per run); None when
        something cannot be read (the load itself reports it)."""
        from hwspec.diagnostics import display_path
        from hwspec.model.parts import parts_directories, parts_files
        from hwspec.source.loader import read_regular_file

        try:
            directories = tuple(map(str, parts_directories(path, parts_dirs)))
            if directories not in self.parts:
                self.parts[directories] = tuple((str(f), read_regular_file(f)) for d in directories
                                                for f in parts_files(Path(d)))
            return str(path), display_path(path), read_regular_file(path), self.parts[directories]
        except (OSError, ValueError, HwspecError):
            return None


def load_any(path: Path, parts_dirs: Iterable[Path] = (), platform_roots: Iterable[Path] = (),
             loaded: LoadedNodes | None = None) -> tuple[Model, dict[str, Platform]]:
    """Load a node or cluster platform file (or a workload or parts file), by its `kind`.

    Returns the platform and, for a cluster, its distinct node platforms
    (`{node file: platform}`), each loaded once however many nodes use it. A cluster's node
    platforms must be inside the cluster file's directory tree or one of `platform_roots`
    (symlinks resolved): a cluster file cannot make hwspec read any file on disk."""
    from hwspec.model.load import load_node
    from hwspec.model.parts import catalogue_for
    from hwspec.source.expand import read_document

    parts_dirs = tuple(map(Path, parts_dirs))
    key = loaded.version(Path(path), parts_dirs) if loaded is not None else None
    if loaded is not None and key is not None and key in loaded:
        return loaded[key], {}
    doc, expanded = read_document(Path(path))
    kind = expanded.data.get("kind")
    if kind == "node":
        platform = load_node(doc, expanded, catalogue_for(Path(path), parts_dirs))
        if loaded is not None and key is not None:
            loaded[key] = platform
        return platform, {}
    if kind == "cluster":
        from hwspec.model.resolve_cluster import load_cluster

        nodes: dict[str, Platform] = {}

        roots = [real_path(path).parent, *map(real_path, platform_roots)]

        def load_node_file(node_path: Path) -> Platform:
            """The node platform at `node_path`; FileNotFoundError when there is none,
            HwspecError (E100 and the OS's reason) when it cannot be read."""
            from hwspec.model.resolve_cluster import PlatformOutsideRoots

            if "\x00" in str(node_path):
                raise FileNotFoundError(node_path)
            resolved = real_path(node_path)
            if not any(resolved.is_relative_to(root) for root in roots):
                raise PlatformOutsideRoots(roots[0])
            key = str(resolved)
            if key not in nodes:
                try:
                    os.stat(node_path)
                except FileNotFoundError:
                    raise
                except OSError:
                    pass  # a loop, a name too long: loading it reports E100 with the reason
                version = loaded.version(node_path, parts_dirs) if loaded is not None else None
                if loaded is not None and version is not None and version in loaded:
                    nodes[key] = loaded[version]
                else:
                    platform = load_platform(node_path, parts_dirs)
                    if loaded is not None and version is not None:
                        loaded[version] = platform
                    nodes[key] = platform
            return nodes[key]

        return load_cluster(doc, expanded, Path(path), load_node_file), nodes
    if kind == "workload":
        from hwspec.model.workload import load_workload_document

        return load_workload_document(doc, expanded), {}
    if kind == "parts":
        from hwspec.model.parts import load_parts_file

        return PartsFile(Path(path), load_parts_file(Path(path))), {}
    pos = doc.locate(("kind",))
    raise HwspecError([Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, Code.UNKNOWN_KIND,
                                  f"unknown platform kind {kind!r}",
                                  "platform files say 'kind: node' or 'kind: cluster'; workload files 'kind: workload', "
                                  "parts files 'kind: parts'")])


def check(path: Path, rules: list[Rule] | None = None, parts_dirs: Iterable[Path] = (),
          platform_roots: Iterable[Path] = (), loaded: LoadedNodes | None = None,
          sandbox: Sandbox | None = None, policy: EnvironmentPolicy = STRICT) -> Checked:
    """Load `path` and run `rules` (all built-in rules when None) on it. For a cluster, node
    rules run once per distinct node platform, then cluster rules once; its node platforms
    must be below the cluster file's directory or one of `platform_roots`. The rules run as
    plain calls, or each contained in `sandbox` when given (the command line gives one:
    `hwspec.rules.sandbox`). `policy` is the operator's grants for `environment:`
    (`hwspec.formats.environment`; by default tunables only).

    Never raises for bad input: what is wrong is in the result's `diagnostics` (`Checked`)."""
    from hwspec.rules.engine import load_rules, run_rules

    result = Checked(Path(path))
    try:
        model, nodes = load_any(Path(path), parts_dirs, platform_roots, loaded)
    except HwspecError as exc:
        result.diagnostics = list(exc.diagnostics)
        return result
    result.platform = model
    if not isinstance(model, Platform | Cluster):
        return result  # a workload or parts file has no topology and no platform rules
    if rules is None:
        rules = load_rules(rule_directories())
    for node_platform in nodes.values():
        result.diagnostics.extend(loaded.node_findings(node_platform, rules, sandbox, policy) if loaded is not None
                                  else run_rules(topology_of(node_platform), rules, scope="node", sandbox=sandbox,
                                                 policy=policy))
    topology = result.topology = topology_of(model)
    if loaded is not None and isinstance(model, Platform):
        result.diagnostics.extend(loaded.node_findings(model, rules, sandbox, policy))
    else:
        result.diagnostics.extend(run_rules(topology, rules, scope=topology.kind, sandbox=sandbox, policy=policy))
    return result


def platform_files(paths: Iterable[Path]) -> list[Path]:
    """Expand directories to the platform files directly in them (sorted); keep files."""
    files: list[Path] = []
    for path in paths:
        path = Path(path)
        if os.path.isdir(path):  # False, never an OSError, for a path that cannot be looked at: loading says why
            files.extend(sorted(p for p in path.glob("*.yaml") if os.path.isfile(p)))
            files.extend(sorted(p for p in path.glob("*.yml") if os.path.isfile(p)))
        else:
            files.append(path)
    return files
