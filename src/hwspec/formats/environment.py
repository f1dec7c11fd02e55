"""What a platform or cluster file may set under `environment:`, and why the rest is refused.

The files hwspec writes from `environment:` are sourced and run as root on every node
(`launch.env`, `cluster.env` through `node-launch.sh`, `train.sbatch`), and `nccl.conf` is read
by every NCCL process; a platform file comes from whoever opened the pull request. So a
platform file may set what a consumer reads as a *tunable*, and nothing that

- loads code or chooses which programs and libraries run (`LD_PRELOAD`, `PATH`, `PYTHONPATH`,
  `BASH_ENV`, `NCCL_NET_PLUGIN`, `NCCL_ENV_PLUGIN`, any `*_PLUGIN`, `*_LIB`, ...),
- names a file, directory or socket that a consumer reads, writes or connects to
  (`NCCL_TOPO_FILE`, `NCCL_CONF_FILE`, `NCCL_DEBUG_FILE`, `NCCL_PROXY_PROFILE`,
  `NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX`, any `*_FILE`, `*_PATH`, `*_DIR`, `*_DUMP*`,
  `*_PREFIX`, `*_UNIX_*`, ...),
- changes where the job connects or what it runs on: hosts, addresses, rendezvous, ranks and
  devices (`PET_RDZV_ENDPOINT`, `MASTER_ADDR`, `NCCL_COMM_ID`, `CUDA_VISIBLE_DEVICES`,
  `HWSPEC_*`, `SLURM_*`, any `*_ADDR`, `*_PORT`, ...).

A tunable is an `NCCL_*` or `RCCL_*` name outside those classes (the names NCCL reads are in
`hwspec.formats.nccl_env`; HW701 warns about the others), or one of `REVIEWED_TUNABLES`. Every
other name is refused as unreviewed. The classes are decided from the name alone, by its words
(`_`-separated), so a name NCCL adds in a later release falls in its class without a change here.

What is refused can be granted by the operator only, outside the untrusted file: `hwspec
validate|generate --allow-env NAME` (an `EnvironmentPolicy`). The rules HW702 (node) and HW812
(cluster) report refusals as located findings and cannot be switched off under `rules:`; the
generators refuse with the same list (`environment_limits`), so nothing a platform file says can
put a refused name into a generated file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hwspec.formats.limits import Limit

LOADS_CODE = "loads code or chooses which programs and libraries run"
NAMES_FILE = "names a file or directory that NCCL or the launcher reads or writes"
REDIRECTS = "changes where the job connects or what it runs on (hosts, addresses, rendezvous, ranks, devices)"
UNREVIEWED = "is not a setting hwspec has reviewed as a tunable ('hwspec explain HW702' lists the reviewed ones)"

_CODE_NAMES = frozenset("""
PATH ENV BASH_ENV SHELL SHELLOPTS BASHOPTS IFS PS4 PROMPT_COMMAND CDPATH GLOBIGNORE NODE_OPTIONS
JAVA_TOOL_OPTIONS JDK_JAVA_OPTIONS GCONV_PATH GLIBC_TUNABLES LOCPATH NLSPATH HOSTALIASES MALLOC_CONF
OPENSSL_CONF OPENSSL_ENGINES CC CXX LDSHARED EDITOR VISUAL PAGER BROWSER
""".split())
_CODE_PREFIXES = ("LD_", "DYLD_", "PYTHON", "BASH_FUNC_", "PERL", "RUBY", "GIT_", "TORCHINDUCTOR_", "TRITON_")
_CODE_WORDS = frozenset("""
PLUGIN PLUGINS PRELOAD LIB LIBS LIBRARY LIBRARIES INJECTION INJECTION32 INJECTION64 HOOK HOOKS COMMAND CMD
EXEC EXECUTABLE SCRIPT SCRIPTS BINARY PROGRAM LOADER
""".split())

_FILE_NAMES = frozenset("HOME PWD OLDPWD TMPDIR TMP TEMP".split()) | frozenset("""
NCCL_PROXY_PROFILE NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX
""".split())
"""Names no word gives away. From NCCL's and its plugins' own sources: `NCCL_PROXY_PROFILE` is
the file NCCL's proxy profiler opens for writing (`fopen(ncclGetEnv("NCCL_PROXY_PROFILE"), "w")`
in NVIDIA/nccl src/misc/profiler.cc of the 2022 releases, in builds with PROFILE_PROXY);
`NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX` is the directory of Unix sockets the GPUDirect-TCPX
plugin (nccl-plugin-gpudirecttcpx) connects to, its receive-data manager's (RxDM) `UDS_PATH`
in Google's TCPX prolog scripts and docs (any other `*_PREFIX` or `*_UNIX_*` name is refused by `_FILE_SUFFIXES` and
`_FILE_WORDS`, whichever plugin reads it). The plugins' other path names end in a word below
(`NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY`, `NCCL_TUNER_CONFIG_PATH`,
`NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE`, `NCCL_PROXY_PROFILE_DIR`); aws-ofi-nccl's `OFI_NCCL_*` names are refused as unreviewed unless
listed in `REVIEWED_TUNABLES`."""
_FILE_PREFIXES = ("XDG_",)
_FILE_WORDS = frozenset("FILE FILES PATH PATHS DIR DIRS DIRECTORY FOLDER DUMP HOSTFILE UNIX UDS SOCKPATH".split())
_FILE_SUFFIXES = ("_PREFIX",)
"""A name ending in PREFIX names the start of paths (a socket or file prefix); `_PREFIX_LEN`
(NCCL_IB_SUBNET_PREFIX_LEN, a number) does not end so."""

_REDIRECT_NAMES = frozenset("""
MASTER_ADDR MASTER_PORT WORLD_SIZE RANK LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE ROLE_RANK
ROLE_WORLD_SIZE NODE_RANK CUDA_VISIBLE_DEVICES HIP_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES GPU_DEVICE_ORDINAL
NVIDIA_VISIBLE_DEVICES CUDA_DEVICE_ORDER NCCL_COMM_ID NCCL_HOSTID HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY
FTP_PROXY USER LOGNAME HOSTNAME
""".split())
_REDIRECT_PREFIXES = ("PET_", "TORCHELASTIC_", "HWSPEC_", "SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "OMPI_",
                      "PMIX_", "PMI_", "I_MPI_", "KUBERNETES_")
_REDIRECT_WORDS = frozenset("RDZV RENDEZVOUS ENDPOINT ENDPOINTS HOSTNAME HOSTNAMES HOSTID URL URI".split())
_REDIRECT_SUFFIXES = ("_ADDR", "_ADDRESS", "_PORT")

REVIEWED_TUNABLES: frozenset[str] = frozenset("""
UCX_TLS UCX_NET_DEVICES UCX_IB_GID_INDEX UCX_IB_TRAFFIC_CLASS UCX_IB_SL UCX_IB_PCI_RELAXED_ORDERING
UCX_RNDV_THRESH UCX_RNDV_SCHEME UCX_MAX_RNDV_RAILS UCX_MAX_EAGER_RAILS UCX_RC_TIMEOUT UCX_RC_RETRY_COUNT
UCX_UNIFIED_MODE UCX_MEMTYPE_CACHE UCX_LOG_LEVEL UCX_WARN_UNUSED_ENV_VARS
FI_PROVIDER FI_EFA_USE_DEVICE_RDMA FI_EFA_FORK_SAFE FI_EFA_USE_HUGE_PAGE FI_EFA_SET_CUDA_SYNC_MEMOPS
FI_EFA_ENABLE_SHM_TRANSFER FI_HMEM_CUDA_USE_GDRCOPY FI_MR_CACHE_MONITOR FI_LOG_LEVEL
FI_CXI_DISABLE_HOST_REGISTER FI_CXI_DEFAULT_CQ_SIZE FI_CXI_DEFAULT_TX_SIZE FI_CXI_RX_MATCH_MODE
FI_CXI_OPTIMIZED_MRS
OFI_NCCL_PROTOCOL OFI_NCCL_NIC_DUP_CONNS
SHARP_COLL_ENABLE_SAT SHARP_COLL_LOCK_ON_COMM_INIT SHARP_COLL_LOG_LEVEL
SHARP_COLL_NUM_COLL_GROUP_RESOURCE_ALLOC_THRESHOLD
CUDA_DEVICE_MAX_CONNECTIONS CUDA_DEVICE_MAX_COPY_CONNECTIONS CUDA_MODULE_LOADING CUDA_LAUNCH_BLOCKING
CUDA_CACHE_DISABLE CUDA_CACHE_MAXSIZE CUDA_AUTO_BOOST CUDA_SCALE_LAUNCH_QUEUES
TORCH_NCCL_ASYNC_ERROR_HANDLING TORCH_NCCL_BLOCKING_WAIT TORCH_NCCL_AVOID_RECORD_STREAMS
TORCH_NCCL_HIGH_PRIORITY TORCH_NCCL_ENABLE_MONITORING TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC
TORCH_NCCL_TRACE_BUFFER_SIZE TORCH_DISTRIBUTED_DEBUG
GLOO_SOCKET_IFNAME TP_SOCKET_IFNAME OMP_NUM_THREADS OMP_PROC_BIND OMP_PLACES MKL_NUM_THREADS
HSA_FORCE_FINE_GRAIN_PCIE HSA_NO_SCRATCH_RECLAIM HSA_ENABLE_SDMA
""".split())
"""The tunables outside NCCL_*/RCCL_* a platform file may set: documented settings of UCX
(`ucx_info -c`), libfabric's EFA and CXI providers (fi_efa(7), fi_cxi(7)), the aws-ofi-nccl
plugin, SHARP, CUDA (the CUDA Programming Guide's environment variables), PyTorch's NCCL process
group, Gloo/TensorPipe interface selection, OpenMP/MKL threads and ROCm's HSA runtime, each read
as a number, a switch or a device/interface name. Extend it by review only: a name that loads
code, names a file or changes where the job connects is refused even when listed here."""


def refusal(name: str) -> str | None:
    """Why a platform file may not set the variable `name` (one of the phrases `LOADS_CODE`,
    `NAMES_FILE`, `REDIRECTS`, `UNREVIEWED`), or None when it is a tunable. Decided from the
    name alone; the classes are checked in that order."""
    words = frozenset(name.split("_"))
    if name in _CODE_NAMES or name.startswith(_CODE_PREFIXES) or words & _CODE_WORDS:
        return LOADS_CODE
    if (name in _FILE_NAMES or name.startswith(_FILE_PREFIXES) or words & _FILE_WORDS
            or name.endswith(_FILE_SUFFIXES)):
        return NAMES_FILE
    if (name in _REDIRECT_NAMES or name.startswith(_REDIRECT_PREFIXES) or words & _REDIRECT_WORDS
            or name.endswith(_REDIRECT_SUFFIXES)):
        return REDIRECTS
    if name.startswith(("NCCL_", "RCCL_")) or name in REVIEWED_TUNABLES:
        return None
    return UNREVIEWED


@dataclass(frozen=True, slots=True)
class EnvironmentPolicy:
    """The operator's grants: the names a platform file may set although `refusal` refuses
    them. Given on the command line (`--allow-env NAME`) or by a library caller, never read
    from a platform file. The default policy grants nothing."""

    allowed: frozenset[str] = frozenset()

    @classmethod
    def allowing(cls, names: Iterable[str]) -> EnvironmentPolicy:
        return cls(frozenset(names))

    def refusal(self, name: str) -> str | None:
        """Why `name` may not be set from a platform file under this policy, or None."""
        return None if name in self.allowed else refusal(name)


STRICT = EnvironmentPolicy()
"""The default: a platform file may set tunables only."""


def environment_limits(platform: Any, policy: EnvironmentPolicy = STRICT) -> list[Limit]:
    """The `environment:` entries of `platform` (a node `Platform` or a `Cluster`) that
    `policy` refuses, in the order written: what keeps launch.env, cluster.env and nccl.conf
    from being written."""
    limits = []
    for name in platform.environment:
        reason = policy.refusal(name)
        if reason is not None:
            limits.append(Limit(f"environment: {name} {reason}: a platform file may not set it",
                                (None, "environment", name),
                                "what a platform file sets runs as root on every node; set it in the job's own "
                                f"environment, or have the operator accept it for this run with --allow-env {name}"))
    return limits
