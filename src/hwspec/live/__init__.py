"""Live machines: read what a node's own tools report, draft a platform file from it
(`hwspec import`), and compare a node with its platform file (`hwspec diff`).

    inputs (NCCL dump | lstopo XML | nvidia-smi topo -m | -q -x | nvlink -R/-s)   inputs.read_input picks the parser by content
        -> nccl / lstopo / topo_matrix / smi_xml / smi_nvlink parsers -> observed.Machine (every element with file:line;
           XML through xmlread: expat, no entities, bounded size and depth)
        -> merge (several inputs, one machine; contradictions are located warnings)
        -> draft (platform YAML; repeat blocks from repeat.fold; parts by PCI id)
           | diff (findings D101-D113 at the spec's lines)
    commands: the `hwspec import` / `hwspec diff` command lines.

The spec-facing parts (`draft`, `diff`) are thin layers over `observed`: a new spec feature
only changes how they map the observed machine.
"""

FORMATS = ("nccl", "lstopo", "topo-m", "smi-xml", "nvlink-remote", "nvlink-status")
"""Input formats: NCCL topology XML (NCCL_TOPO_DUMP_FILE), hwloc XML (lstopo --of xml), nvidia-smi topo -m text,
nvidia-smi -q -x XML, nvidia-smi nvlink -R (each link's remote bus id) and -s (each link's state) text.
Defined here, import-light, for the command line's --help."""
