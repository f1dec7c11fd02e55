"""What each inter-node transport needs from each consumer: one frozen table, `TRANSPORTS`.

A platform says `transport: efa` (or `infiniband`, `rocev2`, `tcpx`, `tcpxo`, `slingshot`, `tcp`);
the generators (nccl.conf / rccl.conf, launch.env, nccl-topo.xml) and the rules read only this
table to decide what to write: which NCCL net carries the traffic, whether it is RDMA, whether
GPUDirect applies, whether RCCL can use it, and the environment settings the vendor documents.
Every fixed setting carries the document it comes from (`EnvSetting.source`).

Invariants:
- Only documented settings are written. A vendor value hwspec cannot write verbatim into a
  `NAME=value` file (NCCL_NET="AWS Libfabric" has a space) is written as a comment that says so.
- The plugin library (aws-ofi-nccl's libnccl-net.so / librccl-net.so, GCP's libnccl-net.so under
  /usr/local/tcpx or /var/lib/tcpxo) is never named or located by hwspec: installing it and putting
  it on the loader path is the site's image's job, and a platform file may not set *_PLUGIN,
  *_LIB or *_PATH names (`hwspec.formats.environment`, rule HW702).
- Left to the site's image as well: the TCPX/TCPXO per-machine CPU bindings
  (NCCL_GPUDIRECTTCPX_TX/RX_BINDINGS), GCP's nccl-env-profile.sh tuning and tuner plugin,
  the TCPX receive daemon's socket (NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX), and the Slurm
  option HPE asks for with its alt_read rendezvous (--network=disable_rdzv_get).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from hwspec.spec.models import Transport

AWS_EFA_NCCL = ("AWS EC2 User Guide, 'Get started with EFA and NCCL' "
                "(docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html): the nccl-tests run sets "
                "FI_EFA_USE_DEVICE_RDMA to 1 on p4d and p5 (EFA with RDMA read/write)")
AWS_OFI_NCCL = ("aws-ofi-nccl README and wiki 'Environment Variables' (github.com/aws/aws-ofi-nccl): the plugin "
                "maps NCCL's net API onto libfabric; the libfabric provider is chosen with FI_PROVIDER")
GCP_TCPX = ("Google Cloud, 'Maximize GPU network bandwidth with GPUDirect-TCPX and multi-networking' (GKE, "
            "cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx) and its nccl-config.yaml "
            "(GoogleCloudPlatform/container-engine-accelerators, gpudirect-tcpx): NCCL_SOCKET_IFNAME on the primary "
            "NIC, NCCL_GPUDIRECTTCPX_SOCKET_IFNAME the GPU NICs, NCCL_GPUDIRECTTCPX_CTRL_DEV the primary NIC")
GCP_TCPXO = ("Google Cloud, 'Enable GPUDirect-TCPXO optimized NCCL communication' (a3-megagpu-8g, "
             "cloud.google.com/cluster-toolkit/docs/machine-learning/a3-mega-enable-gpudirect-tcpxo): "
             "NCCL_FASTRAK_CTRL_DEV and NCCL_SOCKET_IFNAME the primary NIC, NCCL_FASTRAK_IFNAME the GPU NICs "
             "('these parameters should not be modified')")
HPE_SLINGSHOT = ("HPE Slingshot Application Notes 'Running NCCL-Based Applications' and 'Running RCCL-Based "
                 "Applications' (github.com/HewlettPackard/shs-ccl-docs: nccl/nccl_tuning_guide.md, "
                 "rccl/rccl_tuning_guide.md, ccl_env.sh)")
NCCL_ENV = ("NCCL User Guide, 'Environment Variables' (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html): "
            "NCCL_IB_DISABLE, NCCL_SOCKET_IFNAME, NCCL_NET, NCCL_NET_PLUGIN")

Library = Literal["nccl", "rccl"]


@dataclass(frozen=True, slots=True)
class EnvSetting:
    """One vendor-documented `NAME=value`, with why and where it is documented. `value` None:
    documented, but not writable verbatim (the comment says what to set by hand). `only`: the
    collective library it applies to (None: both)."""

    name: str
    value: str | None
    why: str
    source: str
    only: Library | None = None

    @property
    def launcher(self) -> bool:
        """Read by the launcher's process (libfabric, HIP), not by NCCL's conf reader: launch.env only."""
        return not self.name.startswith("NCCL_")


@dataclass(frozen=True, slots=True)
class TransportFacts:
    """What one transport needs.

    - `net`: NCCL's net that carries it: "IB" (NCCL's own IB verbs: NCCL_IB_HCA, GID, TC, SL
      apply), "Socket" (NCCL's sockets) or "plugin" (a net plugin: `plugin` is its name as NCCL
      logs it, "Loaded net plugin <name>"; its library is the image's, `plugin_library`, never written).
    - `rdma`: the NIC moves data by RDMA (a backend part must be `rdma: true`).
    - `gpudirect`: the NIC can read and write GPU memory (GPUDirect RDMA, or GPUDirect-TCPX's device
      memory TCP): `backend.gpudirect` may be declared, and nccl-topo.xml writes `gdr="1"`.
    - `rccl`: RCCL (AMD GPUs) can use it, as its vendor documents.
    - `net_name`: what the net calls a NIC (`<net name>` in nccl-topo.xml): the RDMA device
      ("device") or the network interface ("interface").
    - `interface`: what the NIC's network interface (`interface:`) is to the consumer. "required":
      the net plugin takes the interfaces by name and cannot run without them (GPUDirect-TCPX/-TCPXO:
      HW206 refuses a NIC without one). "socket": NCCL_SOCKET_IFNAME names it where known (sockets
      carry the collectives, Slingshot's hsn interfaces carry bootstrap); where unknown the setting
      is left out and NCCL picks its interfaces itself, as it documents (HW603 names the fact).
      "none": the net reaches the NIC by its RDMA device (InfiniBand, RoCE, EFA).
    - `socket_on_backend`: NCCL_SOCKET_IFNAME lists the backend NICs' interfaces (sockets carry
      collectives, or the vendor says so); otherwise the host NICs' interfaces.
    - `data_ifname` / `ctrl_dev`: the plugin's variables naming the backend NICs' interfaces and
      the control (primary) NIC's interface, written from the platform's NICs.
    - `settings`: fixed vendor settings; `gpudirect_settings`: written only with `backend.gpudirect`.
    """

    name: Transport
    net: Literal["IB", "Socket", "plugin"]
    plugin: str | None
    plugin_library: str | None
    rdma: bool
    gpudirect: bool
    rccl: bool
    net_name: Literal["device", "interface"]
    interface: Literal["required", "socket", "none"]
    socket_on_backend: bool
    data_ifname: str | None = None
    ctrl_dev: str | None = None
    disable_ib: bool = False
    settings: tuple[EnvSetting, ...] = ()
    gpudirect_settings: tuple[EnvSetting, ...] = ()
    sources: tuple[str, ...] = ()

    @property
    def ib_verbs(self) -> bool:
        """NCCL's own IB verbs net carries it: NCCL_IB_HCA and the RoCE settings apply."""
        return self.net == "IB"

    def env(self, library: Library, gpudirect: bool) -> tuple[EnvSetting, ...]:
        """The fixed settings for `library` (NCCL or RCCL), with the GPUDirect ones when declared."""
        chosen = self.settings + (self.gpudirect_settings if gpudirect else ())
        return tuple(s for s in chosen if s.only in (None, library))


_NCCL_NET_LIBFABRIC = EnvSetting(
    "NCCL_NET", None, "NCCL_NET is not written: its documented value, AWS Libfabric, holds a space, which launch.env "
    "cannot carry unquoted; set NCCL_NET to it in the job script so NCCL fails instead of falling back to sockets "
    "when the plugin is missing", HPE_SLINGSHOT)

TRANSPORTS: dict[str, TransportFacts] = {
    "infiniband": TransportFacts(
        "infiniband", net="IB", plugin=None, plugin_library=None, rdma=True, gpudirect=True, rccl=True,
        net_name="device", interface="none", socket_on_backend=False, sources=(NCCL_ENV,)),
    "rocev2": TransportFacts(
        "rocev2", net="IB", plugin=None, plugin_library=None, rdma=True, gpudirect=True, rccl=True,
        net_name="device", interface="none", socket_on_backend=False, sources=(NCCL_ENV,)),
    "tcp": TransportFacts(
        "tcp", net="Socket", plugin=None, plugin_library=None, rdma=False, gpudirect=False, rccl=True,
        net_name="interface", interface="socket", socket_on_backend=True, disable_ib=True, sources=(NCCL_ENV,)),
    "efa": TransportFacts(
        "efa", net="plugin", plugin="AWS Libfabric", plugin_library="libnccl-net.so (aws-ofi-nccl)",
        rdma=True, gpudirect=True, rccl=False, net_name="device", interface="none", socket_on_backend=False,
        settings=(EnvSetting("FI_PROVIDER", "efa", "libfabric provider of the aws-ofi-nccl plugin: EFA", AWS_OFI_NCCL),),
        gpudirect_settings=(EnvSetting("FI_EFA_USE_DEVICE_RDMA", "1",
                                       "EFA device RDMA (read/write) for GPUDirect transfers (p4d, p5 and later)",
                                       AWS_EFA_NCCL),),
        sources=(AWS_OFI_NCCL, AWS_EFA_NCCL)),
    "tcpx": TransportFacts(
        "tcpx", net="plugin", plugin="GPUDirectTCPX", plugin_library="libnccl-net.so (nccl-plugin-gpudirecttcpx)",
        rdma=False, gpudirect=True, rccl=False, net_name="interface", interface="required", socket_on_backend=False,
        data_ifname="NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", ctrl_dev="NCCL_GPUDIRECTTCPX_CTRL_DEV", sources=(GCP_TCPX,)),
    "tcpxo": TransportFacts(
        "tcpxo", net="plugin", plugin="FasTrak", plugin_library="libnccl-net.so (GPUDirect-TCPXO, /var/lib/tcpxo/lib64)",
        rdma=False, gpudirect=True, rccl=False, net_name="interface", interface="required", socket_on_backend=False,
        data_ifname="NCCL_FASTRAK_IFNAME", ctrl_dev="NCCL_FASTRAK_CTRL_DEV", sources=(GCP_TCPXO,)),
    "slingshot": TransportFacts(
        "slingshot", net="plugin", plugin="AWS Libfabric", plugin_library="libnccl-net.so / librccl-net.so (aws-ofi-nccl)",
        rdma=True, gpudirect=True, rccl=True, net_name="device", interface="socket", socket_on_backend=True,
        settings=(
            _NCCL_NET_LIBFABRIC,
            EnvSetting("FI_PROVIDER", "cxi", "libfabric provider of the aws-ofi-nccl plugin: HPE Slingshot (cxi)",
                       AWS_OFI_NCCL),
            EnvSetting("FI_MR_CACHE_MONITOR", "userfaultfd", "memory registration cache monitor", HPE_SLINGSHOT),
            EnvSetting("FI_CXI_DISABLE_HOST_REGISTER", "1",
                       "no host registration from the provider, which can deadlock CUDA/ROCm allocations", HPE_SLINGSHOT),
            EnvSetting("FI_CXI_DEFAULT_CQ_SIZE", "131072", "completion queue size for large jobs", HPE_SLINGSHOT),
            EnvSetting("FI_CXI_DEFAULT_TX_SIZE", "2048", "transmit queue size for large jobs", HPE_SLINGSHOT),
            EnvSetting("FI_CXI_RDZV_PROTO", "alt_read", "alt_read rendezvous protocol", HPE_SLINGSHOT),
            EnvSetting("FI_CXI_RDZV_EAGER_SIZE", "0", "no eager data before the receiver is ready", HPE_SLINGSHOT),
            EnvSetting("FI_CXI_RDZV_GET_MIN", "0", "no rendezvous get optimisation, with alt_read", HPE_SLINGSHOT),
            EnvSetting("FI_CXI_RX_MATCH_MODE", "hybrid", "software matching when hardware match resources run out",
                       HPE_SLINGSHOT),
            EnvSetting("HSA_FORCE_FINE_GRAIN_PCIE", "1", "peer-to-peer access with large BAR addressing (ROCm)",
                       HPE_SLINGSHOT, only="rccl"),
        ),
        sources=(HPE_SLINGSHOT, AWS_OFI_NCCL)),
}
"""Every transport `spec.models.Transport` names, and only those (a test pins both ways)."""

assert set(TRANSPORTS) == set(get_args(Transport)), "TRANSPORTS must cover spec.models.Transport exactly"


def facts(transport: str) -> TransportFacts:
    """The table row of `transport` (a validated `Transport` value)."""
    return TRANSPORTS[transport]


def interface_use(transport: str, role: str) -> Literal["required", "socket", "none"]:
    """What a NIC's network interface is to the consumer (`TransportFacts.interface`), by its
    transport and role: a host RoCE NIC's interface carries bootstrap ("socket") as well."""
    use = TRANSPORTS[transport].interface
    return "socket" if use == "none" and transport == "rocev2" and role != "backend" else use


def ib_verbs(transport: str) -> bool:
    """Whether NCCL's own IB verbs net carries `transport` (rocev2, infiniband)."""
    return TRANSPORTS[transport].ib_verbs
