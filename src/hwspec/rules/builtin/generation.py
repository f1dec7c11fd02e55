"""Generation rules: what a generator cannot write, reported during `validate`.

Each generator states its own limits in one function (`topology_limits` for nccl-topo.xml,
`settings_limits` for nccl.conf and launch.env, `host_limits` for every file that names a cluster's hosts,
`cluster_limits` for a cluster's launch and acceptance files;
`bind_limits` for bind.sh holds only what HW101 reports), in `hwspec.formats` so that `validate`
loads no generator; these rules report that list as located findings, and the
generator refuses with the same list. So `validate` clean means `generate` succeeds, and a
generator's limit has one home. The rules cannot be switched off (E304); a limit that another
rule already reports (`Limit.reported_by`, e.g. HW101 for a device outside the PCIe tree) is
left to that rule, which cannot be switched off either.
"""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.formats.limits import cluster_limits, host_limits, settings_limits
from hwspec.formats.nccl_tree import topology_limits
from hwspec.rules import ClusterContext, Context, Finding, rule

from ._common import limit_findings


@rule("HW901", "nccl-topo-writable", waivable=False,
      hint="fill in what the finding names (a CPU's vendor, family and model, a socket for each device), or shrink the node")
def nccl_topo_writable(ctx: Context) -> Iterator[Finding]:
    """nccl-topo.xml can be written within NCCL's limits: every GPU and NIC under a CPU socket, an x86 vendor NCCL knows, every attribute NCCL requires known (a CPU's arch; on x86 its vendor, on Intel its family and model), an affinity mask within 255 characters, at most 256 elements.

    NCCL's topology parser has fixed limits (MAX_STR_LEN, NCCL_TOPO_XML_MAX_NODES), knows
    only Intel and AMD on x86, and fails init on a `<cpu>` without the attributes it requires
    (an imported CPU whose input named no architecture); a file beyond them is refused by hwspec
    rather than misread by NCCL on every node. Each element of the file about to be written is
    asked NCCL's own rules of one element (the check the written file passes)."""
    yield from limit_findings(ctx, topology_limits(ctx.topology))


@rule("HW902", "nccl-settings-writable", waivable=False,
      hint="name at most 32 backend RDMA NICs, or select them with backend.ib_hca")
def nccl_settings_writable(ctx: Context) -> Iterator[Finding]:
    """nccl.conf and launch.env can name the backend: at most 32 named RDMA backend NICs, and interface lists within 1023 characters.

    NCCL_IB_HCA lists the backend NICs by device name, and NCCL reads at most 32 entries;
    NCCL_SOCKET_IFNAME (and a net plugin's data interfaces) list interfaces by exact name, and
    NCCL copies at most 1023 characters of a value: a longer list would be cut in the middle
    of a name, so generate would refuse it."""
    yield from limit_findings(ctx, settings_limits(ctx.platform))


@rule("HW903", "hostfile-writable", scope="cluster", waivable=False,
      hint="shorten host names and addresses to what a hostfile line carries")
def hostfile_writable(ctx: ClusterContext) -> Iterator[Finding]:
    """hostfile and hosts.tsv can carry every host name and address.

    A hostfile line is `host slots=N`, read by MPI, DeepSpeed and people's scripts: a name
    with a blank, quote or shell character would be split or run."""
    yield from limit_findings(ctx, host_limits(ctx.platform))


@rule("HW904", "cluster-files-writable", scope="cluster", waivable=False,
      hint="split the cluster: NVIDIA nodes (NCCL) and AMD nodes (RCCL) in clusters of their own")
def cluster_files_writable(ctx: ClusterContext) -> Iterator[Finding]:
    """A cluster's launch and acceptance files can be written: every node platform's GPUs use one collective library.

    cluster.env, node-launch.sh, train.sbatch and the acceptance runs start one job across the
    nodes: its ranks are NCCL's or RCCL's, and neither talks to the other. (One GPU count per
    node, which torchrun and the runs need too, is HW810's.)"""
    yield from limit_findings(ctx, cluster_limits(ctx.platform))
