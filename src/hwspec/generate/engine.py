"""Generation: resolved topology -> plan `{relative path: text}` -> write or check.

Generators are pure functions registered with `@generator(name)` in `hwspec/generate/`.
A node generator receives a `GenContext` (`ctx.topology` a `Topology`, `ctx.platform` a
`Platform`), a cluster generator (`kinds=("cluster",)`) a `ClusterGenContext` (a
`ClusterTopology` and a `Cluster`); each returns `{path relative to the platform's output dir: text}`.
Templates come from `templates/` (or a site's `--templates DIR`, searched first) through a
jinja2 environment with StrictUndefined, `trim_blocks`/`lstrip_blocks`, and per-target
escaping filters. Every file starts with a provenance header in its target's comment syntax.

Output is deterministic: no timestamps, no absolute paths, sorted iteration everywhere.
"""

from __future__ import annotations

import functools
import importlib
import shlex
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, overload

from hwspec import __version__, content
from hwspec.formats.environment import STRICT, EnvironmentPolicy
from hwspec.formats.limits import SAFE_VALUE, Limit
from hwspec.formats.limits import GenerationError as GenerationError  # generators and callers raise and catch it from here
from hwspec.model.cluster import Cluster
from hwspec.model.node import Platform
from hwspec.text import XML_COMMENT_DASH, comment, visible
from hwspec.text import xml_escape as escape
from hwspec.topology import ClusterTopology, Topology

if TYPE_CHECKING:
    import jinja2

Plan = dict[str, str]
"""Generated files: `{path relative to the platform's output directory: text}`."""
NodeGenerator = TypeVar("NodeGenerator", bound=Callable[["GenContext"], Plan])
"""A node generator: a function of a `GenContext` that returns a plan."""
ClusterGenerator = TypeVar("ClusterGenerator", bound=Callable[["ClusterGenContext"], Plan])
"""A cluster generator: a function of a `ClusterGenContext` that returns a plan."""
GeneratorFunc = Callable[[Any], Plan]
"""A generator as the registry holds it: it takes the `GenContext` or `ClusterGenContext` that
`render_all` makes for the topology's kind."""
_REGISTRY: dict[str, tuple[GeneratorFunc, tuple[str, ...]]] = {}

class UnsafeValue(ValueError):
    pass


@overload
def generator(name: str, kinds: tuple[Literal["node"]] = ("node",)) -> Callable[[NodeGenerator], NodeGenerator]: ...


@overload
def generator(name: str, kinds: tuple[Literal["cluster"]]) -> Callable[[ClusterGenerator], ClusterGenerator]: ...


def generator(name: str, kinds: tuple[str, ...] = ("node",)) -> Callable[[Any], Any]:
    """Register a generator for platforms of `kinds`: `("node",)` (the default; it takes a
    `GenContext`) or `("cluster",)` (it takes a `ClusterGenContext`)."""

    def register(func: GeneratorFunc) -> GeneratorFunc:
        if name in _REGISTRY and _REGISTRY[name][0] is not func:
            raise ValueError(f"generator {name!r} registered twice")
        _REGISTRY[name] = (func, kinds)
        return func

    return register


def generators() -> dict[str, tuple[GeneratorFunc, tuple[str, ...]]]:
    """All registered generators by name (imports the built-in ones)."""
    from hwspec.generate import BUILTIN

    for module in BUILTIN:
        importlib.import_module(f"hwspec.generate.{module}")  # registers on import

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


def xml_comment(value: Any) -> str:
    """`comment(value, "xml")`: the jinja2 filter for text inside `<!-- -->`."""
    return comment(value, "xml")


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
class Generation:
    """What every generator sees (`GenContext` for a node, `ClusterGenContext` for a cluster
    narrow `topology` and `platform`). `topology` is the resolved topology and `platform` its
    model, `env` the jinja2 environment, `name` the generator's name (used in headers),
    `source` the platform file as shown.

    Deployment context: `install_dir` is where the files are installed on the machines
    (default /etc/hwspec/<platform>); `rail_optimized`, when set, is the rail layout of the
    cluster the node is part of, which overrides the node platform's own declaration."""

    topology: Topology | ClusterTopology
    env: jinja2.Environment
    name: str
    source: str
    install_dir: str = ""
    rail_optimized: bool | None = None
    rendered: Rendered | None = field(default=None, repr=False, compare=False)
    """The run's outputs so far, for a cluster generator that renders its node platforms."""
    deployment_read: set[str] = field(default_factory=set, repr=False, compare=False)
    """Which of DEPLOYMENT the generator has read: output that read neither is the same in
    every deployment, so `render_all` reuses it (a node platform that a cluster also renders)."""
    policy: EnvironmentPolicy = STRICT
    """The operator's grants for `environment:` (`hwspec.formats.environment`): a generator
    that writes `environment:` entries refuses the names it refuses (as HW702/HW812 do)."""

    DEPLOYMENT: ClassVar[frozenset[str]] = frozenset({"install_dir", "rail_optimized"})

    def __getattribute__(self, name: str) -> Any:
        if name in Generation.DEPLOYMENT:
            object.__getattribute__(self, "deployment_read").add(name)
        return object.__getattribute__(self, name)

    def __post_init__(self) -> None:
        if not object.__getattribute__(self, "install_dir"):
            self.install_dir = f"{INSTALL_ROOT}/{self.topology.name}"

    def header_lines(self) -> list[str]:
        """The provenance lines. The source path is hostile text (a directory may be called
        anything): it is shown `visible` (one printable line), and shell-quoted where the
        line is a command a person may paste."""
        source = visible(self.source)
        return [f"Generated by hwspec {__version__} ({self.name}) from {source}.",
                "Do not edit: this file is overwritten.",
                f"Regenerate with: hwspec generate {shlex.quote('./' + source if source.startswith('-') else source)}"]

    def header(self, syntax: str) -> str:
        """The provenance header as comment lines: syntax is "xml", "hash" or "slash"."""
        start, end = COMMENT_SYNTAX[syntax]
        if syntax == "xml":
            return f"{start} " + " ".join(XML_COMMENT_DASH.sub(r"\\x2d", line) for line in self.header_lines()) + f" {end}\n"
        return "".join(f"{start} {line}\n" for line in self.header_lines())

    def render(self, template: str, syntax: str | None, **values: Any) -> str:
        """Render `template` with `values` (plus `platform`, `topology`), prefixed by the header."""
        body = self.env.get_template(template).render(platform=self.topology.platform, topology=self.topology, **values)
        return (self.header(syntax) if syntax else "") + body


@dataclass
class GenContext(Generation):
    """What a node generator sees: `topology`, the node's `Topology` (`hwspec.topology.node`),
    and `platform`, its `Platform`; the rest is `Generation`'s."""

    topology: Topology

    @property
    def platform(self) -> Platform:
        """The node's resolved model."""
        return self.topology.platform


@dataclass
class ClusterGenContext(Generation):
    """What a cluster generator sees: `topology`, the cluster's `ClusterTopology`
    (`hwspec.topology.cluster`), and `platform`, its `Cluster` (a node group's topology is
    `hwspec.topology.topology_of(group.platform)`); the rest is `Generation`'s."""

    topology: ClusterTopology

    @property
    def platform(self) -> Cluster:
        """The cluster's resolved model."""
        return self.topology.platform


def template_environment(template_dirs: Iterable[Path] = ()) -> jinja2.Environment:
    """Site template dirs first (so a site can override a built-in template), then built-ins.

    One environment per list of directories for the whole process, so a template is compiled
    once however many platforms render it (jinja2 still reloads a template whose file changed).

    No bytecode cache is read or written: jinja2's `FileSystemBytecodeCache` loads its entries
    with pickle, so anything that can write into the cache directory (a shared `$TMPDIR`, a
    previous job on a CI runner) would run its code in the next `hwspec generate`. Site
    templates are compiled from source in memory; the built-in ones were compiled when hwspec
    was built and ship as modules of hwspec itself (`hwspec.generate.prebuilt_templates`), each
    used only while its template is unchanged."""
    return _environment(tuple(str(Path(d)) for d in template_dirs))


@functools.lru_cache(maxsize=16)
def _environment(template_dirs: tuple[str, ...]) -> jinja2.Environment:
    import jinja2  # only rendering needs it: `validate` imports the generators' limits, not jinja2

    from hwspec.generate.prebuilt_templates import BuiltinLoader

    builtin = BuiltinLoader(str(content.builtin_dir("templates")))
    loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(list(template_dirs)), builtin]) if template_dirs else builtin
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False,
                             bytecode_cache=None)  # never a cache: its entries are unpickled (see above)
    env.filters.update(xml_attr=xml_attr, env_value=env_value, shell_word=shell_word, comment=comment,
                       xml_comment=xml_comment, visible=visible)
    return env


def refuse(platform: Platform | Cluster, output: str, limits: list[Limit]) -> None:
    """Raise GenerationError for `limits` (when there are any) of generating `output`."""
    if limits:
        raise GenerationError(f"{platform.file}: {output}: " + "; ".join(limit.message for limit in limits))


RenderKey = tuple[int, str, "jinja2.Environment", GeneratorFunc, str]
"""An output's identity in one run: the topology's id, the generator's name, the template
environment, the generator function and the source as shown."""


class Rendered:
    """Generator outputs already rendered in one run (`hwspec generate` makes one): a cluster
    renders its node platforms' files again under its own install dir, and an output whose
    generator read no deployment value (`GenContext.DEPLOYMENT`) is the same there. Without
    one (a library call) everything is rendered, so no output outlives a run."""

    def __init__(self) -> None:
        self.outputs: dict[RenderKey, list[tuple[dict[str, Any], Plan]]] = {}
        self.topologies: list[Topology | ClusterTopology] = []  # kept, so that the ids in the keys stay theirs for the run

    def find(self, key: RenderKey, deployment: dict[str, Any]) -> Plan | None:
        """The files rendered for `key` whose deployment values read match `deployment`."""
        return next((files for read, files in self.outputs.get(key, ())
                     if all(deployment[name] == value for name, value in read.items())), None)

    def keep(self, key: RenderKey, topology: Topology | ClusterTopology, read: dict[str, Any], files: Plan) -> None:
        self.topologies.append(topology)
        self.outputs.setdefault(key, []).append((read, files))


def plan_for(topology: Topology | ClusterTopology, template_dirs: Iterable[Path] = (), only: Iterable[str] = (),
             root: str = INSTALL_ROOT, rendered: Rendered | None = None, policy: EnvironmentPolicy = STRICT) -> Plan:
    """Render every generator for `topology` (a node's or cluster's) into
    `{<platform name>/<path>: text}` (sorted), for installation under `root`/<platform name>/
    on the machines. `rendered` (one per run) lets a cluster reuse its node platforms' files;
    `policy` is the operator's grants for `environment:` (by default, tunables only)."""
    env = template_environment(template_dirs)
    install_dir = f"{install_root(root).rstrip('/')}/{topology.name}"
    plan = {f"{topology.name}/{path}": text
            for path, text in render_all(topology, env, only=only, install_dir=install_dir, rendered=rendered,
                                            policy=policy).items()}
    return dict(sorted(plan.items()))


def render_all(topology: Topology | ClusterTopology, env: jinja2.Environment, only: Iterable[str] = (),
               install_dir: str = "", rail_optimized: bool | None = None, source: str | None = None,
               rendered: Rendered | None = None, policy: EnvironmentPolicy = STRICT) -> Plan:
    """Every generator of `topology`'s kind, as `{path inside its directory: text}`.

    Cluster generators call this for their node platforms with the cluster's deployment
    context (`install_dir`, `rail_optimized`), the run's `rendered` (`ctx.rendered`) and its
    `policy` (`ctx.policy`)."""
    import jinja2

    wanted = set(only)
    plan: Plan = {}
    platform = topology.platform
    for name, (func, kinds) in generators().items():
        if topology.kind not in kinds or (wanted and name not in wanted):
            continue
        context: Generation
        if isinstance(topology, ClusterTopology):
            context = ClusterGenContext(topology, env, name, source or platform.file, install_dir, rail_optimized,
                                        rendered=rendered, policy=policy)
        else:
            context = GenContext(topology, env, name, source or platform.file, install_dir, rail_optimized,
                                 rendered=rendered, policy=policy)
        deployment = {"install_dir": object.__getattribute__(context, "install_dir"), "rail_optimized": rail_optimized}
        key = (id(topology), name, env, func, context.source)
        files = rendered.find(key, deployment) if rendered is not None else None
        if files is None:
            try:
                files = func(context)
            except (UnsafeValue, jinja2.TemplateError) as exc:
                raise GenerationError(f"{platform.file}: generator {name} failed: {exc}") from exc
            if rendered is not None:
                rendered.keep(key, topology, {f: deployment[f] for f in context.deployment_read}, files)
        for relative, text in files.items():
            if relative in plan:
                raise GenerationError(f"{platform.file}: generators both write {relative}")
            plan[relative] = text
    return plan


def write_plan(plan: Plan, out_dir: Path, platforms: Iterable[str] = (), svg: bool = False) -> list[Path]:
    """Write every file of `plan` under `out_dir`, each platform's directory all-or-nothing
    (`hwspec.generate.writer.write_tree`: the whole plan is checked first, the output directory is
    locked, symlinks are replaced and never followed, a kill leaves the old set or the new
    one). Files a platform no longer produces go with its old set; rendered SVGs stay unless
    `svg` renders them again. Returns the paths written, changed or removed.

    `platforms` is accepted for compatibility: every platform directory in the plan is written."""
    from hwspec.generate.writer import write_tree

    del platforms
    return write_tree(Path(out_dir), plan, keep=_ignored, extra=_svg_renderer(plan) if svg else None)


def _orphans(plan: Plan, out_dir: Path, platforms: Iterable[str]) -> list[Path]:
    from hwspec.generate.writer import existing_files

    planned = set(plan)
    orphans: list[Path] = []
    for name in sorted(set(platforms)):
        orphans.extend(out_dir / name / relative for relative in existing_files(out_dir / name)
                       if f"{name}/{relative}" not in planned and not _ignored(relative))
    return orphans


def _ignored(path: str | Path) -> bool:
    """Files generate may leave beside the plan: rendered SVGs (not committed)."""
    return str(path).endswith(".svg")


def _svg_renderer(plan: Plan) -> Callable[[Path, str], list[str]] | None:
    """Renders a platform's planned `.dot` files to `.svg` into its new set (see render_svgs)."""
    import shutil

    from hwspec.generate.writer import write_atomic

    dot = shutil.which("dot")
    if dot is None:
        return None

    def render(staging: Path, platform: str) -> list[str]:
        written = []
        for relative, text in plan.items():
            if relative.endswith(".dot") and relative.startswith(platform + "/"):
                inner = relative[len(platform) + 1:-4] + ".svg"
                write_atomic(staging / inner, render_svg(dot, relative, text))
                written.append(inner)
        return written

    return render


def render_svg(dot: str, relative: str, text: str) -> str:
    """graphviz's SVG of the DOT `text` (`relative` names it in errors)."""
    import subprocess

    result = subprocess.run([dot, "-Tsvg"], input=text, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise GenerationError(f"dot failed on {relative}: {visible(result.stderr.strip())}")
    return result.stdout


def render_svgs(plan: Plan, out_dir: Path) -> list[Path]:
    """The SVGs of every planned `.dot` file, when graphviz's `dot` is on PATH: the paths they
    are (or would be) at. `write_plan(..., svg=True)` renders them into each platform's new
    set, so they appear with it; SVGs are not part of the plan (graphviz output differs between
    versions), so `--check` ignores them and they are not committed."""
    import shutil

    from hwspec.generate.writer import safe_join

    if shutil.which("dot") is None:
        return []
    return [safe_join(out_dir, relative[:-4] + ".svg") for relative in plan if relative.endswith(".dot")]


def check_plan(plan: Plan, out_dir: Path, platforms: Iterable[str] = (), context_lines: int = 3) -> list[str]:
    """Compare `plan` with `out_dir`. Returns one report per stale file (missing, different
    or left over), each with a short unified diff, or with its mode and the generated one (a
    mode `generate` would not leave: `writer.checkout_accepts`); empty when everything is up to date."""
    from hwspec.generate.writer import checkout_accepts, current_umask, existing_status, generated_mode, matching_file, read_existing, safe_join

    reports = []
    directories: set[str] = set()
    umask = current_umask()
    for relative, text in plan.items():
        safe_join(out_dir, relative)
        data = text.encode("utf-8", "surrogatepass")
        info = matching_file(out_dir, relative, data, directories)  # by size, then a chunk at a time
        if info is not None:
            mode = stat.S_IMODE(info.st_mode)
            if not checkout_accepts(mode, data, umask):
                reports.append(f"stale: {out_dir / relative}\nmode {mode:04o}, generated {generated_mode(data):04o}")
            continue
        # a stale file is read for its diff only up to a size of the generated one's order: a
        # file hwspec did not write may be of any size, and is never read whole
        existing = read_existing(out_dir, relative, directories, limit=max(4 * len(data), 1 << 20))
        if existing is None:
            status = existing_status(out_dir, relative, directories)
            reports.append(f"missing: {out_dir / relative}" if status is None else
                           f"stale: {out_dir / relative}\n{status.st_size} bytes, {len(data)} generated: too large to show a diff")
            continue
        current = existing.decode("utf-8", errors="replace")
        if current != text:
            import difflib  # only a stale file needs it

            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(), f"{out_dir / relative} (committed)",
                                             f"{out_dir / relative} (generated)", n=context_lines, lineterm=""))
            shown = diff[:40] + ([f"... ({len(diff) - 40} more diff lines)"] if len(diff) > 40 else [])
            reports.append("stale: " + str(out_dir / relative) + "\n" + "\n".join(shown))
    for orphan in _orphans(plan, out_dir, platforms):
        reports.append(f"not generated any more: {orphan}")
    return reports
