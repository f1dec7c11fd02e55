#!/usr/bin/env python3
"""Walk the path from file to model and print where it goes: which modules, how often it moves
between them, and how often it climbs back.

    .venv/bin/python benchmarks/walk_path.py                      # the default files below
    .venv/bin/python benchmarks/walk_path.py platforms/zionex.yaml -v

For each file, `hwspec.pipeline.check(file)` runs once (imports and caches warm, as for the
second file of a run), then again in this process under `sys.setprofile`, and
every call and return between entering `pipeline.load_any` and leaving it (reading the file to
having its resolved model or its diagnostics; the rules are not part of the walk) is recorded
as a call tree of hwspec's own functions. Frames of other packages (pydantic, PyYAML, the
standard library) are transparent: a validator that pydantic calls counts as called by the
hwspec function that asked pydantic to validate. Module bodies run by a first import are left
out. The walk is the call tree with repeats left out: each (caller function, callee function)
pair once, at its first call, so that a file with 8 GPUs walks as one with 1.

Counted along the walk, twice: with a place a module of hwspec, then a layer (`spec`, `model`):
  stays    runs of the walk in one place (1 + every move between places)
  places   distinct modules visited
  down     calls into another module, of the same or a lower layer, not already on the stack
  climbs   calls back into a module already on the stack (a callback into a caller) or into a
           higher layer than the caller's (LAYERS, as tests/test_layers.py orders them)
  returns  returns into another module

A number, not a target: it says whether the path from file to model goes one way (issue 38).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

DEFAULT_FILES = ["platforms/hgx-h100.yaml", "tests/fixtures/spec/several_errors.yaml", "platforms/zionex-16.yaml"]
"""A valid node platform, one with errors of every kind the loader finds, and a cluster."""

LAYERS = ["", "text", "cpulist", "content", "atomic", "hostlist", "jsonbound", "diagnostics", "source", "spec", "model",
          "topology", "formats", "rules", "perf", "generate", "live", "pipeline"]
"""hwspec's subpackages (and leaf modules), lowest first, as tests/test_layers.py layers them."""


def layer(module: str) -> int:
    parts = module.split(".")
    name = parts[1] if len(parts) > 1 else ""
    return LAYERS.index(name) if name in LAYERS else len(LAYERS)


@dataclass
class Call:
    module: str
    function: tuple[str, int, str]
    children: list[Call] = field(default_factory=list)


@dataclass
class Walk:
    steps: list[tuple[str, str, str, str]]
    """(kind: down, climb or return; from module; to module; function)."""
    start: str

    def counts(self) -> dict[str, int]:
        kinds = Counter(kind for kind, *_ in self.steps)
        return {"stays": 1 + len(self.steps), "places": len({self.start} | {to for _, _, to, _ in self.steps}),
                "down": kinds["down"], "climbs": kinds["climb"], "returns": kinds["return"]}


def record(path: Path) -> Call:
    """The call tree of hwspec's functions while `pipeline.check(path)` loads `path`."""
    import hwspec.pipeline as pipeline

    root = Call("", ("", 0, ""))
    stack = [root]
    state = {"active": False, "skip": 0}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        module = frame.f_globals.get("__name__", "")
        code = frame.f_code
        if event == "call" and module == "hwspec.pipeline" and code.co_name == "load_any":
            state["active"] = True
        if not state["active"]:
            return
        if code.co_name == "<module>":  # an import run on the way
            state["skip"] += 1 if event == "call" else -1
            return
        if state["skip"] or not module.startswith("hwspec"):
            return
        if event == "call":
            call = Call(module, (code.co_filename, code.co_firstlineno, code.co_name))
            stack[-1].children.append(call)
            stack.append(call)
        else:
            stack.pop()
            if module == "hwspec.pipeline" and code.co_name == "load_any":
                state["active"] = False

    sys.setprofile(profile)
    try:
        pipeline.check(path)
    finally:
        sys.setprofile(None)
    return root.children[0]


def walk(top: Call, place: Callable[[str], str] = lambda module: module) -> Walk:
    """The moves between places (`place(module)`: the module itself, or its layer) of the call
    tree `top`, each (caller, callee) function pair at its first call."""
    seen: set[tuple[Any, Any]] = set()
    steps: list[tuple[str, str, str, str]] = []

    def visit(call: Call, on_stack: list[str]) -> None:
        for child in call.children:
            if (call.function, child.function) in seen:
                continue
            seen.add((call.function, child.function))
            here, there = place(call.module), place(child.module)
            if here != there:
                climb = there in on_stack or layer(child.module) > layer(call.module)
                steps.append(("climb" if climb else "down", here, there, child.function[2]))
            visit(child, on_stack + [here])
            if here != there:
                steps.append(("return", there, here, child.function[2]))

    visit(top, [])
    return Walk(steps, place(top.module))


def layer_of(module: str) -> str:
    """`hwspec.spec.translate` -> `spec`; a top-level module is its own layer."""
    return module.split(".")[1] if "." in module else module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every move")
    args = parser.parse_args()
    for name in args.files:
        import hwspec.pipeline as pipeline

        pipeline.check(ROOT / name)
        tree = record(ROOT / name)
        found, by_layer = walk(tree), walk(tree, layer_of)
        print(f"{name}: modules: " + " ".join(f"{key} {value}" for key, value in found.counts().items())
              + "; layers: " + " ".join(f"{key} {value}" for key, value in by_layer.counts().items()))
        if args.verbose:
            for kind, source, target, function in found.steps:
                print(f"  {kind:6} {source} -> {target} ({function})")
            moves = Counter(tuple(sorted((s, t))) for _, s, t, _ in found.steps)
            print("  most moves:", ", ".join(f"{a} <-> {b} {n}" for (a, b), n in moves.most_common(5)))


if __name__ == "__main__":
    main()
