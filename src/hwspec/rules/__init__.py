"""The rule engine: `rule` registers a check, `Context` (a node rule's) or `ClusterContext` (a
cluster rule's) is what it reads, `Finding` what it yields; `topology_of` gives any model's
topology. `load_rules` loads rule files by path and `run_rules` runs them on a topology, as plain
calls, or each contained when given a `Sandbox` (`hwspec.rules.sandbox`: what the command line does).

The built-in rules are package data in `builtin/`, loaded by path like a site's own
(`--rules DIR`); they import from here, as a site's rules do.
"""

from hwspec.rules.engine import At, ClusterContext, Context, Finding, Rule, load_rules, rule, run_rules, topology_of
from hwspec.rules.sandbox import Sandbox

__all__ = ["At", "ClusterContext", "Context", "Finding", "Rule", "Sandbox", "load_rules", "rule", "run_rules", "topology_of"]
