"""The checks of the spec language that are code, not types.

`hwspec.spec.models` (pydantic models, the one definition of the spec language) attaches these as
validators. This module imports no pydantic, only `pydantic_core.PydanticCustomError` for the
error it raises.

Every failure is a `PydanticCustomError` whose type starts with `hwspec` (or is `unit` in
`hwspec.spec.units`): `hwspec.spec.translate` prints its message verbatim, without pydantic's "got ...".
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticCustomError

from hwspec.source.expand import Substituted

MAX_CPU_ID = 65535
"""Largest logical CPU id (Linux's NR_CPUS tops out at 8192 today)."""
UNKNOWN = "unknown"
"""The spec word for a fact the platform's source does not give: `part: unknown` (with what was
observed in `override:`), `bus: unknown`, a socket's `memory: {capacity: unknown, bandwidth: unknown}`.
Rule HW603 says what to fill in and which outputs wait."""
MAX_CORES = 1024
"""Physical cores per socket."""
MAX_SOCKETS = 64
"""Sockets (NUMA nodes) per node: with MAX_CORES and 8 threads, a node has at most 524,288 CPUs."""
PCIE_GEN_RATES: dict[int, float] = {1: 2.5e9, 2: 5e9, 3: 8e9, 4: 16e9, 5: 32e9, 6: 64e9}
"""PCIe generation -> transfers per second per lane: the rates a link's `speed:` may give, and what
`hwspec.model.node.PcieLink` computes a bandwidth from."""


# ---------------------------------------------------------------- whole numbers


def _is_integer(value: object) -> bool:
    """An int, or a float with no fraction (JSON Schema's "integer" counts 12.0 as one)."""
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


def whole_number(value: object) -> object:
    """A whole number is written as a number: `2` (or `2.0`), not `"2"` or `true` (pydantic
    would coerce them; the JSON Schema does not, and neither does hwspec). The text of a
    `${...}` placeholder (`slot: ${g}`) is the one string accepted there. None passes (an
    optional field left empty). A whole float comes back as an int, so that `1e300` meets the
    field's bounds as the JSON Schema's integer 1e300 does, not pydantic's int size limit."""
    if value is not None and not _is_integer(value) and not isinstance(value, Substituted):
        if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            raise PydanticCustomError("hwspec_integer", f"'{value}' is a string: write the number without quotes ({value.strip()})")
        shown = f"'{value}'" if isinstance(value, str) else str(value).lower()
        raise PydanticCustomError("hwspec_integer", f"{shown} is not a whole number, e.g. 2")
    return int(value) if isinstance(value, float) else value


_NUMBER_TEXT = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


def real_number(value: object) -> object:
    """A plain number (a share, a ratio) is written as a number: `0.8` or `2`, not `"0.8"` or
    `true`, which pydantic would coerce and the JSON Schema refuses. The text of a `${...}`
    placeholder passes, as for whole numbers; other values go on to pydantic's own check."""
    if isinstance(value, Substituted):
        return value
    if isinstance(value, bool):
        raise PydanticCustomError("hwspec_number", f"{str(value).lower()} is not a number, e.g. 0.5")
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value):
        raise PydanticCustomError("hwspec_number", f"'{value}' is a string: write the number without quotes ({value.strip()})")
    if isinstance(value, str):
        raise PydanticCustomError("hwspec_number", f"'{value}' is not a number, e.g. 0.5")
    return value


# ---------------------------------------------------------------- text formats


def _format_error(value: str, what: str, example: str) -> PydanticCustomError:
    return PydanticCustomError("hwspec_format", f"'{value}' is not {what}, e.g. '{example}'")


# ID, PART_NAME, BUS_ID, OS_NAME and ENV_NAME are also the JSON Schema's patterns (`hwspec.spec.models`).
ID = re.compile(r"[a-z][a-z0-9_-]*")
PART_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
BUS_ID = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
"""A PCI bus id as the kernel and NCCL print it (lower case): `hwspec.formats.nccl_topology` holds a
topology file's bus ids to it too."""
OS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_CPU_LIST = re.compile(r"\d{1,6}(-\d{1,6})?(,\d{1,6}(-\d{1,6})?)*")
_IB_HCA = re.compile(r"[\^]?=?[A-Za-z0-9_.-]+(:[0-9]+)?(,[A-Za-z0-9_.-]+(:[0-9]+)?)*")
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
ENV_VALUE = re.compile(r"[A-Za-z0-9_./:,=@%+^-]*")


def check_id(value: str) -> str:
    """An entry id: `gpu0`, `sw-1`."""
    if not ID.fullmatch(value):
        raise _format_error(value, "an id (lower-case letters, digits, '-' and '_', starting with a letter)", "gpu0")
    return value


def check_device_bus_id(value: str) -> str:
    """A bus id (`check_bus_id`), or `unknown` where the source does not give one."""
    return value if value == "unknown" else check_bus_id(value)


def known_or_unknown(value: Any) -> str:
    """The union branch a value that may be the spec word `unknown` takes: "unknown" for exactly
    that word, "known" for anything else (which then gets its own type's message when wrong)."""
    return "unknown" if value == "unknown" else "known"


def check_catalogue_part_name(value: str) -> str:
    """A name a catalogue may give a part: not `unknown`, the spec word for an unidentified part."""
    if value == "unknown":
        raise ValueError("'unknown' is the spec word for a part the source does not identify: give the part another name")
    return value


def check_part_name(value: str) -> str:
    """A catalogue part name: `a100-sxm4-40gb`."""
    if not PART_NAME.fullmatch(value):
        raise _format_error(value, "a part name (lower-case letters, digits, '.', '-', '_')", "a100-sxm4-40gb")
    return value


def check_bus_id(value: str) -> str:
    """A PCI bus id in the kernel's (and NCCL's) lower-case `dddd:bb:dd.f` form."""
    if not BUS_ID.fullmatch(value):
        raise _format_error(value, "a PCI bus id in lower-case 'dddd:bb:dd.f' form, as the kernel and NCCL print it", "0000:17:00.0")
    return value


def check_os_name(value: str) -> str:
    """A device or interface name as the OS shows it (`mlx5_0`, `eth0`)."""
    if not OS_NAME.fullmatch(value):
        raise _format_error(value, "a device or interface name (letters, digits, '.', '-', '_'; at most 15)", "mlx5_0")
    return value


def check_cpu_list_syntax(value: str) -> str:
    """A CPU list's syntax: `0-27,112-139`."""
    if not _CPU_LIST.fullmatch(value):
        raise _format_error(value, "a CPU list such as '0-27,112-139'", "0-27,112-139")
    return value


def check_ib_hca(value: str) -> str:
    """NCCL_IB_HCA's syntax: optional '^' and '=', then device names with an optional ':port'."""
    if not _IB_HCA.fullmatch(value):
        raise _format_error(value, "an NCCL_IB_HCA filter such as 'mlx5', '^mlx5_an0' or '=mlx5_0:1,mlx5_1:1'", "mlx5")
    return value


def check_env_name(value: str) -> str:
    """An environment variable name: upper-case letters, digits, '_'."""
    if not ENV_NAME.fullmatch(value):
        raise _format_error(value, "an environment variable name (upper-case letters, digits, '_')", "NCCL_IB_TIMEOUT")
    return value


def env_value_text(value: object) -> object:
    """An environment value as text: booleans as 1/0, numbers as written, strings unchanged.
    A YAML number that is not finite (`.nan`, `.inf`, `1.0e+400`) is refused: no consumer reads
    Python's 'nan' or 'inf' as a number."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("hwspec_format", f"{value} is not a finite number: write the number the consumer "
                                                   "reads, or quote the text if you mean a word, e.g. '22'")
    return str(value) if isinstance(value, (int, float)) else value


def check_env_value(value: str) -> str:
    """A value env files and nccl.conf take verbatim (no spaces or quotes)."""
    if not ENV_VALUE.fullmatch(value):
        raise _format_error(value, "a value env files and nccl.conf take verbatim "
                                   "(letters, digits and _./:,=@%+^-; no spaces or quotes)", "22")
    return value


def off_is_off(value: object) -> object:
    """`severity: false` means off. (A bare `off` is the text off: the loader reads it as YAML
    1.2 does; the JSON Schema lists false among the severities.)"""
    return "off" if value is False else value


# ---------------------------------------------------------------- CPU counts


def cpu_count(value: str) -> int:
    """CPUs a (syntax-checked) CPU list names, without expanding it."""
    total = 0
    for chunk in value.split(","):
        lo, _, hi = chunk.partition("-")
        total += int(hi or lo) - int(lo) + 1
    return total


def check_cpu_list_size(value: str) -> str:
    """A CPU list whose size is computed before anything is expanded: every id at most
    MAX_CPU_ID, ranges ascending, at most MAX_CPU_ID + 1 CPUs in all (a 4 MiB file of
    `0-65535,` repeats would otherwise expand to billions)."""
    total = 0
    for chunk in value.split(","):
        lo, _, hi = chunk.partition("-")
        first, last = int(lo), int(hi or lo)
        if last > MAX_CPU_ID:
            raise PydanticCustomError("hwspec_format", f"CPU {last} is above the largest CPU id {MAX_CPU_ID}")
        if last < first:
            raise PydanticCustomError("hwspec_format", f"range '{chunk}' runs backwards: write the lower CPU first")
        total += last - first + 1
        if total > MAX_CPU_ID + 1:
            raise PydanticCustomError("hwspec_format", f"the list names more than {MAX_CPU_ID + 1} CPUs")
    return value


def cpus_bounded(sockets: list[Any]) -> list[Any]:
    """The CPUs a node's lists name, counted before any list is expanded: at most
    MAX_CPU_ID + 1 in all (64 sockets x 64 NUMA nodes x 65,536 CPUs would be 268M ids)."""
    lists = [s.cpus for s in sockets] + [n.cpus for s in sockets for n in (s.numa_nodes or ())]
    total = sum(cpu_count(text) for text in lists if text)
    if total > MAX_CPU_ID + 1:
        raise PydanticCustomError("hwspec_format", f"the CPU lists name {total} CPUs, more than {MAX_CPU_ID + 1}")
    return sockets


# ---------------------------------------------------------------- whole-entry checks (model validators)


def gen_or_speed(link: Any) -> Any:
    """A PCIe link gives its generation or its transfer rate (a PCIe one), exactly one."""
    if (link.gen is None) == (link.speed is None):
        raise PydanticCustomError("hwspec_link", "give either 'gen' (e.g. 4) or 'speed' (e.g. '16 GT/s'), not both or neither")
    if link.speed is not None and link.speed not in PCIE_GEN_RATES.values():
        raise PydanticCustomError("hwspec_link", "speed must be a PCIe rate: 2.5, 5, 8, 16, 32 or 64 GT/s")
    return link


def fabric_links_need_bandwidth(fabric: Any) -> Any:
    """A part with fabric links says what each carries; one without links (a PCIe-only card) may leave it out."""
    if fabric.links > 0 and fabric.link_bandwidth is None:
        raise PydanticCustomError("hwspec_fabric", "a part with fabric links states 'link_bandwidth' (per link, per direction)")
    return fabric


def width_zero_needs_physical(link: Any) -> Any:
    """A presented link of width 0 (a VM's passed-through device) states its physical link."""
    if link.width == 0 and link.physical is None:
        raise PydanticCustomError("hwspec_link", "a link of width 0 carries no bandwidth: add 'physical: {gen: .., width: ..}', "
                                                 "the link the device trains at")
    return link


def part_or_gen(bridge: Any) -> Any:
    """A bridge's own generation comes from its part or from `gen`, not both."""
    if bridge.part is not None and bridge.gen is not None:
        raise PydanticCustomError("hwspec_bridge_gen", "a bridge with a part takes its generation from the part: "
                                                       "write 'part' or 'gen', not both")
    return bridge


def one_numa_form(socket: Any) -> Any:
    """A socket is one NUMA node (`numa_node`, `memory` on it) or lists its `numa_nodes`."""
    if socket.numa_nodes is not None:
        given = [key for key in ("numa_node", "cpus", "memory") if getattr(socket, key) is not None]
        if given:
            raise PydanticCustomError("hwspec_numa", "a socket with 'numa_nodes' gives {keys} per NUMA node, not on the socket",
                                      {"keys": ", ".join(given)})
    elif socket.numa_node is None or socket.memory is None:
        raise PydanticCustomError("hwspec_numa", "a socket needs 'numa_node' and 'memory' (one NUMA node), "
                                                 "or 'numa_nodes' (several)")
    return socket


def own_or_shared_memory(memory: Any) -> Any:
    """A socket's memory is its own (`capacity` and `bandwidth`) or a GPU's HBM (`shared_with`), never both."""
    given = [key for key in ("capacity", "bandwidth") if getattr(memory, key) is not None]
    if memory.shared_with is not None and given:
        raise PydanticCustomError("hwspec_memory", "memory shared with {gpu} is that GPU's HBM: its capacity and bandwidth "
                                                   "are the GPU part's, so do not give {keys} here (one pool, counted once)",
                                  {"gpu": memory.shared_with, "keys": " and ".join(given)})
    if memory.shared_with is None and len(given) < 2:
        raise PydanticCustomError("hwspec_memory", "give the memory's 'capacity' and 'bandwidth', or 'shared_with: <gpu>' "
                                                   "when it is a GPU's HBM (an APU such as MI300A)")
    return memory


def gpu_or_gpus(nic: Any) -> Any:
    """A NIC names the GPUs it serves once: `gpu` (one) or `gpus` (several, each once)."""
    if nic.gpu is not None and nic.gpus is not None:
        raise PydanticCustomError("hwspec_nic_gpus", "give either 'gpu' (one GPU) or 'gpus' (a list), not both")
    if nic.gpus is not None:
        repeated = sorted({g for g in nic.gpus if nic.gpus.count(g) > 1})
        if repeated:
            raise PydanticCustomError("hwspec_nic_gpus", "'gpus' names {ids} more than once", {"ids": ", ".join(repeated)})
    return nic


def card_ports(nic: Any) -> Any:
    """A card with `ports:` names its port, device, interface and GPUs per port, never on the
    card; its port numbers (written, or the position) are distinct."""
    if nic.ports is None:
        return nic
    given = [name for name in ("gpu", "gpus", "device", "interface") if getattr(nic, name) is not None]
    if "port" in nic.model_fields_set:
        given.append("port")
    if given:
        raise PydanticCustomError("hwspec_nic_ports", "with 'ports', give {fields} in each port, not on the card",
                                  {"fields": ", ".join(repr(f) for f in given)})
    card_bus = nic.pcie.bus if BUS_ID.fullmatch(str(nic.pcie.bus)) else None
    for p in nic.ports:
        if p.bus is not None and card_bus is not None and p.bus.rsplit(".", 1)[0] != card_bus.rsplit(".", 1)[0]:
            raise PydanticCustomError("hwspec_nic_ports", "port {port}'s bus {bus} is not a function of the card's "
                                      "device {device} (its ports are functions .0, .1, ... of one device)",
                                      {"port": p.id, "bus": p.bus, "device": card_bus.rsplit(".", 1)[0]})
    numbers = [p.port if p.port is not None else i + 1 for i, p in enumerate(nic.ports)]
    repeated = sorted({n for n in numbers if numbers.count(n) > 1})
    if repeated:
        raise PydanticCustomError("hwspec_nic_ports", "port {numbers} is listed more than once",
                                  {"numbers": ", ".join(str(n) for n in repeated)})
    return nic


def switches_with_nvswitch_wiring(board: Any) -> Any:
    """`wiring: nvswitch` and an `nvswitches` list come together; `nvswitch_generation` needs them."""
    if (board.wiring == "nvswitch") != (board.nvswitches is not None):
        raise PydanticCustomError("hwspec_baseboard", "'wiring: nvswitch' and 'nvswitches' go together: list the "
                                                      "NVSwitch chips and each GPU's links to them")
    if board.nvswitch_generation is not None and board.wiring != "nvswitch":
        raise PydanticCustomError("hwspec_baseboard", "'nvswitch_generation' is for 'wiring: nvswitch': this baseboard "
                                                      "has no NVSwitch chips")
    return board


# ---------------------------------------------------------------- methods of validated entries


class LinkMethods:
    """What a validated PCIe link (`PhysicalLink`, `PcieLink`) computes from its fields."""

    __slots__ = ()

    if TYPE_CHECKING:  # the fields of the models that mix this in
        gen: int | None
        speed: float | None
        width: int

    @property
    def generation(self) -> int:
        """The PCIe generation, given as `gen` or derived from `speed` (a PCIe rate)."""
        gen: int | None = self.gen
        if gen is not None:
            return gen
        speed = self.speed
        return next(g for g, rate in PCIE_GEN_RATES.items() if rate == speed)

