"""hwspec: declarative hardware-platform specs for GPU training machines.

Data flows one way: YAML (with positions) -> spec model -> resolved platform -> topology ->
rules -> findings; resolved platform + topology -> generators -> plan -> write or check.

The public API is what `__all__` lists; each name is imported on first use, so that
`import hwspec` (and `hwspec --help`) loads none of the layers. Everything else is internal
and may change between releases. A site generator imports what it needs from here (`generator`,
`GenContext`, `ClusterGenContext`, `Plan`, `GenerationError`); `hwspec.rules` (for site rules)
and `hwspec.testing` (the hypothesis strategies) are public modules of their own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # one platform file, end to end
    "check": "hwspec.pipeline",
    "Checked": "hwspec.pipeline",
    "load_platform": "hwspec.pipeline",
    # the resolved model and its derived facts
    "Platform": "hwspec.model.node",
    "Cluster": "hwspec.model.cluster",
    "Topology": "hwspec.topology.node",
    "ClusterTopology": "hwspec.topology.cluster",
    "topology_of": "hwspec.topology",
    # rules
    "rule": "hwspec.rules.engine",
    "Context": "hwspec.rules.engine",
    "ClusterContext": "hwspec.rules.engine",
    "Finding": "hwspec.rules.engine",
    "load_rules": "hwspec.rules.engine",
    "run_rules": "hwspec.rules.engine",
    # generation, and writing a generator
    "plan_for": "hwspec.generate.engine",
    "write_plan": "hwspec.generate.engine",
    "check_plan": "hwspec.generate.engine",
    "generator": "hwspec.generate.registry",
    "GenContext": "hwspec.generate.engine",
    "ClusterGenContext": "hwspec.generate.engine",
    "Plan": "hwspec.generate.registry",
    "GenerationError": "hwspec.generate.engine",
    "Generator": "hwspec.generate.registry",
    "load_generators": "hwspec.generate.registry",
    # diagnostics
    "Code": "hwspec.diagnostics.codes",
    "Location": "hwspec.diagnostics.diagnostic",
    "Diagnostic": "hwspec.diagnostics.diagnostic",
    "Severity": "hwspec.diagnostics.diagnostic",
    "HwspecError": "hwspec.diagnostics.diagnostic",
}

__all__ = [
    "Checked", "Cluster", "ClusterContext", "ClusterGenContext", "ClusterTopology", "Code", "Context", "Diagnostic", "Finding",
    "GenContext", "GenerationError", "Generator", "HwspecError", "Location", "Plan", "Platform", "Severity", "Topology",
    "__version__", "check", "check_plan", "generator", "load_generators", "load_platform", "load_rules", "plan_for", "rule",
    "run_rules", "topology_of", "write_plan",
]

if TYPE_CHECKING:
    from hwspec.diagnostics.codes import Code
    from hwspec.diagnostics.diagnostic import Diagnostic, HwspecError, Location, Severity
    from hwspec.generate.engine import ClusterGenContext, GenContext, GenerationError, check_plan, plan_for, write_plan
    from hwspec.generate.registry import Generator, Plan, generator, load_generators
    from hwspec.model.cluster import Cluster
    from hwspec.model.node import Platform
    from hwspec.pipeline import Checked, check, load_platform
    from hwspec.rules.engine import ClusterContext, Context, Finding, load_rules, rule, run_rules
    from hwspec.topology import topology_of
    from hwspec.topology.cluster import ClusterTopology
    from hwspec.topology.node import Topology


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hwspec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
