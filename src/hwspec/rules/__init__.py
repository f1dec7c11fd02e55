"""The rule engine: `rule` registers a check, `Context` is what it reads, `Finding` what it
yields; `load_rules` loads rule files by path and `run_rules` runs them on a topology.

The built-in rules are package data in `builtin/`, loaded by path like a site's own
(`--rules DIR`); they import from here, as a site's rules do.
"""

from hwspec.rules.engine import Context, Finding, Rule, load_rules, rule, run_rules

__all__ = ["Context", "Finding", "Rule", "load_rules", "rule", "run_rules"]
