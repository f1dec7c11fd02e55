"""What the generators cannot write, stated once, below both the rules and the generators.

Each generator states what keeps it from writing a platform's files as a list of `Limit`s, in one
function: `settings_limits` (nccl.conf, launch.env), `bind_limits` (bind.sh), `host_limits`
(every file that names a cluster's hosts) and `cluster_limits` (a cluster's launch and
acceptance files) here, `topology_limits` (nccl-topo.xml) and `rccl_limits` (rccl-topo.xml) in
`hwspec.formats.nccl_tree`, beside the tree they measure. The generation rules
(rules/builtin/generation.py, rccl.py) report those lists as located findings during `validate`,
and the generators refuse with the same lists (`hwspec.generate.engine.refuse`, which raises
`GenerationError`), so `validate` clean means `generate` succeeds, and `validate` imports no
generator code.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hwspec.formats.transports import facts, ib_verbs, interface_use
from hwspec.model.node import Platform
from hwspec.text import visible

if TYPE_CHECKING:
    from hwspec.model.cluster import Cluster

SAFE_VALUE = re.compile(r"[A-Za-z0-9_./:,=@%+^-]*")
"""Characters allowed in env/conf values: no quoting is needed for bash, docker --env-file
or NCCL's conf reader. Platform names are validated to this set at load time."""

MAX_IB_HCAS = 32
"""NCCL reads at most 32 entries from NCCL_IB_HCA."""


class GenerationError(Exception):
    """A generator could not produce valid output (message names the platform and file)."""


@dataclass(frozen=True, slots=True)
class Limit:
    """Something a generator cannot write for a platform: `message`, where it is in the
    platform file (`at` as for `ctx.finding`: entity id or None, then keys) and a `hint`.

    Each generator states its limits in one function (e.g. `nccl_tree.topology_limits`); the
    generation rules (rules/builtin/generation.py) report them as located findings during
    `validate`, and the generator refuses through `hwspec.generate.engine.refuse` with the same
    list, so `validate` clean means `generate` succeeds."""

    message: str
    at: tuple[str | int | None, ...] = (None,)
    hint: str | None = None
    reported_by: str = ""
    """A rule that already reports this fact where it belongs (HW101 for a device outside the
    PCIe tree): the generation rules leave it to that rule, which cannot be switched off either."""


NCCL_CONF_MAX = 1023
"""NCCL copies at most 1023 characters of a name and of a value of nccl.conf (its line buffer)."""


def settings_limits(platform: Platform) -> list[Limit]:
    """What keeps the NCCL settings (nccl.conf, launch.env) from being written: more named
    backend RDMA NICs than NCCL_IB_HCA can hold (without a declared `backend.ib_hca` filter),
    and an interface list (NCCL_SOCKET_IFNAME, a net plugin's data interfaces) longer than the
    NCCL_CONF_MAX characters NCCL reads of a value."""
    if not platform.gpus:
        return []
    limits = _interface_list_limits(platform)
    backend = platform.backend
    if backend is None or not ib_verbs(backend.transport) or backend.ib_hca is not None:
        return limits
    hcas = [n for n in platform.backend_nics if ib_verbs(n.transport)]
    if all(n.device for n in hcas) and len(hcas) > MAX_IB_HCAS:
        limits.insert(0, Limit(f"{len(hcas)} backend NICs; NCCL_IB_HCA takes at most {MAX_IB_HCAS}", (hcas[MAX_IB_HCAS].id,),
                               f"keep at most {MAX_IB_HCAS} NICs in the backend role"))
    return limits


def _interface_list_limits(platform: Platform) -> list[Limit]:
    """The interface lists the NCCL settings write (as `hwspec.generate.launch` chooses them:
    NCCL_SOCKET_IFNAME's `=a,b,...` when every NIC of its list names its interface, a net
    plugin's data interfaces) that are longer than NCCL_CONF_MAX, each at the NIC where its
    list passes the limit. A name the platform's `environment:` sets itself is not generated."""
    backend = platform.backend
    net = facts(backend.transport) if backend is not None else None
    if net is not None and net.socket_on_backend:
        socket = list(platform.collective_nics)
    else:
        socket = [n for n in platform.host_nics if n.interface or interface_use(n.transport, n.role) == "socket"]
    lists: list[tuple[str, str, list[tuple[str, str]]]] = []  # (variable, prefix, [(NIC id, interface)]) of each list
    named = [(n.id, n.interface) for n in socket if n.interface]
    if socket and len(named) == len(socket):
        lists.append(("NCCL_SOCKET_IFNAME", "=", named))
    if net is not None and net.data_ifname is not None:
        lists.append((net.data_ifname, "", [(n.id, n.interface) for n in platform.backend_nics if n.interface]))
    limits = []
    for name, prefix, nics in lists:
        if name in platform.environment:
            continue
        total = len(prefix) + sum(len(interface) for _, interface in nics) + len(nics) - 1
        length = len(prefix) - 1
        for nic, interface in nics:
            length += 1 + len(interface)
            if length > NCCL_CONF_MAX:
                limits.append(Limit(f"{name} would list {len(nics)} interfaces in {total} characters; NCCL reads at most "
                                    f"{NCCL_CONF_MAX} of a value, and the list passes them at {nic}", (nic, "interface"),
                                    f"use shorter interface names, or set {name} under environment: as a prefix filter "
                                    "(e.g. 'ens') that NCCL matches itself"))
                break
    return limits


def bind_limits(platform: Platform) -> list[Limit]:
    """What keeps bind.sh from being written: a GPU with no NUMA node to bind its rank to
    (reported during validate by HW101: the GPU is outside every socket's PCIe tree)."""
    return [Limit(f"{g.id} has no NUMA node for bind.sh to bind its rank to (it reaches no CPU socket)",
                  (g.id, "pcie", "upstream"), "attach it under a socket's PCIe tree", reported_by="HW101")
            for g in platform.gpus if g.numa_node is None]


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
"""Dotted-quad IPv4 exactly as ipaddress accepts it (no leading zeros, 0-255)."""
HOST_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
"""A host name every consumer of the generated files takes: an RFC 1123 DNS label in lower case
(lower-case letters, digits and '-', starting and ending with a letter or digit, 1-63 characters).
Kubernetes is the strictest: `kubernetes/label-nodes.sh` names nodes by it, and a node name is
an RFC 1123 subdomain in lower case; hostfiles and Slurm's NodeName take short host names, so no
'.' either. It keeps `,[]` out of hostlists and a leading '-' (an option: `kubectl label --all`)
out of command lines."""
HOST_NAME_SYNTAX = "lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63"
HOST_NAME_LINES = re.compile(rf"^{HOST_NAME.pattern}$", re.MULTILINE)
IPV4_LINES = re.compile(rf"^{IPV4.pattern}$", re.MULTILINE)


def all_lines(pattern: re.Pattern[str], values: list[str]) -> bool:
    """Every value is a whole line `pattern` matches (it matches no line break), in one call.
    (Counting whole-line matches, not one match of the whole text repeating a line pattern:
    that one keeps a backtracking state per line and is several times slower on 16,384 names.)"""
    if not values:
        return True
    text = "\n".join(values)
    return text.count("\n") == len(values) - 1 and len(pattern.findall(text)) == len(values)


def host_name_fault(name: str) -> str:
    """What keeps `name` from being a host name (`HOST_NAME`), in a few words."""
    if not name:
        return "it is empty"
    if len(name) > 63:
        return f"it has {len(name)} characters, more than 63"
    if any(c.isascii() and c.isupper() for c in name):
        return "it has upper-case letters"
    others = sorted({c for c in name if not (c.isascii() and (c.islower() or c.isdigit() or c == "-"))})
    if others:
        return "it has " + ", ".join(f"'{visible(c)}'" for c in others)
    return "it starts with '-'" if name.startswith("-") else "it ends with '-'"


def is_ip_address(text: str) -> bool:
    """Whether `text` is an IPv4 or IPv6 address as `ipaddress` reads it (an IPv6 zone included)."""
    if IPV4.fullmatch(text):  # the common case without ipaddress's object
        return True
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def host_limits(cluster: Cluster) -> list[Limit]:
    """What keeps a cluster's hosts from being written where its writers put them unquoted
    (label-nodes.sh's kubectl arguments, slurm.conf's NodeName= and NodeAddr=, topology files,
    hostfile and hosts.tsv, the acceptance scripts): a host name that is not `HOST_NAME` (an
    option `--all`, a label `a=b`), an address that is not an IP address (`10.0.0.1,10.0.0.2`
    is two to Slurm), or one with a character a hostfile line cannot carry (an IPv6 zone is any
    text). Every such writer refuses with this list, whatever ran before it; HW805 reports the
    names and addresses, HW903 the characters. The first offender of each kind per group,
    decided for all of a group's hosts at once in the common case."""
    limits = []
    for index, group in enumerate(cluster.groups):
        names, addresses = list(group.hostnames), list(group.addresses or ())
        if not all_lines(HOST_NAME_LINES, names):
            bad = next(name for name in names if not HOST_NAME.fullmatch(name))
            limits.append(Limit(f"nodes[{index}]: hostname '{visible(bad)}' is not a host name ({HOST_NAME_SYNTAX}): "
                                f"{host_name_fault(bad)}", ("nodes", index, "hostname"), reported_by="HW805"))
        if all_lines(IPV4_LINES, addresses):
            continue
        wrong = next((address for address in addresses if not is_ip_address(address)), None)
        if wrong is not None:
            limits.append(Limit(f"nodes[{index}]: address '{visible(wrong)}' is not an IP address", ("nodes", index, "address"),
                                reported_by="HW805"))
        unsafe = next((address for address in addresses if not SAFE_VALUE.fullmatch(address) or not address), None)
        if unsafe is not None and unsafe != wrong:
            limits.append(Limit(f"nodes[{index}]: address {unsafe!r} cannot be written to a hostfile: only letters, "
                                "digits and _./:,=@%+^- are allowed", ("nodes", index, "address"),
                                "an IPv6 zone is an interface name, e.g. %eth0"))
    return limits


def cluster_limits(cluster: Cluster) -> list[Limit]:
    """What keeps a cluster's own launch and acceptance files (cluster.env, node-launch.sh,
    train.sbatch, acceptance/) from being written: node platforms with different GPU counts
    (torchrun takes one LOCAL_WORLD_SIZE, an acceptance run one rank count per node: HW810
    reports it) or with different collective libraries (one job's ranks, NCCL's or RCCL's,
    cannot span both). The first node group that differs from the first one, for each."""
    limits: list[Limit] = []
    groups = cluster.groups
    first = groups[0] if groups else None
    for index, group in enumerate(groups[1:], start=1):
        if first is not None and group.gpus_per_node != first.gpus_per_node:
            limits.append(Limit(f"nodes[{index}] ({group.platform.name}) has {group.gpus_per_node} GPUs per node, "
                                f"nodes[0] ({first.platform.name}) has {first.gpus_per_node}", ("nodes", index, "platform"),
                                "split the cluster, or use node platforms with equal GPU counts", reported_by="HW810"))
            break
    libraries = [collective_library(group.platform).upper() for group in groups]
    other = next((index for index, library in enumerate(libraries) if library != libraries[0]), None)
    if first is not None and other is not None:
        limits.append(Limit(f"nodes[{other}] ({groups[other].platform.name}) runs {libraries[other]}, nodes[0] "
                            f"({first.platform.name}) {libraries[0]}: one job's ranks, and the acceptance runs, cannot "
                            "span both", ("nodes", other, "platform"), "split the cluster by GPU vendor"))
    return limits


def collective_library(platform: Platform) -> str:
    """"rccl" when the node's GPUs are AMD's (RCCL reads the topology file), else "nccl"."""
    return "rccl" if platform.gpus and any(g.vendor == "amd" for g in platform.gpus) else "nccl"


def k8s_name(name: str) -> str:
    """A hwspec id (`[a-z][a-z0-9_-]*`, up to 64) as a Kubernetes object name and label value:
    '_' becomes '-', at most 63 characters, ending in a letter or digit. Two ids may become one
    name (`zion_ex`, `zion-ex`): rule HW813 finds that for a cluster's node platforms."""
    return re.sub(r"[^a-z0-9-]", "-", name)[:63].rstrip("-")

