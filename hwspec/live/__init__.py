"""Live machines: read what a node's own tools report, draft a platform file from it
(`hwspec import`), and compare a node with its platform file (`hwspec diff`).

    inputs (NCCL dump | lstopo XML | nvidia-smi topo -m)
        -> nccl / lstopo / topo_matrix parsers -> observed.Machine (every element with file:line)
        -> merge (several inputs, one machine)
        -> draft (platform YAML, repeat blocks, parts by PCI id)   |   diff (findings at the spec's lines)

The spec-facing parts (`draft`, `diff`) are thin layers over `observed`: a new spec feature
only changes how they map the observed machine.
"""

FORMATS = ("nccl", "lstopo", "topo-m")
"""Input formats: NCCL topology XML (NCCL_TOPO_DUMP_FILE), hwloc XML (lstopo --of xml), nvidia-smi topo -m text.
Defined here, import-light, for the command line's --help."""
