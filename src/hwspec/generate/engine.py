"""Generation: resolved topology -> plan `{relative path: text}` -> write or check.

Generators are pure functions marked with `@generator(name)` (`hwspec.generate.registry`: how
hwspec's own, a site's `--generators DIR` and an installed package's are declared and found).
A node generator receives a `GenContext` (`ctx.topology` a `Topology`, `ctx.platform` a
`Platform`), a cluster generator (`scope="cluster"`) a `ClusterGenContext` (a
`ClusterTopology` and a `Cluster`); each returns `{path relative to the platform's output dir: text}`.
A run renders the generators it is given (`plan_for(..., generators=...)`); a site's runs
contained when the run has a sandbox (`hwspec.rules.sandbox`, as the command line's rules do).
Templates come from `templates/` (or a site's `--templates DIR`, searched first) through a
jinja2 environment with StrictUndefined, `trim_blocks`/`lstrip_blocks`, and per-target
escaping filters. Every file starts with a provenance header in its target's comment syntax.

Output is deterministic: no timestamps, no absolute paths, sorted iteration everywhere.
"""

from __future__ import annotations

import contextlib
import functools
import shlex
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from hwspec import __version__, content
from hwspec.formats.environment import STRICT, EnvironmentPolicy
from hwspec.formats.limits import SAFE_VALUE, Limit
from hwspec.formats.limits import GenerationError as GenerationError  # generators and callers raise and catch it from here
from hwspec.generate.registry import ClusterGenerator as ClusterGenerator
from hwspec.generate.registry import Generator as Generator
from hwspec.generate.registry import GeneratorFunc, installed_generators
from hwspec.generate.registry import NodeGenerator as NodeGenerator
from hwspec.generate.registry import Plan as Plan
from hwspec.generate.registry import generator as generator
from hwspec.model.cluster import Cluster
from hwspec.model.node import Platform
from hwspec.rules.sandbox import Box, Escape, Sandbox, describe, type_name
from hwspec.text import XML_COMMENT_DASH, comment, visible
from hwspec.text import xml_escape as escape
from hwspec.topology import ClusterTopology, Topology

if TYPE_CHECKING:
    import jinja2


class UnsafeValue(ValueError):
    pass


class GeneratorFailed(GenerationError):
    """A site's generator failed (E904): it raised, left its box (exit, interrupt, time limit,
    working directory) or returned something that is not a plan. The message names it and
    its file."""


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


class Generation:
    """What every generator sees (`GenContext` for a node, `ClusterGenContext` for a cluster
    narrow `topology` and `platform`), made by the engine for each generator of a run.

    Deployment context: `install_dir` is where the files are installed on the machines
    (default /etc/hwspec/<platform>); `rail_optimized`, when set, is the rail layout of the
    cluster the node is part of, which overrides the node platform's own declaration. Reading
    either is recorded (`deployment_read`): output that read neither is the same in every
    deployment, so a run reuses it (a node platform that a cluster also renders)."""

    DEPLOYMENT: ClassVar[frozenset[str]] = frozenset({"install_dir", "rail_optimized"})
    """The deployment values whose reading `deployment_read` records."""

    topology: Topology | ClusterTopology
    """The resolved topology being rendered (its model is `topology.platform`)."""
    env: jinja2.Environment
    """The run's jinja2 environment: site templates (`--templates DIR`) before the built-in ones."""
    name: str
    """The generator's name (written into each file's header)."""
    source: str
    """The platform file as shown in headers."""
    rendered: Rendered | None
    """The run's outputs so far, for a cluster generator that renders its node platforms."""
    policy: EnvironmentPolicy
    """The operator's grants for `environment:` (`hwspec.formats.environment`): a generator
    that writes `environment:` entries refuses the names it refuses (as HW702/HW812 do)."""
    generators: tuple[Generator, ...]
    """The run's generators (what `render_node` renders)."""
    box: Box | None
    """The run's sandbox, entered, for the site generators `render_node` runs; None when the
    run has none, or when this generator is a site's (already in its box)."""
    deployment_read: set[str]
    """Which of DEPLOYMENT the generator has read."""

    def __init__(self, topology: Topology | ClusterTopology, env: jinja2.Environment, name: str, source: str,
                 install_dir: str = "", rail_optimized: bool | None = None, rendered: Rendered | None = None,
                 policy: EnvironmentPolicy = STRICT, generators: Iterable[Generator] = (), box: Box | None = None):
        self.topology, self.env, self.name, self.source = topology, env, name, source
        self.rendered, self.policy, self.generators, self.box = rendered, policy, tuple(generators), box
        self._install_dir = install_dir or f"{INSTALL_ROOT}/{topology.name}"
        self._rail_optimized = rail_optimized
        self.deployment_read = set()

    @property
    def install_dir(self) -> str:
        """Where the files are installed on the machines (default /etc/hwspec/<platform>);
        reading it records "install_dir" in `deployment_read`."""
        self.deployment_read.add("install_dir")
        return self._install_dir

    @property
    def rail_optimized(self) -> bool | None:
        """The rail layout of the cluster the node is rendered for (None: the node's own
        declaration holds); reading it records "rail_optimized" in `deployment_read`."""
        self.deployment_read.add("rail_optimized")
        return self._rail_optimized

    def deployment(self) -> dict[str, Any]:
        """The deployment values by name (DEPLOYMENT), without recording them as read."""
        return {"install_dir": self._install_dir, "rail_optimized": self._rail_optimized}

    def render_node(self, topology: Topology, install_dir: str, rail_optimized: bool | None, source: str) -> Plan:
        """Every node generator's files for `topology` in this run (its environment, generators,
        outputs so far, policy and sandbox), installed in `install_dir` with the cluster's
        `rail_optimized`, the headers naming `source`: what a cluster generator writes for its
        node platforms."""
        return render_all(topology, self.env, install_dir=install_dir, rail_optimized=rail_optimized, source=source,
                          rendered=self.rendered, policy=self.policy, generators=self.generators, box=self.box)

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
        """Render `template` with `values` (plus `platform`, `topology`), prefixed by the header
        in `syntax` (none when None)."""
        body = self.env.get_template(template).render(platform=self.topology.platform, topology=self.topology, **values)
        return (self.header(syntax) if syntax else "") + body


class GenContext(Generation):
    """What a node generator sees: `topology`, the node's `Topology` (`hwspec.topology.node`),
    and `platform`, its `Platform`; the rest is `Generation`'s."""

    topology: Topology

    @property
    def platform(self) -> Platform:
        """The node's resolved model."""
        return self.topology.platform


class ClusterGenContext(Generation):
    """What a cluster generator sees: `topology`, the cluster's `ClusterTopology`
    (`hwspec.topology.cluster`), and `platform`, its `Cluster` (a node group's topology is
    `hwspec.topology.topology_of(group.platform)`, its files `render_node`); the rest is
    `Generation`'s."""

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
             root: str = INSTALL_ROOT, rendered: Rendered | None = None, policy: EnvironmentPolicy = STRICT,
             generators: Iterable[Generator] | None = None, sandbox: Sandbox | None = None) -> Plan:
    """Render every generator for `topology` (a node's or cluster's) into
    `{<platform name>/<path>: text}` (sorted), for installation under `root`/<platform name>/
    on the machines. `rendered` (one per run) lets a cluster reuse its node platforms' files;
    `policy` is the operator's grants for `environment:` (by default, tunables only).

    `generators` are the run's (`hwspec.generate.registry.load_generators`); by default hwspec's
    own and the installed packages' (`installed_generators()`, which raises HwspecError when one
    cannot be loaded). With `sandbox`, a site's generators run contained, as rules do with one
    (`hwspec.rules.sandbox`); without, as plain calls. A site generator that fails raises
    `GeneratorFailed`, any generator that refuses the topology `GenerationError`."""
    env = template_environment(template_dirs)
    install_dir = f"{install_root(root).rstrip('/')}/{topology.name}"
    run = tuple(installed_generators() if generators is None else generators)
    contain = sandbox is not None and any(g.site for g in run)
    with sandbox.box() if sandbox is not None and contain else contextlib.nullcontext() as box:
        files = render_all(topology, env, only=only, install_dir=install_dir, rendered=rendered, policy=policy,
                           generators=run, box=box)
    return dict(sorted((f"{topology.name}/{path}", text) for path, text in files.items()))


def render_all(topology: Topology | ClusterTopology, env: jinja2.Environment, only: Iterable[str] = (),
               install_dir: str = "", rail_optimized: bool | None = None, source: str | None = None,
               rendered: Rendered | None = None, policy: EnvironmentPolicy = STRICT,
               generators: Iterable[Generator] | None = None, box: Box | None = None) -> Plan:
    """Every generator of `generators` (by default `installed_generators()`) whose scope is
    `topology`'s kind, as `{path inside its directory: text}`; a site's each in an item of `box`
    when given (an entered `Sandbox.box()`).

    A cluster generator renders its node platforms with `ctx.render_node`, which calls this
    with the cluster's deployment context and the run's state."""
    wanted = set(only)
    plan: Plan = {}
    platform = topology.platform
    run = tuple(installed_generators() if generators is None else generators)
    for current in run:
        if current.scope != topology.kind or (wanted and current.name not in wanted):
            continue
        kind = ClusterGenContext if isinstance(topology, ClusterTopology) else GenContext
        context = kind(topology, env, current.name, source or platform.file, install_dir, rail_optimized, rendered=rendered,
                       policy=policy, generators=run, box=None if current.site else box)
        deployment = context.deployment()
        key = (id(topology), current.name, env, current.func, context.source)
        files = rendered.find(key, deployment) if rendered is not None else None
        if files is None:
            files = _run(current, context, box) if current.site else _run_builtin(current, context)
            if rendered is not None:
                rendered.keep(key, topology, {f: deployment[f] for f in context.deployment_read}, files)
        for relative, text in files.items():
            if relative in plan:
                raise GenerationError(f"{platform.file}: generators both write {relative}")
            plan[relative] = text
    return plan


def _run_builtin(current: Generator, context: Generation) -> Plan:
    """One of hwspec's own generators, as a plain call: a value a writer refuses or a template
    error is a GenerationError (E901); anything else is a bug in hwspec, and goes up."""
    import jinja2

    try:
        return current.func(context)
    except (UnsafeValue, jinja2.TemplateError) as exc:
        raise GenerationError(f"{context.topology.platform.file}: generator {current.name} failed: {exc}") from exc


def _run(current: Generator, context: Generation, box: Box | None) -> Plan:
    """A site's generator, in an item of `box` when given: its plan, checked (`_checked_plan`).
    A value a writer refuses or a template error is a GenerationError (E901), as for hwspec's
    own; an exception, leaving the box or a plan that is not one is a GeneratorFailed (E904),
    described in the box (its exception's `__str__` is site code too)."""
    import jinja2

    who = f"{context.topology.platform.file}: generator {current.name} ({current.origin})"
    refused: str | None = None
    try:
        with box.item() if box is not None else contextlib.nullcontext():
            try:
                return _checked_plan(current.func(context), context.topology.name)
            except (UnsafeValue, jinja2.TemplateError) as exc:
                refused = f"{who} failed: {describe(exc)}"
            except Exception as exc:
                failure = f"failed: {describe(exc)}"
    except Escape as exc:
        failure = exc.what
    if refused is not None:
        raise GenerationError(refused)
    raise GeneratorFailed(f"{who} {failure}")


def _checked_plan(files: object, platform: str) -> Plan:
    """`files` when it is a plan: a dict of paths the writer accepts inside the platform's
    directory (`writer.check_relative`) to text. Raises TypeError or ValueError saying what it is not."""
    from hwspec.generate.writer import check_relative

    if type(files) is not dict:
        raise TypeError(f"returned a {visible(type_name(files))}, not a plan (a dict of relative path to text)")
    for relative, text in files.items():
        if type(relative) is not str or type(text) is not str:
            raise TypeError(f"returned a plan with a {visible(type_name(relative))} key and a {visible(type_name(text))} value; "
                            "a plan maps relative paths (str) to text (str)")
        check_relative(relative, Path(platform))
    return files


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
