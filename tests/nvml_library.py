"""A stand-in for `libnvidia-ml.so.1` under the real nvidia-ml-py binding.

Only the C library is replaced: `install` puts a `FakeNvmlLibrary` where the binding keeps the
library it loaded (`pynvml.nvmlLib`) and makes its loader (`pynvml._LoadNvmlLibrary`) a no-op.
Everything above it is the installed binding as users run it: its function wrappers, its
ctypes structures and its NVMLError classes.

Each NVML function the binding looks up is a real C function pointer (ctypes CFUNCTYPE) with
the C prototype of nvml.h, so the binding's own marshalling runs (`byref`, string buffers,
handles) and the stand-in fills the out-arguments through their pointers, in nvml.h's layouts
(written here from the header, not taken from the binding): `nvmlPciInfo_t` (busIdLegacy[16],
domain, bus, device, pciDeviceId, pciSubSystemId, busId[32]) and `nvmlGpuFabricInfo_t`
(clusterUuid[16], status, cliqueId, then `nvmlGpuFabricState_t`, an unsigned char).

A node is NVML's answers as `hwspec capture` saves them (`nvml.json`): the GPUs' bus ids,
names, NVLinks (link number, active, remote bus id) and fabric. Faults are NVML's return codes
per function (`errors`), or a library that fails in a way no NVML call returns (`broken`).
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, INSUFFICIENT_SIZE, GPU_IS_LOST, UNKNOWN = 0, 2, 3, 7, 15, 999
FIRST_HANDLE = 0x1000
"""Handles are opaque pointers to the caller; these are never dereferenced."""


class PciInfo(ctypes.Structure):
    """nvml.h `nvmlPciInfo_t`."""

    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]


class GpuFabricInfo(ctypes.Structure):
    """nvml.h `nvmlGpuFabricInfo_t` (the state is an unsigned char there)."""

    _fields_ = [("clusterUuid", ctypes.c_ubyte * 16), ("status", ctypes.c_int), ("cliqueId", ctypes.c_uint),
                ("state", ctypes.c_ubyte)]


FABRIC_STATE = {"Not Supported": 0, "Not Started": 1, "In Progress": 2, "Completed": 3}
VOID, UINT, INT = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int


class ErrorString:
    """`nvmlErrorString`: the binding sets `restype = c_char_p` on it and returns what it gives."""

    restype: Any = None

    def __call__(self, code: int) -> bytes:
        return {GPU_IS_LOST: b"GPU is lost", UNKNOWN: b"Unknown Error"}.get(code, b"Unknown Error")


class FakeNvmlLibrary:
    """libnvidia-ml.so.1 for the GPUs of `answers` (nvml.json's data). `errors` maps a C
    function's name to the return code it gives for every GPU (or `{name: {bus: code}}` for
    some); a name in `broken` makes looking the function up fail with RuntimeError, as no
    NVML call does. `calls` records each call's function name."""

    def __init__(self, answers: dict[str, Any], errors: dict[str, Any] | None = None, broken: tuple[str, ...] = ()):
        self.gpus = answers["gpus"]
        self.errors = errors or {}
        self.broken = broken
        self.calls: list[str] = []
        self.error_string = ErrorString()
        prototypes: dict[str, tuple[tuple[Any, ...], Callable[..., int]]] = {
            "nvmlInitWithFlags": ((UINT,), lambda flags: SUCCESS),
            "nvmlInit_v2": ((), lambda: SUCCESS),
            "nvmlShutdown": ((), lambda: SUCCESS),
            "nvmlDeviceGetCount_v2": ((VOID,), self._count),
            "nvmlDeviceGetHandleByIndex_v2": ((UINT, VOID), self._handle),
            "nvmlDeviceGetName": ((VOID, VOID, UINT), self._name),
            "nvmlDeviceGetPciInfo_v3": ((VOID, VOID), self._pci_info),
            "nvmlDeviceGetNvLinkState": ((VOID, UINT, VOID), self._link_state),
            "nvmlDeviceGetNvLinkRemotePciInfo_v2": ((VOID, UINT, VOID), self._remote_pci_info),
            "nvmlDeviceGetGpuFabricInfo": ((VOID, VOID), self._fabric_info),
        }
        # kept referenced: a C function pointer made from a Python callable lives as long as it
        self.functions = {name: ctypes.CFUNCTYPE(INT, *args)(self._recorded(name, body))
                          for name, (args, body) in prototypes.items()}

    def __getattr__(self, name: str) -> Any:
        """What dlsym would give the binding: the function, or AttributeError (the binding's
        FUNCTION_NOT_FOUND) for one this library does not export."""
        if name in self.broken:
            raise RuntimeError(f"{name}: the library's symbol table is unreadable")
        if name == "nvmlErrorString":
            return self.error_string
        try:
            return self.functions[name]
        except KeyError:
            raise AttributeError(name) from None

    def _recorded(self, name: str, body: Callable[..., int]) -> Callable[..., int]:
        def call(*args: Any) -> int:
            self.calls.append(name)
            code = self._error(name, args)
            return code if code is not None else body(*args)
        return call

    def _error(self, name: str, args: tuple[Any, ...]) -> int | None:
        error = self.errors.get(name)
        if isinstance(error, dict):
            gpu = self._gpu(args[0]) if args and args[0] is not None and name.startswith("nvmlDevice") else None
            return error.get(gpu["bus"]) if gpu is not None else None
        return error

    def _gpu(self, handle: int | None) -> dict[str, Any] | None:
        index = (handle or 0) - FIRST_HANDLE
        return self.gpus[index] if 0 <= index < len(self.gpus) else None

    def _count(self, count: int) -> int:
        ctypes.c_uint.from_address(count).value = len(self.gpus)
        return SUCCESS

    def _handle(self, index: int, device: int) -> int:
        if index >= len(self.gpus):
            return INVALID_ARGUMENT
        ctypes.c_void_p.from_address(device).value = FIRST_HANDLE + index
        return SUCCESS

    def _name(self, handle: int, buffer: int, length: int) -> int:
        gpu = self._gpu(handle)
        if gpu is None:
            return INVALID_ARGUMENT
        name = gpu["name"].encode() + b"\0"
        if len(name) > length:
            return INSUFFICIENT_SIZE
        ctypes.memmove(buffer, name, len(name))
        return SUCCESS

    def _pci_info(self, handle: int, info: int) -> int:
        gpu = self._gpu(handle)
        if gpu is None:
            return INVALID_ARGUMENT
        fill_pci_info(info, gpu["bus"])
        return SUCCESS

    def _link(self, handle: int, link: int) -> dict[str, Any] | None:
        gpu = self._gpu(handle)
        return next((entry for entry in (gpu or {}).get("nvlinks", ()) if entry["link"] == link), None)

    def _link_state(self, handle: int, link: int, active: int) -> int:
        entry = self._link(handle, link)
        if entry is None:  # a link the GPU does not have (H200 in a VM: every one)
            return NOT_SUPPORTED if self._gpu(handle) is not None else INVALID_ARGUMENT
        ctypes.c_int.from_address(active).value = 1 if entry["active"] else 0
        return SUCCESS

    def _remote_pci_info(self, handle: int, link: int, info: int) -> int:
        entry = self._link(handle, link)
        if entry is None or not entry["active"] or entry.get("remote") is None:
            return NOT_SUPPORTED
        fill_pci_info(info, entry["remote"])
        return SUCCESS

    def _fabric_info(self, handle: int, info: int) -> int:
        gpu = self._gpu(handle)
        if gpu is None:
            return INVALID_ARGUMENT
        fabric = gpu.get("fabric")
        if fabric is None:  # no multi-node NVLink fabric on this GPU or node
            return NOT_SUPPORTED
        struct = GpuFabricInfo.from_address(info)
        struct.clusterUuid[:] = list(bytes.fromhex(fabric["cluster_uuid"].replace("-", "")))
        struct.status = SUCCESS
        struct.cliqueId = fabric["clique_id"]
        struct.state = FABRIC_STATE[fabric["state"]]
        return SUCCESS


def fill_pci_info(address: int, bus: str) -> None:
    """Write `bus` (0000:07:00.0) into the nvmlPciInfo_t at `address`, as NVML writes it
    (an 8-digit domain, upper-case hex)."""
    domain, bus_number, rest = bus.split(":")
    device, function = rest.split(".")
    info = PciInfo.from_address(address)
    info.busId = f"{int(domain, 16):08X}:{int(bus_number, 16):02X}:{int(device, 16):02X}.{function}".encode()
    info.busIdLegacy = f"{int(domain, 16):04X}:{int(bus_number, 16):02X}:{int(device, 16):02X}.{function}".encode()
    info.domain, info.bus, info.device = int(domain, 16), int(bus_number, 16), int(device, 16)


def answers_of(tree: Path) -> dict[str, Any]:
    """NVML's answers saved in a captured tree, as the stand-in's node."""
    return json.loads((tree / "nvml.json").read_text())


@contextmanager
def installed(pynvml: Any, library: FakeNvmlLibrary) -> Iterator[FakeNvmlLibrary]:
    """`library` as the binding's C library while the block runs; the binding as it was after."""
    saved = pynvml.nvmlLib, pynvml._LoadNvmlLibrary, dict(pynvml._nvmlGetFunctionPointer_cache)
    pynvml.nvmlLib, pynvml._LoadNvmlLibrary = library, lambda: None
    pynvml._nvmlGetFunctionPointer_cache.clear()
    try:
        yield library
    finally:
        pynvml.nvmlLib, pynvml._LoadNvmlLibrary = saved[0], saved[1]
        pynvml._nvmlGetFunctionPointer_cache.clear()
        pynvml._nvmlGetFunctionPointer_cache.update(saved[2])
