"""The package's layers, pinned: which module may import which.

Every module under src/hwspec/ (the built-in rules in rules/builtin/ included) is parsed with
`ast`, nothing is imported, and every import statement counts wherever it is: at the top, inside
a function or method, under `try`. Two kinds are left out:

* imports under `if TYPE_CHECKING:`, which never run: a type hint may name a class of a higher
  layer (the model's `Platform.topology` is typed as the topology layer's `Topology`), and such
  an import neither loads the module nor can close a cycle at run time;
* imports by name at run time (`importlib.import_module`), which `ast` cannot follow: the
  generator registry (`hwspec.generate.engine.generators`) imports the generator modules of its
  own subpackage that way, and `hwspec.live.inputs` its parsers.

`from package import name` is an import of the module `package.name` when there is one, else
of `package`. Then (a) the import graph has no cycle, and (b) every import goes to a module of
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
    ("generate",),
    ("live",),
    ("pipeline",),
    ("testing",),  # its strategies check what they draw through the pipeline
    ("cli",),
    ("__main__",),
]
"""The layers, lowest first, by top-level name under hwspec/. A module imports from its own
subpackage or from a lower layer; names that share a layer do not import each other."""

def module_name(path: Path) -> str:
    """`hwspec.model.node` for src/hwspec/model/node.py, `hwspec.model` for its __init__.py."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, str, int]]:
    """(dotted name, the package it is from or "", line) of everything `tree` imports, anywhere
    but under `if TYPE_CHECKING:`; relative imports resolved against `module`."""
    found: list[tuple[str, str, int]] = []
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, "", node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.extend((f"{base}.{alias.name}", base, node.lineno) for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> nx.DiGraph:
    """Modules of hwspec and the imports between them; each edge carries the importing `line`."""
    files = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    modules = set(files)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module in sorted(modules):
        path = files[module]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for name, package, line in imported_names(tree, module, path.name == "__init__.py"):
            if name not in files and package:
                name = package  # `from package import name`, name not a module of its own
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
    assert not graph.has_edge("hwspec.model.node", "hwspec.topology.node")  # only under TYPE_CHECKING
    assert graph.number_of_edges() > 200  # 251 when this was written


def test_every_module_has_a_layer(graph: nx.DiGraph) -> None:
    unplaced = sorted(m for m in graph if top_level(m) not in RANK)
    assert not unplaced, f"modules in no layer (add their top-level name to LAYERS): {unplaced}"


def test_the_import_graph_has_no_cycle(graph: nx.DiGraph) -> None:
    cycles = sorted(" -> ".join([*cycle, cycle[0]]) for cycle in nx.simple_cycles(graph))
    assert not cycles, "import cycles (imports inside functions count):\n  " + "\n  ".join(cycles)


def test_every_import_goes_to_its_own_subpackage_or_a_lower_layer(graph: nx.DiGraph) -> None:
    wrong = []
    for module, target, data in sorted(graph.edges(data=True)):
        mine, theirs = top_level(module), top_level(target)
        if mine == theirs or mine not in RANK or theirs not in RANK:
            continue  # a module without a layer fails test_every_module_has_a_layer
        if RANK[theirs] >= RANK[mine]:
            wrong.append(f"{module} (line {data['line']}) imports {target}: "
                         f"layer {RANK[mine]} ({mine or 'hwspec'}) may not import layer {RANK[theirs]} ({theirs or 'hwspec'})")
    assert not wrong, "imports against the layer order:\n  " + "\n  ".join(wrong)


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


@pytest.mark.parametrize("paths", [["platforms/zionex.yaml"], ["platforms"]], ids=["zionex", "every-shipped-platform"])
def test_validate_imports_no_generator_code(paths: list[str]) -> None:
    """The generation rules read the generators' limits from hwspec.formats: `validate` loads
    no generator module and no jinja2 (clusters included: HW903 reads the hostfile's limits)."""
    rc, modules = modules_after(["validate", *paths])
    assert rc == 0
    assert "hwspec._rules_0.generation" in modules  # the generation rules did run
    assert generator_code(modules) == []


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


def test_a_platform_s_topology_is_built_by_the_topology_layer_once_it_is_imported() -> None:
    """The model does not import the topology layer: a platform loaded with only the model
    imported says so when asked for its topology; once hwspec.topology is imported, the same
    platform has it, built once."""
    out = run_python(
        "import sys\n"
        "from hwspec.model.load import load_platform\n"
        "platform = load_platform('platforms/zionex.yaml')\n"
        "print(sorted(m for m in sys.modules if m.startswith('hwspec.topology')))\n"
        "try:\n"
        "    platform.topology\n"
        "except RuntimeError as exc:\n"
        "    print(exc)\n"
        "from hwspec.topology import topology_of\n"
        "print(type(platform.topology).__name__, platform.topology is platform.topology is topology_of(platform),\n"
        "      platform.topology.platform is platform, platform.topology.nics_of('gpu0')[0].id)\n")
    assert out.splitlines() == [
        "[]",
        "Platform.topology is built by the topology layer: import hwspec.topology (or use hwspec.topology.topology_of) first",
        "Topology True True nic0",
    ]


def test_platforms_from_hwspec_testing_have_their_topology() -> None:
    """docs/property-testing.md's property test reads `platform.topology.children` of node_platforms()'
    platforms, with nothing but hwspec.testing and hwspec.rules imported."""
    out = run_python(
        "from hwspec.testing import load_node_text\n"
        "platform = load_node_text(open('tests/fixtures/spec/minimal_node.yaml').read())\n"
        "print(platform.topology.children['sw0'])\n")
    assert out.strip() == "('gpu0', 'nic0', 'gpu1', 'nic1')"
