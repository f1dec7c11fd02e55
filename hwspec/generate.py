"""Generation: resolved topology -> plan `{relative path: text}` -> write or check.

Generators are pure functions registered with `@generator(name)` in `hwspec/generators/`.
Each receives a `GenContext` and returns `{path relative to the platform's output dir: text}`.
Templates come from `templates/` (or a site's `--templates DIR`, searched first) through a
jinja2 environment with StrictUndefined, `trim_blocks`/`lstrip_blocks`, and per-target
escaping filters. Every file starts with a provenance header in its target's comment syntax.

Output is deterministic: no timestamps, no absolute paths, sorted iteration everywhere.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable
from xml.sax.saxutils import escape

import jinja2

from hwspec import __version__, content
from hwspec.writer import safe_join, write_atomic

Plan = dict[str, str]
GeneratorFunc = Callable[["GenContext"], Plan]
_REGISTRY: dict[str, tuple[GeneratorFunc, tuple[str, ...]]] = {}

SAFE_VALUE = re.compile(r"[A-Za-z0-9_./:,=@%+^-]*")
"""Characters allowed in env/conf values: no quoting is needed for bash, docker --env-file
or NCCL's conf reader. Platform names are validated to this set at load time."""


class UnsafeValue(ValueError):
    pass


def generator(name: str, kinds: tuple[str, ...] = ("node",)) -> Callable[[GeneratorFunc], GeneratorFunc]:
    """Register a generator for platforms of `kinds` ("node", "cluster")."""

    def register(func: GeneratorFunc) -> GeneratorFunc:
        if name in _REGISTRY and _REGISTRY[name][0] is not func:
            raise ValueError(f"generator {name!r} registered twice")
        _REGISTRY[name] = (func, kinds)
        return func

    return register


def generators() -> dict[str, tuple[GeneratorFunc, tuple[str, ...]]]:
    """All registered generators by name (imports the built-in ones)."""
    import hwspec.generators  # noqa: F401  (registers on import)

    return dict(sorted(_REGISTRY.items()))


# ------------------------------------------------------------------ escaping filters


def xml_attr(value: Any) -> str:
    """A double-quoted XML attribute value with `& < > "` and control whitespace escaped
    (NCCL before 2.27 accepts double quotes only)."""
    return '"' + escape(str(value), {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}) + '"'


def env_value(value: Any) -> str:
    """A value for `NAME=value` lines; refuses anything outside SAFE_VALUE rather than quoting,
    because NCCL's conf reader and docker --env-file do not unquote."""
    text = str(value)
    if not SAFE_VALUE.fullmatch(text):
        raise UnsafeValue(f"refusing to write {text!r} into an env/conf file: only letters, digits and _./:,=@%+^- are allowed")
    return text


def shell_word(value: Any) -> str:
    """A value safe to place unquoted in a shell script (same safe set as env values)."""
    return env_value(value)


# ------------------------------------------------------------------ context


INSTALL_ROOT = "/etc/hwspec"
"""Generated files are installed under INSTALL_ROOT/<platform or cluster>/ on the machines
(the default of `hwspec generate --install-root`)."""


def install_root(root: str) -> str:
    """`root` checked as an install root: an absolute path of safe characters (it is written
    into nccl.conf, env files and scripts unquoted), without a trailing slash."""
    text = str(root)
    if not text.startswith("/"):
        raise GenerationError(f"--install-root {text!r}: must be an absolute path (NCCL_TOPO_FILE cannot be relative)")
    if not SAFE_VALUE.fullmatch(text) or "=" in text or "//" in text or "/../" in f"{text}/" or "/./" in f"{text}/":
        raise GenerationError(f"--install-root {text!r}: only letters, digits and _./:,@%+^- in plain path "
                              "components are allowed (it is written unquoted into nccl.conf and scripts)")
    return text.rstrip("/") or "/"

COMMENT_SYNTAX = {"xml": ("<!--", "-->"), "hash": ("#", ""), "slash": ("//", "")}


@dataclass
class GenContext:
    """What a generator sees. `topology` is the resolved topology (`hwspec.topology.Topology`
    or `hwspec.cluster_topology.ClusterTopology`) and `platform` its model, `name` the
    generator's name (used in headers), `source` the platform file as shown.

    Deployment context: `install_dir` is where the files are installed on the machines
    (default /etc/hwspec/<platform>); `rail_optimized`, when set, is the rail layout of the
    cluster the node is part of, which overrides the node platform's own declaration."""

    topology: Any
    env: jinja2.Environment
    name: str
    source: str
    install_dir: str = ""
    rail_optimized: bool | None = None

    @property
    def platform(self) -> Any:
        """The resolved model (`Platform` or `Cluster`) of `topology`."""
        return self.topology.platform

    def __post_init__(self) -> None:
        if not self.install_dir:
            self.install_dir = f"{INSTALL_ROOT}/{self.platform.name}"

    def header_lines(self) -> list[str]:
        return [f"Generated by hwspec {__version__} ({self.name}) from {self.source}.",
                "Do not edit: this file is overwritten.",
                f"Regenerate with: hwspec generate {self.source}"]

    def header(self, syntax: str) -> str:
        """The provenance header as comment lines: syntax is "xml", "hash" or "slash"."""
        start, end = COMMENT_SYNTAX[syntax]
        if syntax == "xml":
            return f"{start} " + " ".join(self.header_lines()) + f" {end}\n"
        return "".join(f"{start} {line}\n" for line in self.header_lines())

    def render(self, template: str, syntax: str | None, **values: Any) -> str:
        """Render `template` with `values` (plus `platform`, `topology`), prefixed by the header."""
        body = self.env.get_template(template).render(platform=self.platform, topology=self.topology, **values)
        return (self.header(syntax) if syntax else "") + body


def template_environment(template_dirs: Iterable[Path] = ()) -> jinja2.Environment:
    """Site template dirs first (so a site can override a built-in template), then built-ins.

    One environment per list of directories for the whole process, so a template is compiled
    once however many platforms render it (jinja2 still reloads a template whose file changed)."""
    return _environment(tuple(str(Path(d)) for d in template_dirs))


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """jinja2's compiled-template cache across runs: a private per-user directory that jinja2
    creates (mode 0700, owner checked) under the temp dir; entries are keyed by the template's
    source, so an edited template is compiled again. HWSPEC_NO_TEMPLATE_CACHE=1 turns it off;
    a cache that cannot be made is no error, templates are then compiled in memory."""
    if os.environ.get("HWSPEC_NO_TEMPLATE_CACHE"):
        return None
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):
        return None


@functools.lru_cache(maxsize=16)
def _environment(template_dirs: tuple[str, ...]) -> jinja2.Environment:
    search = [*template_dirs, str(content.builtin_dir("templates"))]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(search), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False,
                             bytecode_cache=_bytecode_cache())
    env.filters.update(xml_attr=xml_attr, env_value=env_value, shell_word=shell_word)
    return env


class GenerationError(Exception):
    """A generator could not produce valid output (message names the platform and file)."""


def plan_for(topology: Any, template_dirs: Iterable[Path] = (), only: Iterable[str] = (),
             root: str = INSTALL_ROOT) -> Plan:
    """Render every generator for `topology` (a node's or cluster's) into
    `{<platform name>/<path>: text}` (sorted), for installation under `root`/<platform name>/
    on the machines."""
    env = template_environment(template_dirs)
    install_dir = f"{install_root(root).rstrip('/')}/{topology.name}"
    plan = {f"{topology.name}/{path}": text
            for path, text in render_all(topology, env, only=only, install_dir=install_dir).items()}
    return dict(sorted(plan.items()))


def render_all(topology: Any, env: jinja2.Environment, only: Iterable[str] = (),
               install_dir: str = "", rail_optimized: bool | None = None, source: str | None = None) -> Plan:
    """Every generator of `topology`'s kind, as `{path inside its directory: text}`.

    Cluster generators call this for their node platforms with the cluster's deployment
    context (`install_dir`, `rail_optimized`)."""
    wanted = set(only)
    plan: Plan = {}
    platform = topology.platform
    for name, (func, kinds) in generators().items():
        if topology.kind not in kinds or (wanted and name not in wanted):
            continue
        context = GenContext(topology, env, name, source or platform.file, install_dir, rail_optimized)
        try:
            files = func(context)
        except (UnsafeValue, jinja2.TemplateError) as exc:
            raise GenerationError(f"{platform.file}: generator {name} failed: {exc}") from exc
        for relative, text in files.items():
            if relative in plan:
                raise GenerationError(f"{platform.file}: generators both write {relative}")
            plan[relative] = text
    return plan


def write_plan(plan: Plan, out_dir: Path, platforms: Iterable[str] = ()) -> list[Path]:
    """Write every file of `plan` under `out_dir` atomically; remove stale files left in the
    platforms' directories. Returns the paths written or changed."""
    changed = []
    for relative, text in plan.items():
        target = safe_join(out_dir, relative)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            mode = 0o755 if text.startswith("#!") else 0o644
            write_atomic(target, text, mode)
            changed.append(target)
    for stale in _orphans(plan, out_dir, platforms):
        stale.unlink()
        changed.append(stale)
    return changed


def _orphans(plan: Plan, out_dir: Path, platforms: Iterable[str]) -> list[Path]:
    planned = {safe_join(out_dir, p) for p in plan}
    orphans = []
    for name in sorted(set(platforms)):
        root = out_dir / name
        if root.is_dir():
            orphans.extend(p for p in sorted(root.rglob("*")) if p.is_file() and p.resolve() not in planned
                           and not _ignored(p))
    return orphans


def _ignored(path: Path) -> bool:
    """Files generate may leave beside the plan: rendered SVGs (not committed)."""
    return path.suffix == ".svg"


def render_svgs(plan: Plan, out_dir: Path) -> list[Path]:
    """Render every planned `.dot` file to `.svg` beside it when graphviz's `dot` is on PATH.

    SVGs are not part of the plan (graphviz output differs between versions), so `--check`
    ignores them and they are not committed."""
    import shutil
    import subprocess

    dot = shutil.which("dot")
    if dot is None:
        return []
    written = []
    for relative, text in plan.items():
        if relative.endswith(".dot"):
            target = safe_join(out_dir, relative[:-4] + ".svg")
            result = subprocess.run([dot, "-Tsvg"], input=text, capture_output=True, text=True, timeout=120)
            if result.returncode != 0:
                raise GenerationError(f"dot failed on {relative}: {result.stderr.strip()}")
            write_atomic(target, result.stdout)
            written.append(target)
    return written


def check_plan(plan: Plan, out_dir: Path, platforms: Iterable[str] = (), context_lines: int = 3) -> list[str]:
    """Compare `plan` with `out_dir`. Returns one report per stale file (missing, different
    or left over), each with a short unified diff; empty when everything is up to date."""
    reports = []
    for relative, text in plan.items():
        target = safe_join(out_dir, relative)
        if not target.exists():
            reports.append(f"missing: {out_dir / relative}")
            continue
        current = target.read_text(encoding="utf-8", errors="replace")
        if current != text:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(), f"{out_dir / relative} (committed)",
                                             f"{out_dir / relative} (generated)", n=context_lines, lineterm=""))
            shown = diff[:40] + ([f"... ({len(diff) - 40} more diff lines)"] if len(diff) > 40 else [])
            reports.append("stale: " + str(out_dir / relative) + "\n" + "\n".join(shown))
    for orphan in _orphans(plan, out_dir, platforms):
        reports.append(f"not generated any more: {orphan}")
    return reports
