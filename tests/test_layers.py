"""The package's layers, pinned: which module may import which.

Every module under src/hwspec/ (the built-in rules in rules/builtin/ included) is parsed with
`ast`, nothing is imported, and every import statement counts wherever it is: at the top, inside
a function or method, under `try`. Two kinds are left out:

* imports under `if TYPE_CHECKING:`, which never run: a type hint may name a class of a higher
  layer, and such an import neither loads the module nor can close a cycle at run time;
* imports by name at run time (`importlib.import_module`), which `ast` cannot follow: the
  generator registry (`hwspec.generate.engine.generators`) imports the generator modules of its
  own subpackage that way, and `hwspec.live.inputs` its parsers.

`from package import name` is an import of the module `package.name` when there is one, else
of `package`. A name the package exports lazily (`_EXPORTS` in hwspec/__init__.py, imported by
its `__getattr__` on first use) is an import of the module that defines it, wherever it is taken:
`from hwspec import run_rules`, `from hwspec import *`, and `hwspec.run_rules` (or
`getattr(hwspec, "run_rules")`) in a module that imports `hwspec` under any name. Then (a) the import graph has no cycle, and (b) every import goes to a module of
the importer's own subpackage (top-level name) or to one of a lower layer in LAYERS.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "hwspec"

LAYERS: list[tuple[str, ...]] = [
    ("", "text", "cpulist", "content", "atomic", "hostlist", "jsonbound"),  # leaf helpers ("": hwspec/__init__.py, which holds __version__)
    ("diagnostics",),
    ("source",),
    ("spec",),
    ("model",),
    ("topology",),
    ("formats",),
    ("rules",),
    ("perf",),  # below generate: the roofline, diagram and cluster generators export perf's numbers
    ("acceptance",),  # below generate: the acceptance generators write its expected figures and plans
    ("generate",),
    ("live",),
    ("pipeline",),
    ("testing",),  # its strategies check what they draw through the pipeline
    ("cli",),
    ("__main__",),
]
"""The layers, lowest first, by top-level name under hwspec/. A module imports from its own
subpackage or from a lower layer; names that share a layer do not import each other."""

def module_name(path: Path, package: Path = PACKAGE) -> str:
    """`hwspec.model.node` for src/hwspec/model/node.py, `hwspec.model` for its __init__.py."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def lazy_exports(package: Path) -> dict[str, str]:
    """The names `package`'s __init__.py exports lazily: its `_EXPORTS` dict literal of
    name -> the module that defines it (read with `ast`, nothing imported)."""
    for node in ast.parse((package / "__init__.py").read_text(encoding="utf-8")).body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
            exports = ast.literal_eval(node.value) if node.value is not None else None
            assert isinstance(exports, dict), f"{package}/__init__.py: _EXPORTS is not a dict literal"
            return exports
    return {}


def imported_names(tree: ast.AST, module: str, is_package: bool,
                   exports: dict[str, str] | None = None, root: str = "hwspec") -> list[tuple[str, str, int]]:
    """(dotted name, the package it is from or "", line) of everything `tree` imports, anywhere
    but under `if TYPE_CHECKING:`; relative imports resolved against `module`. A name of
    `exports` (the lazy exports of package `root`) taken from `root` is an import of the module
    that defines it (the module docstring)."""
    exports = exports or {}
    found: list[tuple[str, str, int]] = []
    package = module if is_package else module.rpartition(".")[0]
    aliases: set[str] = set()  # names `root` itself is bound to in this module
    uses: list[tuple[str, int]] = []  # (name, line) of every `alias.name` and getattr(alias, "name")

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, "", node.lineno) for alias in node.names)
            aliases.update(alias.asname or root for alias in node.names
                           if alias.name.partition(".")[0] == root and (alias.asname is None or alias.name == root))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                if base == root and alias.name == "*":
                    found.extend((target, "", node.lineno) for target in sorted(set(exports.values())))
                elif base == root and alias.name in exports:
                    found.append((exports[alias.name], "", node.lineno))
                else:
                    found.append((f"{base}.{alias.name}", base, node.lineno))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            uses.append((f"{node.value.id}.{node.attr}", node.lineno))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            uses.append((f"{node.args[0].id}.{node.args[1].value}", node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    for use, line in uses:
        alias, _, name = use.partition(".")
        if alias in aliases and name in exports:
            found.append((exports[name], "", line))
    return found


def import_graph(package: Path = PACKAGE) -> nx.DiGraph:
    """Modules of the package at `package` (hwspec) and the imports between them, a lazy
    export's through the module that defines it; each edge carries the importing `line`."""
    files = {module_name(path, package): path for path in sorted(package.rglob("*.py"))}
    modules = set(files)
    exports = lazy_exports(package)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module in sorted(modules):
        path = files[module]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for name, package_name, line in imported_names(tree, module, path.name == "__init__.py", exports, package.name):
            package_of = package_name
            if name not in files and package_of:
                name = package_of  # `from package import name`, name not a module of its own
            while name and name not in files:
                name = name.rpartition(".")[0]  # `import a.b.c` of a module a.b: a.b
            if name and name != module and name in modules and not graph.has_edge(module, name):
                graph.add_edge(module, name, line=line)
    return graph


def top_level(module: str) -> str:
    """`model` for hwspec.model.node, "" for hwspec itself."""
    return module.split(".")[1] if "." in module else ""


RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    return import_graph()


def test_the_graph_holds_the_imports_inside_functions_and_leaves_out_type_checking_ones(graph: nx.DiGraph) -> None:
    """The checks below are only as good as the graph: it holds a module-level import, a
    function-level one and a relative one, and not a TYPE_CHECKING-only one."""
    assert graph.has_edge("hwspec.rules.engine", "hwspec.diagnostics")  # module level
    assert graph.has_edge("hwspec.cli.commands", "hwspec.pipeline")  # inside cmd_validate
    assert graph.has_edge("hwspec.rules.builtin.nic", "hwspec.rules.builtin._common")  # from ._common import ...
    assert graph.has_edge("hwspec.pipeline", "hwspec.content")  # from hwspec import content: the module
    assert not graph.has_edge("hwspec.pipeline", "hwspec")
    assert not graph.has_edge("hwspec.pipeline", "hwspec.rules.sandbox")  # only under TYPE_CHECKING
    assert graph.number_of_edges() > 200  # 251 when this was written


def test_every_module_has_a_layer(graph: nx.DiGraph) -> None:
    unplaced = sorted(m for m in graph if top_level(m) not in RANK)
    assert not unplaced, f"modules in no layer (add their top-level name to LAYERS): {unplaced}"


def test_the_import_graph_has_no_cycle(graph: nx.DiGraph) -> None:
    cycles = sorted(" -> ".join([*cycle, cycle[0]]) for cycle in nx.simple_cycles(graph))
    assert not cycles, "import cycles (imports inside functions count):\n  " + "\n  ".join(cycles)


def upward_imports(graph: nx.DiGraph) -> list[str]:
    """Each import of `graph` to a module of the importer's own layer or a higher one."""
    wrong = []
    for module, target, data in sorted(graph.edges(data=True)):
        mine, theirs = top_level(module), top_level(target)
        if mine == theirs or mine not in RANK or theirs not in RANK:
            continue  # a module without a layer fails test_every_module_has_a_layer
        if RANK[theirs] >= RANK[mine]:
            wrong.append(f"{module} (line {data['line']}) imports {target}: "
                         f"layer {RANK[mine]} ({mine or 'hwspec'}) may not import layer {RANK[theirs]} ({theirs or 'hwspec'})")
    return wrong


def test_every_import_goes_to_its_own_subpackage_or_a_lower_layer(graph: nx.DiGraph) -> None:
    wrong = upward_imports(graph)
    assert not wrong, "imports against the layer order:\n  " + "\n  ".join(wrong)


def test_the_package_s_lazy_exports_are_read() -> None:
    """What the planted package below relies on, of the real one."""
    assert lazy_exports(PACKAGE)["run_rules"] == "hwspec.rules.engine"


PLANTED_INIT = '''
import importlib
_EXPORTS: dict[str, str] = {"run_rules": "hwspec.rules.engine", "Location": "hwspec.diagnostics.diagnostic"}
def __getattr__(name):
    return getattr(importlib.import_module(_EXPORTS[name]), name)
'''
PLANTED = {
    "diagnostics/by_attribute.py": "import hwspec\n\ndef later(ctx):\n    return hwspec.run_rules(ctx)\n",
    "diagnostics/by_alias.py": "import hwspec.text as text\nimport hwspec as h\n\nX = getattr(h, 'run_rules')\n",
    "diagnostics/by_name.py": "def later():\n    from hwspec import Location, run_rules\n    return run_rules\n",
    "diagnostics/by_star.py": "from hwspec import *  # noqa\n",
    "diagnostics/by_relative.py": "from .. import run_rules\n",
    "model/fine.py": "import hwspec\nfrom hwspec import Location\n\nWHERE = hwspec.Location\n",
}


def test_an_upward_import_through_a_lazy_export_is_against_the_layer_order(tmp_path: Path) -> None:
    """A low layer taking a higher layer's name from the package's lazy exports loads that layer
    as surely as importing it: each way of taking it is judged by the defining module's layer
    (a package planted with one of each, and one lawful use of a lower layer's export)."""
    package = tmp_path / "hwspec"
    for rel in ["__init__.py", "text.py", "diagnostics/__init__.py", "diagnostics/diagnostic.py", "model/__init__.py",
                "rules/__init__.py", "rules/engine.py", *PLANTED]:
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(PLANTED_INIT if rel == "__init__.py" else PLANTED.get(rel, ""), encoding="utf-8")
    rules = "layer 1 (diagnostics) may not import layer 7 (rules)"
    assert upward_imports(import_graph(package)) == [
        f"hwspec.diagnostics.by_alias (line 4) imports hwspec.rules.engine: {rules}",
        f"hwspec.diagnostics.by_attribute (line 4) imports hwspec.rules.engine: {rules}",
        f"hwspec.diagnostics.by_name (line 2) imports hwspec.rules.engine: {rules}",
        f"hwspec.diagnostics.by_relative (line 1) imports hwspec.rules.engine: {rules}",
        f"hwspec.diagnostics.by_star (line 1) imports hwspec.rules.engine: {rules}",
    ]


# ---------------------------------------------------------------- what a command loads

RUNNER = """
import json, sys
from hwspec.cli import main
rc = main({argv!r})
print(json.dumps({{"rc": rc, "modules": sorted(sys.modules)}}))
"""


def modules_after(argv: list[str]) -> tuple[int, list[str]]:
    """The exit status of `hwspec ARGV` run in a fresh interpreter, and the modules it loaded."""
    result = subprocess.run([sys.executable, "-c", RUNNER.format(argv=argv)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    return outcome["rc"], outcome["modules"]


def generator_code(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "jinja2" or m.startswith(("hwspec.generate", "jinja2."))]


@pytest.mark.slow  # a fresh interpreter per case
@pytest.mark.parametrize("paths", [["platforms/zionex.yaml"], ["platforms"]], ids=["zionex", "every-shipped-platform"])
def test_validate_imports_no_generator_code(paths: list[str]) -> None:
    """The generation rules read the generators' limits from hwspec.formats: `validate` loads
    no generator module and no jinja2 (clusters included: HW903 reads the hostfile's limits)."""
    rc, modules = modules_after(["validate", *paths])
    assert rc == 0
    assert "hwspec._rules_0.generation" in modules  # the generation rules did run
    assert generator_code(modules) == []


@pytest.mark.slow  # a fresh interpreter
def test_generate_check_does_import_the_generators() -> None:
    """What the test above looks for is what generating loads."""
    rc, modules = modules_after(["generate", "--check", "--no-svg", "platforms/zionex.yaml"])
    assert rc == 0
    assert {"hwspec.generate.engine", "hwspec.generate.nccl", "jinja2"} <= set(generator_code(modules))


# ---------------------------------------------------------------- the topology of a platform

def run_python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow  # a fresh interpreter
def test_a_platform_s_topology_is_built_once_by_topology_of_and_the_model_has_no_hook_for_it() -> None:
    """The model does not import the topology layer and has no `.topology`: a platform loaded
    with only the model imported has none, and `topology_of` builds it on the first call, the
    same object on every later one; an equal copy of the platform gets its own."""
    out = run_python(
        "import dataclasses, sys\n"
        "from hwspec.model.load import load_platform\n"
        "platform = load_platform('platforms/zionex.yaml')\n"
        "print(sorted(m for m in sys.modules if m.startswith('hwspec.topology')), hasattr(platform, 'topology'))\n"
        "from hwspec.topology import topology_of\n"
        "topology = topology_of(platform)\n"
        "copy = dataclasses.replace(platform)\n"
        "print(type(topology).__name__, topology is topology_of(platform), topology.platform is platform,\n"
        "      topology.nics_of('gpu0')[0], topology_of(copy) is topology, topology_of(copy).platform is copy)\n")
    assert out.splitlines() == [
        "[] False",
        "Topology True True nic0 False True",
    ]


@pytest.mark.slow  # a fresh interpreter
def test_platforms_from_hwspec_testing_have_their_topology() -> None:
    """docs/property-testing.md's property test reads `topology_of(platform).children` of
    node_platforms()' platforms, with nothing but hwspec.testing and hwspec.rules imported."""
    out = run_python(
        "from hwspec.testing import load_node_text\n"
        "from hwspec.rules import topology_of\n"
        "platform = load_node_text(open('tests/fixtures/spec/minimal_node.yaml').read())\n"
        "print(topology_of(platform).children['sw0'])\n")
    assert out.strip() == "('gpu0', 'nic0', 'gpu1', 'nic1')"
