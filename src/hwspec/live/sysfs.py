"""This machine read directly from sysfs and procfs (`hwspec import --live`, `diff --live`) -> Machine.

What it reads, all under one root (`/`, or a tree `hwspec capture` saved):

    sys/bus/pci/devices/*            each PCI function: class, vendor/device and subsystem ids,
                                     current/max link speed and width, numa_node, local_cpulist;
                                     its real path gives the chain of bridges above it
    sys/class/infiniband/*/ports/*   RDMA devices and their ports: state, rate
    sys/class/net/*                  network interfaces: the PCI function, operstate, speed
    sys/devices/system/node/node*    NUMA nodes: cpulist, meminfo's MemTotal
    proc/cpuinfo                     the CPU: vendor, family, model, model name, package

The tree is hostile when it is a capture: every symbolic link is resolved component by
component inside the root (a link that climbs out of it, or loops, is an I101 at the link),
only regular files are opened (a FIFO or device node is refused by its type, never opened),
each through the directory handle its walk opened (`Tree`), and read up to `MAX_ATTRIBUTE_BYTES`,
directories are listed up to `MAX_ENTRIES`, and a name that is not printable ASCII is left
out with a warning. A real sysfs has none of these, so each makes the tree unusable (exit 2)
except the names. An attribute that is absent is simply not known (a virtual NIC has no link
speed). Every element is located at the file it was read from.

A capture copied by a tool that does not keep symbolic links (git with core.symlinks=false,
zip, some artifact stores) holds each link as a small regular file whose text is the link's
target. Under a captured root (not `/`), such a file where a link belongs (a path component
with more below it, or what a caller resolves as a link) whose whole text is a relative path
(`../..`-first, sysfs's own form) is read as that link, with a link's checks.

Links: a GPU at rest lowers its PCIe generation to save power, so a GPU's `link` is its
maximum generation at its current width (`current_link` keeps what it trained at when read);
every other device's `link` is its current speed and width.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from hwspec.diagnostics import Code, Location, Severity, display_path, os_reason
from hwspec.live.observed import (
    NUMA_PREFIX,
    PCIE_SPEED_STRINGS,
    Bridge,
    Gpu,
    Link,
    Machine,
    Nic,
    NicPort,
    NumaNode,
    cpu_vendor,
    is_accelerator,
    is_decimal,
    refuse_oversized,
    too_many_digits,
)
from hwspec.live.topo_matrix import parse_cpu_list
from hwspec.text import visible

MAX_ATTRIBUTE_BYTES = 4 * 1024 * 1024
"""The largest file read: /proc/cpuinfo of a 512-CPU node is about 1 MiB; sysfs attributes are a page."""
MAX_ENTRIES = 65_536
"""The most entries one directory may list (PCI functions with SR-IOV run to a few thousand)."""
MAX_LINK_HOPS = 40
"""Symbolic links followed while resolving one path, as the kernel's ELOOP limit."""
FLATTENED_LINK = re.compile(r"(?:\.\./)+[A-Za-z0-9_.:+-]+(?:/[A-Za-z0-9_.:+-]+)*")
"""The whole text of a link written as a file (see the module docstring): sysfs's relative form."""
MAX_FLATTENED_LINK_BYTES = 4096
"""PATH_MAX: no link target is longer."""

UNTRAINED_WIDTHS = (0, 63)
"""current_link_width of a link that is down (0) or never trained (63: the field's all-ones)."""
BUS_ID = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
NUMA_DIR = re.compile(r"node(\d{1,5})")
RATE = re.compile(r"(\d{1,6}(?:\.\d{1,3})?) Gb/sec")
"""An RDMA port's rate, `200 Gb/sec (4X HDR)`."""
FILES_OF_EVERY_FUNCTION = frozenset({"class", "vendor", "device", "numa_node", "current_link_speed",
                                     "current_link_width", "driver"})
"""What the reader reads of every PCI function, whatever its class (`driver`: a link)."""
MOST_FILES_OF_A_FUNCTION = 16
"""The files and links one function's reading keeps, at most, links within its path aside: its
link, those above, max link speed and width, subsystem ids, local_cpulist, product_name."""
PCI_DEVICES, INFINIBAND, NET, NODES, CPUINFO = (
    "sys/bus/pci/devices", "sys/class/infiniband", "sys/class/net", "sys/devices/system/node", "proc/cpuinfo")


class TreeError(Exception):
    """A tree that is not a sysfs: `where` (the link or file) and why."""

    def __init__(self, where: Location, message: str):
        super().__init__(message)
        self.where, self.message = where, message


MAX_OPEN_DIRECTORIES = 256
"""Directory handles a tree keeps open (the most recently opened): the PCI hierarchy's few dozen
levels and their siblings, so that each read opens only its own file."""

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.ENODEV, errno.ENXIO, errno.EIO)


@dataclass
class Tree:
    """A sysfs/procfs root, read with bounds. Paths are relative to the root, `/`-separated.

    Every path is walked through opened directory handles (`openat` with O_NOFOLLOW, one
    component at a time, each directory opened once): a link is read where the walk found it,
    and a file is read from the directory handle its check used, so a directory swapped for a
    link while the tree is read is refused ("changed while it was read"), never followed. A
    file's type is checked before it is opened (`fstatat` without following, then `fstat` of
    the opened file is the same inode): a FIFO or a device node is never opened.

    With `record`, every directory listed, link followed and file read is kept (`dirs`,
    `links`, `files`), so that `hwspec capture` saves exactly what was read; a link is kept only
    once the whole path it is on resolved inside the root, so a link the reader refused (out of
    the root, a loop: a GPU's `driver`, whose refusal only leaves the driver unknown) is never
    saved, and no saved link leads out of the capture. With `max_files`, recording or not,
    reading stops with a TreeError once more files and links would be read than that (a
    directory whose entries each cost `each` of them is refused as soon as it is listed, and
    the reader counts what it will read with `count_present` before reading it): a tree is read
    within what a capture of it could hold, and refused as early.

    A component already opened as a directory (its handle held) is walked through that handle
    without asking again whether it is a link: what is read under it is read through it."""

    root: Path
    record: bool = False
    max_files: int | None = None
    dirs: set[str] = field(default_factory=set)
    links: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shown = display_path(self.root)
        self.shown = "" if shown == "/" else shown.rstrip("/")
        self.captured = self.root.resolve() != Path("/")
        self._fds: dict[str, int] = {}
        self._resolved: dict[str, str] = {}
        self._read: set[str] = set()
        """The files and links read, by path, when they are counted but not recorded."""

    def close(self) -> None:
        """Close the directory handles (reading again opens them, and resolves paths, again)."""
        fds, self._fds, self._resolved = self._fds, {}, {}
        for fd in fds.values():
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def where(self, rel: str) -> Location:
        return Location(f"{self.shown}/{rel}", 1)

    def _changed(self, rel: str) -> TreeError:
        return TreeError(self.where(rel), "changed while it was read (a directory became a link): not a sysfs tree")

    def _dir_fd(self, path: str) -> int:
        """The open handle of resolved directory `path` ("" for the root), each component opened
        under its parent's handle without following a link. Raises OSError as `openat` does."""
        fd = self._fds.get(path)
        if fd is not None:
            return fd
        if not path:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            parent, _, name = path.rpartition("/")
            parent_fd = self._dir_fd(parent)
            try:
                fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=parent_fd)
            except NotADirectoryError:  # what O_NOFOLLOW|O_DIRECTORY says of a link: a directory became one
                if stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path) from None
                raise
        if len(self._fds) >= MAX_OPEN_DIRECTORIES:
            os.close(self._fds.pop(next(iter(self._fds))))
        self._fds[path] = fd
        return fd

    def resolve(self, rel: str, final_link: bool = True) -> str:
        """`rel` with every symbolic link resolved inside the root (an absolute target is taken
        from the root, as chroot does). Raises TreeError for a link out of the root or a loop.
        A directory's resolution is kept: the files of one directory resolve it once.
        `final_link`: the last component may be a link written as a file (module docstring)."""
        parts = [c for c in rel.split("/") if c]
        if len(parts) < 2:
            return self._walk(rel, [], parts, final_link)
        parent = "/".join(parts[:-1])
        start = self._resolved.get(parent)
        if start is None:
            start = self._resolved[parent] = self.resolve(parent)
        return self._walk(rel, start.split("/") if start else [], parts[-1:], final_link)

    def _walk(self, rel: str, resolved: list[str], parts: list[str], final_link: bool = True) -> str:
        """`resolved` (components, links resolved) followed by `parts`, resolved in turn."""
        pending = list(reversed(parts))
        hops = 0
        followed: dict[str, str] = {}  # recorded only once the whole path resolved inside the root
        while pending:
            part = pending.pop()
            if part == ".":
                continue
            if part == "..":
                if not resolved:
                    raise TreeError(self.where(rel), "a symbolic link leads out of the root: not a sysfs tree")
                resolved.pop()
                continue
            candidate = "/".join([*resolved, part])
            if candidate in self._fds:  # opened as a directory, without following: not a link, and read through that handle
                resolved.append(part)
                continue
            try:
                target = os.readlink(part, dir_fd=self._dir_fd("/".join(resolved)))
            except OSError as exc:
                if exc.errno == errno.ENAMETOOLONG:
                    raise TreeError(self.where(candidate), f"cannot read: {os_reason(exc)}") from exc
                if exc.errno == errno.ELOOP:
                    raise self._changed(candidate) from exc
                if exc.errno not in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
                    raise TreeError(self.where(candidate), f"cannot read: {os_reason(exc)}") from exc
                flattened = self.flattened_link(candidate) if exc.errno == errno.EINVAL and (pending or final_link) else None
                if flattened is None:
                    resolved.append(part)  # not a link (or absent: reading it says so)
                    continue
                target = flattened
            hops += 1
            if hops > MAX_LINK_HOPS:
                raise TreeError(self.where(rel), "too many levels of symbolic links: not a sysfs tree")
            followed[candidate] = target
            if target.startswith("/"):
                resolved = []
            pending.extend(c for c in reversed(target.split("/")) if c)
        if self.record:
            self.links.update(followed)
        elif self.max_files is not None:
            self._read.update(followed)
        return "/".join(resolved)

    def flattened_link(self, rel: str) -> str | None:
        """The target of a link a copy wrote as a file at `rel` (module docstring), or None."""
        if not self.captured:
            return None
        parent, _, name = rel.rpartition("/")
        try:
            directory = self._dir_fd(parent)
            if not stat.S_ISREG(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode):
                return None  # a FIFO or a device is never opened
            fd = os.open(name, _FILE_FLAGS, dir_fd=directory)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = os.read(fd, MAX_FLATTENED_LINK_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        text = data.decode("ascii", "replace").rstrip("\n")
        return text if len(data) <= MAX_FLATTENED_LINK_BYTES and FLATTENED_LINK.fullmatch(text) else None

    def read(self, rel: str) -> str | None:
        """The text of file `rel`, stripped, or None when it is absent or unreadable here (a
        root-only attribute). Raises TreeError for a file that is not a regular one (found so
        before it is opened) or too large."""
        path = self.resolve(rel, final_link=False)
        if self.max_files is not None and self.kept() >= self.max_files:
            raise TreeError(self.where(rel), f"more than {self.max_files} files: more than a capture holds")
        parent, _, name = path.rpartition("/")
        try:
            directory = self._dir_fd(parent)
            before = os.stat(name, dir_fd=directory, follow_symlinks=False)
            if not stat.S_ISREG(before.st_mode):
                raise TreeError(self.where(rel), "not a regular file: not a sysfs attribute")
            fd = os.open(name, _FILE_FLAGS, dir_fd=directory)
        except OSError as exc:
            if exc.errno in _ABSENT:
                return None
            if exc.errno == errno.ELOOP:
                raise self._changed(rel) from exc
            raise TreeError(self.where(rel), f"cannot read: {os_reason(exc)}") from exc
        try:
            after = os.fstat(fd)
            if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
                raise self._changed(rel)
            chunks, size = [], 0
            while size <= MAX_ATTRIBUTE_BYTES:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # an attribute the device cannot answer now (EIO, ENODEV)
                    return None
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(fd)
        if size > MAX_ATTRIBUTE_BYTES:
            raise TreeError(self.where(rel), f"larger than {MAX_ATTRIBUTE_BYTES // (1024 * 1024)} MiB: not a sysfs attribute")
        data = b"".join(chunks)
        if self.record:
            self.files[path] = data
        elif self.max_files is not None:
            self._read.add(path)
        return data.decode("utf-8", "replace").strip()

    def list(self, rel: str, machine: Machine, each: int = 0) -> list[str]:
        """The entry names of directory `rel`, sorted; [] when it is absent. A name that is not
        printable ASCII is left out with a warning. `each`: the files the reader keeps of every
        entry at least (a capture over `max_files` is refused here, before they are read)."""
        path = self.resolve(rel, final_link=False)
        try:
            with os.scandir(self._dir_fd(path)) as entries:
                names = []
                for entry in entries:
                    names.append(entry.name)
                    if len(names) > MAX_ENTRIES:
                        raise TreeError(self.where(rel), f"more than {MAX_ENTRIES} entries: not a sysfs directory")
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._changed(rel) from exc
            raise TreeError(self.where(rel), f"cannot list: {os_reason(exc)}") from exc
        if self.record:
            self.dirs.add(path)
        if self.max_files is not None and self.kept() + each * len(names) > self.max_files:
            raise TreeError(self.where(rel), f"{len(names)} entries of {each} files or more each: more than the "
                            f"{self.max_files} files a capture holds")
        kept = []
        for name in sorted(names):
            if name.isascii() and name.isprintable():
                kept.append(name)
            else:
                # problem() makes the name visible (one line, escapes): not here too, or it is escaped twice
                machine.problem(self.where(rel), Severity.WARNING, Code.INPUT_VALUE, f"entry {name} is not a printable ASCII name: left out")
        return kept


    def kept(self) -> int:
        """The files and links read so far (recorded, or counted: what `max_files` bounds)."""
        return len(self.files) + len(self.links) + len(self._read)

    def count_present(self, path: str, names: frozenset[str]) -> int:
        """How many of `names` resolved directory `path` holds as a regular file or a link (the
        entry's type from its listing, nothing opened): files a reader asking for them keeps,
        at least (a link keeps its target too; another type is refused when it is read)."""
        try:
            with os.scandir(self._dir_fd(path)) as entries:
                present = [entry for entry in entries if entry.name in names]
            return sum(1 for entry in present if entry.is_file(follow_symlinks=False) or entry.is_symlink())
        except OSError:
            return 0  # absent or unreadable: reading it says so


def read_sysfs(root: Path, tree: Tree | None = None) -> Machine:
    """The machine whose sysfs and procfs are under `root` (see the module docstring). Problems
    are in `.problems`: an unusable tree is an I100/I101 error and an otherwise empty machine."""
    machine = Machine()
    own = tree is None
    tree = tree or Tree(root)
    machine.sources.append((tree.shown or "/", "sysfs"))
    if not os.path.isdir(root / PCI_DEVICES):
        machine.problem(tree.where(PCI_DEVICES), Severity.ERROR, Code.INPUT_UNREADABLE,
                        "no such directory: not a sysfs root (give --sysfs-root the directory 'hwspec capture' wrote)")
        return machine
    try:
        _Reader(tree, machine).run()
    except TreeError as exc:
        machine.problem(exc.where, Severity.ERROR, Code.INPUT_SYNTAX, exc.message)
        return machine
    finally:
        if own:
            tree.close()
    machine.listed.update({"numa", "rdma-nics", "tcp-nics", "nic-ports"})
    refuse_oversized(machine, tree.where(PCI_DEVICES).file)
    return machine


def speed_gen(text: str | None) -> int | None:
    """The PCIe generation of a sysfs link speed (`16.0 GT/s PCIe`, older kernels `8 GT/s`)."""
    return PCIE_SPEED_STRINGS.get(text or "")


def width_of(text: str | None) -> int | None:
    return int(text) if text and is_decimal(text) and len(text) <= 3 else None


class _Reader:
    def __init__(self, tree: Tree, machine: Machine):
        self.t, self.m = tree, machine
        self.rdma_functions: set[str] = set()
        self.others: dict[str, tuple[str | None, str]] = {}
        """Functions read as neither bridge, GPU, NIC nor NVSwitch: bus id -> (parent bridge, class)."""

    def run(self) -> None:
        self.numa_nodes()
        self.cpuinfo()
        self.pci()
        self.rdma()
        self.net()

    # ------------------------------------------------------------ CPUs and memory

    def numa_nodes(self) -> None:
        for name in self.t.list(NODES, self.m):
            match = NUMA_DIR.fullmatch(name)
            if match is None:
                continue
            rel = f"{NODES}/{name}"
            node = NumaNode(int(match.group(1)), self.t.where(f"{rel}/cpulist"))
            text = self.t.read(f"{rel}/cpulist")
            node.cpus = parse_cpu_list(text) if text else () if text == "" else None
            if text and node.cpus is None:
                self.m.problem(node.where, Severity.WARNING, Code.INPUT_VALUE, f"\"{text[:40]}\" is not a CPU list")
            node.memory = self.mem_total(f"{rel}/meminfo")
            self.m.numa[node.id] = node
        if not self.m.numa:  # a kernel without NUMA: one node holds every CPU
            text = self.t.read("sys/devices/system/cpu/online")
            cpus = parse_cpu_list(text) if text else None
            if cpus is not None:
                self.m.numa[0] = NumaNode(0, self.t.where("sys/devices/system/cpu/online"), cpus=cpus)

    def mem_total(self, rel: str) -> int | None:
        for line in (self.t.read(rel) or "").splitlines():
            words = line.split()
            if len(words) == 5 and words[2] == "MemTotal:" and words[4] == "kB":
                if (problem := too_many_digits(words[3], "MemTotal")) is not None:
                    raise TreeError(self.t.where(rel), f"{problem}: not a sysfs meminfo")
                if is_decimal(words[3]):
                    return int(words[3]) * 1024
        return None

    def cpuinfo(self) -> None:
        """Each NUMA node's CPU identity from the first /proc/cpuinfo entry of one of its CPUs."""
        text = self.t.read(CPUINFO)
        if not text:
            return
        self.m.sources.append((self.t.where(CPUINFO).file, "/proc/cpuinfo"))
        numa_of_cpu = {cpu: node.id for node in self.m.numa.values() for cpu in node.cpus or ()}
        for block in text.split("\n\n"):
            fields = dict(_field(line) for line in block.splitlines() if ":" in line)
            cpu = fields.get("processor", "")
            node = self.m.numa.get(numa_of_cpu.get(int(cpu), -1)) if is_decimal(cpu) else None
            if node is None or node.model_name is not None:
                continue
            node.arch = "x86_64" if "vendor_id" in fields else "aarch64" if "CPU implementer" in fields else \
                "ppc64le" if fields.get("cpu", "").startswith("POWER") else None
            node.vendor = cpu_vendor(fields.get("vendor_id"), node.arch)
            for attr, key in (("family", "cpu family"), ("model", "model"), ("package", "physical id")):
                if is_decimal(fields.get(key, "")):
                    setattr(node, attr, int(fields[key]))
            node.model_name = fields.get("model name") or fields.get("cpu") or None

    # ------------------------------------------------------------ PCI

    def pci(self) -> None:
        names = self.t.list(PCI_DEVICES, self.m, each=2)  # its link and its class, read for every function
        # A capture that may pass its file limit counts, from one listing of each function's
        # directory, the files every function's reading keeps, and is refused as soon as they
        # are more than the limit, before any is read (a tree of 25,000 functions, just under
        # the listing's refusal, read 50,000 files first).
        limit = self.t.max_files
        counting = limit is not None and len(names) * MOST_FILES_OF_A_FUNCTION > limit - self.t.kept()
        located, counted = [], 0
        for name in names:
            if not BUS_ID.fullmatch(name):
                self.m.problem(self.t.where(PCI_DEVICES), Severity.WARNING, Code.INPUT_VALUE, f"{name} is not a PCI bus id: left out")
                continue
            path = self.t.resolve(f"{PCI_DEVICES}/{name}")
            chain = [part for part in path.split("/") if BUS_ID.fullmatch(part)]
            if not chain or chain[-1] != name:
                self.m.problem(self.t.where(f"{PCI_DEVICES}/{name}"), Severity.WARNING, Code.INPUT_VALUE,
                               f"{name} links to {path}, not to its PCI function: left out")
                continue
            located.append((name, chain))
            if counting:
                counted += self.t.count_present(path, FILES_OF_EVERY_FUNCTION)
                if limit is not None and self.t.kept() + counted > limit:
                    raise TreeError(self.t.where(PCI_DEVICES), f"its first {len(located)} PCI functions hold "
                                    f"{self.t.kept() + counted} files and links to read: more than the {limit} files "
                                    "a capture holds")
        functions = []
        for name, chain in located:
            pci_class = (self.t.read(f"{PCI_DEVICES}/{name}/class") or "")[2:6].lower()
            functions.append((name, chain[:-1], pci_class))
        bridges = {name for name, _, pci_class in functions if pci_class == "0604"}
        for name, above, pci_class in functions:
            parent = next((bus for bus in reversed(above) if bus in bridges), None)
            self.function(name, parent, pci_class)

    def attr(self, bus: str, name: str) -> str | None:
        return self.t.read(f"{PCI_DEVICES}/{bus}/{name}")

    def pci_id(self, bus: str, name: str) -> str | None:
        text = (self.attr(bus, name) or "").lower()
        return text if re.fullmatch(r"0x[0-9a-f]{4}", text) else None

    def numa_node(self, bus: str) -> int:
        """The function's NUMA node; -1 (none) on a machine with one NUMA node means that one."""
        text = self.attr(bus, "numa_node")
        if (problem := too_many_digits(text, "numa_node")) is not None:
            raise TreeError(self.t.where(f"{PCI_DEVICES}/{bus}/numa_node"), f"{problem}: not a sysfs attribute")
        if text and is_decimal(text):
            return int(text)
        return next(iter(self.m.numa)) if len(self.m.numa) == 1 else -1

    def link(self, bus: str, prefix: str) -> Link | None:
        """The function's `prefix` (current, max) link; a current link whose speed reads Unknown
        or whose width reads 0 or 63 (what a dead or untrained link reads) is `down`."""
        speed, width_text = self.attr(bus, f"{prefix}_link_speed"), self.attr(bus, f"{prefix}_link_width")
        gen, width = speed_gen(speed), width_of(width_text)
        if prefix == "current" and (speed == "Unknown" or width in UNTRAINED_WIDTHS):
            return Link(gen, None, down=f"speed {visible(speed or 'not given')}, width {visible(width_text or 'not given')}")
        if gen is None and width is None:
            return None
        return Link.of(gen, width or None, width_zero=width == 0)

    def function(self, bus: str, parent: str | None, pci_class: str) -> None:
        where = self.t.where(f"{PCI_DEVICES}/{bus}/class")
        vendor, device = self.pci_id(bus, "vendor"), self.pci_id(bus, "device")
        numa = self.numa_node(bus)
        up = parent or f"{NUMA_PREFIX}{numa}"
        current = self.link(bus, "current")
        if pci_class == "0604":
            self.m.bridges[bus] = Bridge(bus, where, up, bus, current, vendor, device,
                                         self.pci_id(bus, "subsystem_vendor"), self.pci_id(bus, "subsystem_device"))
        elif is_accelerator(vendor, pci_class, self.os_devices(bus)):
            self.m.gpus[bus] = self.gpu(bus, where, up, pci_class, vendor, device, numa, current)
        elif pci_class.startswith("02"):
            self.m.nics[bus] = Nic(bus, where, up, bus, current, vendor, device,
                                   fabric="infiniband" if pci_class == "0207" else "ethernet", numa=numa)
        elif pci_class == "0680" and (self.t.read(f"{PCI_DEVICES}/{bus}/class") or "").strip().lower() == "0x068001":
            self.m.cpu_link_ends[bus] = where  # a POWER CPU's NVLink port (NPU): NCCL's tclass 0x068001
        elif pci_class == "0680" and vendor == "0x10de":
            self.m.nvswitches[bus] = where
        else:
            self.others[bus] = (parent, pci_class)

    def os_devices(self, bus: str) -> tuple[str, ...]:
        """`rsmi` for a function the amdgpu driver runs (ROCm computes on it), as hwloc names it."""
        try:
            driver = self.t.resolve(f"{PCI_DEVICES}/{bus}/driver").rsplit("/", 1)[-1]
        except TreeError:
            return ()
        return ("rsmi",) if driver == "amdgpu" else ()

    def gpu(self, bus: str, where: Location, parent: str, pci_class: str, vendor: str | None, device: str | None, numa: int,
            current: Link | None) -> Gpu:
        maximum = self.link(bus, "max")
        link = current
        if current is not None and not current.down and maximum is not None and maximum.gen is not None and current.width:
            link = Link.of(maximum.gen, current.width)
        cpus = self.attr(bus, "local_cpulist")
        return Gpu(bus, where, parent, bus, link, vendor, device, numa=numa if numa >= 0 else None,
                   cpus=parse_cpu_list(cpus) if cpus else None, model_name=self.attr(bus, "product_name") or None,
                   subsystem_vendor=self.pci_id(bus, "subsystem_vendor"), subsystem_device=self.pci_id(bus, "subsystem_device"),
                   current_link=current)

    # ------------------------------------------------------------ RDMA devices and network interfaces

    def function_of(self, rel: str) -> str | None:
        """The PCI bus id of the function a class device (`sys/class/net/eth0`) belongs to."""
        buses = [part for part in self.t.resolve(rel).split("/") if BUS_ID.fullmatch(part)]
        return buses[-1] if buses else None

    def rdma(self) -> None:
        for name in self.t.list(INFINIBAND, self.m):
            bus = self.function_of(f"{INFINIBAND}/{name}") or ""
            nic = self.m.nics.get(bus) or self.shown_as_other(name, bus)
            if nic is None:
                continue  # a software RDMA device (rxe, siw): no PCI function
            self.rdma_functions.add(nic.key)
            for port in self.t.list(f"{INFINIBAND}/{name}/ports", self.m):
                if is_decimal(port) and len(port) <= 3:
                    nic.ports.append(self.rdma_port(name, int(port)))

    def shown_as_other(self, name: str, bus: str) -> Nic | None:
        """The NIC of RDMA device `name` whose PCI function reads another class (a sandbox such as
        gVisor shows it as a host bridge, 0x060000): an RDMA device is a NIC whatever its function's
        class says, as NCCL takes it; its ids and link are left unknown (they are the bridge's).
        The fabric is its first port's link layer. None for a function that is no PCI device here."""
        if bus not in self.others:
            return None
        parent, pci_class = self.others.pop(bus)
        layer = (self.t.read(f"{INFINIBAND}/{name}/ports/1/link_layer") or "").lower()
        numa = self.numa_node(bus)
        nic = Nic(bus, self.t.where(f"{PCI_DEVICES}/{bus}/class"), parent or f"{NUMA_PREFIX}{numa}", bus,
                  fabric="infiniband" if layer == "infiniband" else "ethernet" if layer == "ethernet" else None,
                  numa=numa, shown_as=f"0x{pci_class}")
        self.m.nics[bus] = nic
        self.m.notes.append(f"{nic.where}: the RDMA device {name} is on {bus}, whose class reads 0x{pci_class} (as a sandbox "
                            "shows a NIC's function): read as the NIC's device, as NCCL reads it")
        return nic

    def rdma_port(self, name: str, port: int) -> NicPort:
        rel = f"{INFINIBAND}/{name}/ports/{port}"
        rate = RATE.match(self.t.read(f"{rel}/rate") or "")
        state = self.t.read(f"{rel}/state")
        return NicPort(name, self.t.where(f"{rel}/state"), port, float(rate.group(1)) * 1e9 / 8 if rate else None,
                       up=state.endswith("ACTIVE") if state else None)

    def net(self) -> None:
        for name in self.t.list(NET, self.m):
            nic = self.m.nics.get(self.function_of(f"{NET}/{name}") or "")
            if nic is None:
                continue  # virtual (lo, bridges, tunnels) or on a function that is not a NIC
            nic.interfaces.append(name)
            if nic.key in self.rdma_functions:
                continue  # the function's RDMA ports describe it
            speed = self.t.read(f"{NET}/{name}/speed")
            state = self.t.read(f"{NET}/{name}/operstate")
            megabits = int(speed) if speed and is_decimal(speed) and int(speed) > 0 else None
            nic.ports.append(NicPort(name, self.t.where(f"{NET}/{name}/operstate"), len(nic.ports) + 1,
                                     megabits * 1e6 / 8 if megabits else None, up=state == "up" if state else None))


def _field(line: str) -> tuple[str, str]:
    key, _, value = line.partition(":")
    return key.strip(), value.strip()
