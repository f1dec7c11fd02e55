"""Hypothesis strategies for hwspec platforms: property-based tests for hwspec and for its users.

    from hypothesis import given
    from hwspec.rules import load_rules
    from hwspec.testing import check_node_text, node_yaml

    @given(node_yaml(max_gpus=8))
    def test_my_site_rule_accepts_valid_platforms(text):
        assert check_node_text(text, load_rules(["site_rules"])) == []

hypothesis is a test-only dependency: install `hwspec[test]` to use this package.

- `nodes`: `node_specs()` draws VALID node platform files as plain dicts (what the YAML holds);
  `node_yaml()`, `node_platforms()`, `with_environment()`, `group_numa_nodes()`,
  `present_virtually()` build on it; `dump_yaml`, `load_node_text`, `check_node_text`.
- `clusters`: `cluster_specs()`/`clusters()`, a cluster over one drawn node platform, through
  files (`ClusterFiles`, `check_cluster_files`).
- `faults`: `faulty_node_specs()`/`faulty_cluster_specs()`, single-fault mutations of valid
  specs, each labelled with the rule that must report it (`Fault`, `FAULT_RULES`,
  `CLUSTER_FAULT_RULES`).
- `hostile`: hostile text and names, and valid specs carrying them where they reach an output;
  `hostile_import_inputs()`, minimal `hwspec import` inputs (`ImportInput`) carrying them.

Invariants (hwspec's own tests/test_properties*.py): every drawn spec loads through the real
loader and passes every built-in rule with no finding at all; its outputs generate. Sizes are
drawn first as small integers and optional keys left out, so failures shrink to small machines.
"""

try:
    import hypothesis  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("hwspec.testing needs hypothesis, a test-only dependency of hwspec: "
                      "install it with pip install 'hwspec[test]'") from exc

from hwspec.testing.clusters import ClusterFiles, check_cluster_files, cluster_specs, clusters
from hwspec.testing.faults import CLUSTER_FAULT_RULES, FAULT_RULES, Fault, faulty_cluster_specs, faulty_node_specs
from hwspec.testing.hostile import (
    DANGEROUS_ENV_NAMES,
    HOSTILE_PATH_PIECES,
    HOSTILE_PIECES,
    IMPORT_FORMATS,
    NAME_FIELDS,
    TEXT_FIELDS,
    ImportInput,
    hostile_cluster_specs,
    hostile_env_values,
    hostile_environment_specs,
    hostile_environments,
    hostile_import_inputs,
    hostile_names,
    hostile_node_specs,
    hostile_texts,
)
from hwspec.testing.nodes import (
    NIC_MODES,
    NVLINK_PATTERNS,
    check_node_text,
    dump_yaml,
    group_numa_nodes,
    load_node_text,
    node_platforms,
    node_specs,
    node_yaml,
    present_virtually,
    with_environment,
)

__all__ = [
    "CLUSTER_FAULT_RULES", "DANGEROUS_ENV_NAMES", "FAULT_RULES", "HOSTILE_PATH_PIECES", "HOSTILE_PIECES", "IMPORT_FORMATS",
    "NAME_FIELDS", "NIC_MODES",
    "NVLINK_PATTERNS", "TEXT_FIELDS",
    "ClusterFiles", "Fault", "ImportInput",
    "check_cluster_files", "check_node_text", "cluster_specs", "clusters", "dump_yaml", "faulty_cluster_specs",
    "faulty_node_specs", "group_numa_nodes", "hostile_cluster_specs", "hostile_env_values",
    "hostile_environment_specs", "hostile_environments", "hostile_import_inputs", "hostile_names", "hostile_node_specs",
    "hostile_texts", "load_node_text", "node_platforms", "node_specs", "node_yaml", "present_virtually",
    "with_environment",
]
