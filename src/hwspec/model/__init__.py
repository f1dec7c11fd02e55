"""The resolved, immutable model (node, cluster, parts catalogue) and resolution from the spec."""
