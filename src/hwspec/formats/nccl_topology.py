"""NCCL topology XML compatibility check: the rules of NCCL's own parser, not XML's.

NCCL reads `NCCL_TOPO_FILE` with a hand-written tokenizer (src/graph/xml.cc) that accepts far
less than XML: no `<?xml?>` declaration, no TABs, double-quoted values only (before 2.27),
attributes on one line separated by single spaces, no text content, and no entity decoding
(`&amp;` stays `&amp;`). Its loader then silently ignores elements in the wrong place, skips a
`<gpu>` without `rank` and a `<net>` without `dev`, falls back to Gen3 for an unknown
`link_speed`, and gives up above 256 elements. A real XML parser would accept many files NCCL
rejects or misreads, so this module tokenizes the text itself, the way NCCL does, and judges
the tree it builds. Rules and error texts come from docs on NCCL 2.18-2.30 (xml.cc, xml.h,
topo.cc); see the reference `nccl-topology-xml.md`.

`check_nccl_xml(text)` returns one message per violation, each starting with `line N:` (or
`file:` for whole-file facts); an empty list means NCCL will read the file as written.

RCCL (AMD's fork) reads the same grammar with its own rules, the RCCL dialect
(`check_rccl_xml`, read from ROCm/rccl src/graph/xml.cc, xml.h, topo.cc, topo.h): the root is
`<system version="2">` (NCCL_TOPO_XML_VERSION 2; NCCL wants 1, and each library rejects the
other's file with "XML Topology has wrong version"); a `<gpu>` takes `<xgmi>` children only
(an AMD build's handler table, so `<nvlink>` is ignored) and needs `gcn` and `arch` besides
NCCL's attributes, with `sm` holding the compute-unit count; an xGMI peer's class is
`0x120000` (processing accelerator), which RCCL maps to a GPU; AMD CPUs need `familyid` and
`modelid` as Intel ones do (RCCL reads them to tell Rome/Milan from other Zen parts).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from hwspec.spec.checks import BUS_ID as BUSID

MAX_ELEMENTS = 256
"""NCCL_TOPO_XML_MAX_NODES in NCCL 2.21+ (1024 before)."""
MAX_ATTRIBUTES = 16
"""MAX_ATTR_COUNT: NCCL drops the attributes after the 16th."""
MAX_STRING = 255
"""MAX_STR_LEN: names and values must be shorter."""

LINK_SPEEDS = ("2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s",
               "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe")
"""kvDictPciGen: anything else silently becomes Gen3 (so "16.0 GT/s" without "PCIe" is wrong)."""

PCIE_LINK_SPEED: dict[int, str] = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe",
                                   4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}
"""The strings current kernels (and NCCL's own dumps) write, by PCIe generation."""

CHILDREN: dict[str, tuple[str, ...]] = {
    "system": ("cpu",),
    "cpu": ("pci", "nic"),
    "pci": ("pci", "gpu", "nic", "pcilink"),
    "gpu": ("nvlink", "c2c"),
    "nic": ("net",),
    "nvlink": (), "c2c": (), "pcilink": (), "net": (),
}
"""NCCL's handler tables (xml.cc): anything else is skipped with its whole subtree."""

CPU_ARCHS = ("x86_64", "arm64", "ppc64")
X86_VENDORS = ("GenuineIntel", "AuthenticAMD", "CentaurHauls", "  Shanghai  ")
FAMILY_VENDORS = ("GenuineIntel", "CentaurHauls", "  Shanghai  ")
"""Vendors for which NCCL requires familyid and modelid."""


RCCL_MAX_ELEMENTS = 1024
"""RCCL's parser limit in the oldest stored source (xml.cc: "XML parser is limited to 1024 nodes");
newer RCCL allocates NCCL_TOPO_XML_MAX_NODES (8192). The smaller bound keeps a file readable by both."""
RCCL_MAX_CHILDREN = 32
"""MAX_SUBS in the oldest stored RCCL xml.h, filled without a bounds check by its parser (newer RCCL:
512, checked). More children under one element overwrite memory there, so files stay within 32."""
CLASS_ACCELERATOR = "0x120000"
"""PCI class 'processing accelerator': an AMD Instinct GPU, and the `tclass` of an xGMI peer."""
GCN = re.compile(r"gfx[0-9a-f]{3,4}")

NVSWITCH_SENTINEL = "fffffff:ff:ff.0"
"""nvlink target NCCL writes for an NVSwitch it cannot see (7 f's)."""

_INT = re.compile(r"-?[0-9]+")
_UINT = re.compile(r"[0-9]+")
_HEX_CLASS = re.compile(r"0x[0-9a-f]{2,6}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_NAME_CHARS = re.compile(r"[^ \t\n\r>/=\"'<]*")
"""What NCCL's tokenizer takes into a name: everything up to a space, '>', '/', '=', a quote, '<' or a line break."""
_BLANKS = re.compile(r"[ \n\r\t]*")


def _span_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where the run of `pattern` (a starred class, which always matches) from `pos` ends."""
    match = pattern.match(text, pos)
    assert match is not None, pattern.pattern
    return match.end()
_PLAIN_VALUE = re.compile(r"[^\n\r\t<>&\"']*")
"""An attribute value with none of the characters `attribute` reports."""
_CLEAN_TAG = re.compile(r"""<([A-Za-z_][A-Za-z0-9_.-]*)((?: [A-Za-z_][A-Za-z0-9_.-]*="[^\n\r\t<>&"']*")*)(/?)>""")
"""An opening tag in which `open_tag` finds nothing to report but lengths and duplicates:
a good name, attributes each after one space with a good name and a plain double-quoted value."""
_CLEAN_ATTRIBUTE = re.compile(r' ([^=]*)="([^"]*)"')


@dataclass(frozen=True, slots=True)
class Dialect:
    """What one library's topology-file reader accepts on top of the shared tokenizer."""

    name: str
    """"NCCL" or "RCCL": used in messages."""
    version: str
    """The only `<system version>` the library reads."""
    children: dict[str, tuple[str, ...]]
    """Handler tables: the children each element may have (anything else is skipped)."""
    gpu_link: str
    """The element of a GPU-to-GPU link: `nvlink` or `xgmi`."""
    gpu_classes: tuple[str, ...]
    """Prefixes of a `tclass` that names a GPU peer (which then needs a `target`)."""
    gpu_attributes: tuple[str, ...]
    """Required attributes of `<gpu>`."""
    family_vendors: tuple[str, ...]
    """x86 vendors for which `familyid` and `modelid` are required."""
    max_elements: int
    limit_from: str
    """Who has `max_elements`, as messages say it ("NCCL 2.21+")."""
    max_children: int | None = None
    """Children one element may have, where the parser has a fixed table (None: not checked)."""


# sm is not required: NCCL's detection fills a missing sm from the device (ncclTopoFillGpu, "dev and sm
# filled only if missing"), which is how hwspec leaves an unknown part's compute capability to NCCL
NCCL = Dialect("NCCL", "1", CHILDREN, "nvlink", ("0x03",), ("dev", "rank"), FAMILY_VENDORS, MAX_ELEMENTS, "NCCL 2.21+")
RCCL = Dialect("RCCL", "2", {**CHILDREN, "gpu": ("xgmi",), "xgmi": ()}, "xgmi", ("0x03", CLASS_ACCELERATOR),
               ("dev", "sm", "gcn", "arch", "rank"), FAMILY_VENDORS + ("AuthenticAMD",), RCCL_MAX_ELEMENTS,
               "RCCL", RCCL_MAX_CHILDREN)
"""RCCL on an AMD build (ROCm/rccl src/graph/xml.cc ncclTopoXmlLoadGpu: handlers { "xgmi" } only;
topo.cc ncclTopoAddGpu reads sm, gcn, arch, rank, dev, gdr; ncclTopoAddCpu reads familyid/modelid for AMD)."""


@dataclass
class _Element:
    """One element as the tokenizer read it: name, line, attributes in order, children."""

    name: str
    line: int
    attrs: list[tuple[str, str]] = field(default_factory=list)
    children: list[_Element] = field(default_factory=list)
    parent: _Element | None = None

    def get(self, key: str) -> str | None:
        for k, v in self.attrs:
            if k == key:
                return v
        return None

    def tag(self) -> str:
        return f"<{self.name}>"


class _Fatal(Exception):
    """A syntax error after which NCCL (and this tokenizer) cannot go on."""


class _Tokenizer:
    """Reads `text` as NCCL's tokenizer does, recording every incompatibility; recovers where
    the intent is obvious (a TAB, a single quote) and stops on real syntax errors."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.errors: list[str] = []
        self.elements: list[_Element] = []
        self._tab_lines: set[int] = set()
        self._newlines = [match.start() for match in re.finditer("\n", text)]

    def line(self, pos: int | None = None) -> int:
        return bisect.bisect_left(self._newlines, self.pos if pos is None else pos) + 1

    def error(self, message: str, pos: int | None = None) -> None:
        self.errors.append(f"line {self.line(pos)}: {message}")

    def fatal(self, message: str, pos: int | None = None) -> _Fatal:
        self.error(message, pos)
        return _Fatal()

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos:self.pos + n]

    def tab(self) -> None:
        line = self.line()
        if line not in self._tab_lines:
            self._tab_lines.add(line)
            self.error("TAB character: NCCL skips only spaces and line breaks "
                       "(NCCL: \"XML Parse error : expecting '<', got '\\t'\")")

    def skip_blank(self) -> None:
        start, end = self.pos, _span_end(_BLANKS, self.text, self.pos)
        tab = self.text.find("\t", start, end)
        while tab >= 0:  # each TAB is reported at its own line (once per line)
            self.pos = tab
            self.tab()
            tab = self.text.find("\t", tab + 1, end)
        self.pos = end

    def parse(self) -> _Element | None:
        """Tokenize the whole text; return the root element (None after a fatal error)."""
        root: _Element | None = None
        stack: list[_Element] = []
        try:
            while True:
                self.skip_blank()
                if self.pos >= len(self.text):
                    break
                start = self.pos
                if self.text[start] != "<":
                    raise self.fatal(f"text {self.text[start]!r} outside a tag: NCCL expects only elements and comments "
                                     f"(NCCL: \"XML Parse error : expecting '<', got '{self.text[start]}'\")")
                if self.text.startswith("<!--", start):
                    end = self.text.find("-->", start + 4)
                    if end < 0:
                        raise self.fatal("unterminated comment (NCCL: \"XML Parse error : unterminated comment\")")
                    if "--" in self.text[start + 4:end]:
                        self.error("'--' inside a comment: not well-formed XML")
                    self.pos = end + 3
                    continue
                if self.text.startswith("<?", start):
                    self.error("XML declaration '<?xml ...?>' is not allowed (NCCL: \"XML Parse : expected >, got '?'\")")
                    end = self.text.find("?>", start)
                    if end < 0:
                        raise self.fatal("unterminated '<?'")
                    self.pos = end + 2
                    continue
                if self.text.startswith("<!", start):
                    raise self.fatal("'<!' declarations (DOCTYPE, CDATA) are not allowed: NCCL reads only elements and comments")
                if self.text.startswith("</", start):
                    self.pos += 2
                    name = self.name()
                    if self.peek() != ">":
                        raise self.fatal(f"unexpected {self.peek()!r} in closing tag </{name}> "
                                         f"(NCCL: \"XML Parse error : unexpected trailing {self.peek()} in closing tag {name}\")")
                    self.pos += 1
                    if not stack:
                        raise self.fatal(f"closing tag </{name}> without an open element", start)
                    opened = stack.pop()
                    if opened.name != name:
                        raise self.fatal(f"closing tag </{name}> does not match <{opened.name}> opened on line {opened.line} "
                                         f"(NCCL: \"XML Mismatch : {opened.name} / {name}\")", start)
                    continue
                element, single = self.open_tag()
                if stack:
                    element.parent = stack[-1]
                    stack[-1].children.append(element)
                elif root is None:
                    root = element
                else:
                    raise self.fatal(f"second top-level element <{element.name}>: the file must hold one <system>", start)
                if not single:
                    stack.append(element)
            if stack:
                raise self.fatal(f"<{stack[-1].name}> opened on line {stack[-1].line} is never closed "
                                 "(NCCL: \"XML Parse : Unexpected EOF\")")
        except _Fatal:
            return None
        return root

    def name(self) -> str:
        """An element or attribute name: NCCL ends it at space, '>', '/', '=', or a line break."""
        start = self.pos
        self.pos = _span_end(_NAME_CHARS, self.text, start)
        name = self.text[start:self.pos]
        if not _NAME.fullmatch(name):
            raise self.fatal(f"bad name {name!r}" if name else f"expected a name, got {self.peek()!r}", start)
        if len(name) >= MAX_STRING:
            self.error(f"name longer than {MAX_STRING - 1} characters (NCCL: \"Error : name ... too long\")", start)
        return name

    def open_tag(self) -> tuple[_Element, bool]:
        clean = _CLEAN_TAG.match(self.text, self.pos)
        if clean is not None:  # the usual tag, read in one step; anything to report takes the long way
            attrs = _CLEAN_ATTRIBUTE.findall(clean.group(2))
            lengths = [len(clean.group(1)), *(len(part) for attr in attrs for part in attr)]
            if max(lengths) < MAX_STRING and len({key for key, _ in attrs}) == len(attrs):
                element = _Element(clean.group(1), self.line(self.pos), attrs)
                self.elements.append(element)
                self.pos = clean.end()
                return element, clean.group(3) == "/"
        tag_start = self.pos
        self.pos += 1
        element = _Element(self.name(), self.line(tag_start))
        self.elements.append(element)
        while True:
            c = self.peek()
            if c == "":
                raise self.fatal(f"unterminated tag <{element.name}>", tag_start)
            if c == ">":
                self.pos += 1
                return element, False
            if self.text.startswith("/>", self.pos):
                self.pos += 2
                return element, True
            if c not in " \t\n\r":
                raise self.fatal(f"unexpected {c!r} after an attribute of <{element.name}>: attributes are separated "
                                 f"by one space (NCCL: \"XML Parse : expected >, got '{c}'\")")
            separator_start = self.pos
            self.skip_blank()
            separator = self.text[separator_start:self.pos]
            if "\n" in separator or "\r" in separator:
                self.error(f"line break inside <{element.name}>: NCCL needs a tag and all its attributes on one line "
                           "(NCCL: \"XML Parse : expected >, got '\\n'\")", separator_start)
            elif len(separator) > 1:
                self.error(f"more than one space between attributes in <{element.name}>: NCCL reads each extra space "
                           "as an empty attribute", separator_start)
            if self.peek() == ">" or self.text.startswith("/>", self.pos):
                self.error(f"space before the end of <{element.name}>: NCCL reads it as an empty attribute", separator_start)
                continue
            self.attribute(element)

    def attribute(self, element: _Element) -> None:
        key_pos = self.pos
        key = self.name()
        if self.peek() != "=":
            self.error(f"attribute {key!r} of <{element.name}> has no value", key_pos)
            return
        self.pos += 1
        quote = self.peek()
        if quote not in ("\"", "'"):
            raise self.fatal(f"value of {key!r} in <{element.name}> is not quoted (NCCL: \"XML Parse : Expected (double) quote.\")")
        if quote == "'":
            self.error(f"single-quoted value of {key!r} in <{element.name}>: NCCL before 2.27 accepts double quotes only")
        end = self.text.find(quote, self.pos + 1)
        if end < 0:
            raise self.fatal(f"unterminated value of {key!r} in <{element.name}>")
        value = self.text[self.pos + 1:end]
        self.pos = end + 1
        problems = [] if _PLAIN_VALUE.fullmatch(value) else [
            what for chars, what in (("\n\r", "a line break"), ("\t", "a TAB"), ("<>", "'<' or '>'"),
                                     ("&", "'&' (NCCL does not decode entities)"), ("\"'", "a quote"))
            if any(ch in value for ch in chars)]
        for what in problems:
            self.error(f"value of {key!r} in <{element.name}> contains {what}", key_pos)
        if len(value) >= MAX_STRING:
            self.error(f"value of {key!r} in <{element.name}> is longer than {MAX_STRING - 1} characters "
                       "(NCCL fails on it)", key_pos)
        if any(k == key for k, _ in element.attrs):
            self.error(f"duplicate attribute {key!r} in <{element.name}>: NCCL uses the first", key_pos)
        element.attrs.append((key, value))


# ------------------------------------------------------------------ checks of the tree


def _gpu_tclass(element: _Element, dialect: Dialect) -> bool:
    """The link names a GPU peer: its tclass starts with one of the dialect's GPU classes."""
    return (element.get("tclass") or "").startswith(dialect.gpu_classes)


def missing_required(tag: str, attrs: list[tuple[str, str]], dialect: Dialect = NCCL) -> list[str]:
    """The attributes `dialect`'s library requires of element `tag` that `attrs` lacks (the check
    generated files pass, asked of one element before it is written)."""
    element = _Element(tag, 0, list(attrs))
    return [key for key in _required(element, dialect) if element.get(key) is None]


def _required(element: _Element, dialect: Dialect) -> list[str]:
    """Attributes without which the library fails or silently skips the element."""
    name = element.name
    if name == "system":
        return ["version"]
    if name == "cpu":
        keys = ["numaid", "arch"]
        if (element.get("arch") or "").startswith("x86_64"):
            keys.append("vendor")
            if element.get("vendor") in dialect.family_vendors:
                keys += ["familyid", "modelid"]
        return keys
    if name == "pci":
        return ["busid", "class", "link_speed", "link_width"]
    if name == "gpu":
        return list(dialect.gpu_attributes)  # gdr: the library fills it in at init when the file leaves it out
    if name == dialect.gpu_link:
        keys = ["count", "tclass"]
        if _gpu_tclass(element, dialect):
            keys.append("target")
        return keys
    if name == "c2c":
        return ["bw", "count"]
    if name == "pcilink":
        return ["target"]
    if name == "net":
        return ["dev", "name"]
    return []


_FORMATS: dict[tuple[str, str], tuple[re.Pattern[str], str]] = {
    ("cpu", "numaid"): (_INT, "an integer"),
    ("cpu", "familyid"): (_UINT, "an integer"),
    ("cpu", "modelid"): (_UINT, "an integer"),
    ("pci", "class"): (_HEX_CLASS, "a lower-case PCI class code such as '0x030200'"),
    ("pci", "link_width"): (_UINT, "a lane count"),
    ("gpu", "dev"): (_UINT, "an integer"),
    ("gpu", "rank"): (_UINT, "an integer"),
    ("gpu", "sm"): (_UINT, "an integer"),
    ("gpu", "gdr"): (re.compile(r"[01]"), "0 or 1"),
    ("gpu", "gcn"): (GCN, "a gfx target such as 'gfx942'"),
    ("gpu", "arch"): (_UINT, "an integer (hipDeviceProp_t.arch packed)"),
    ("nvlink", "count"): (re.compile(r"[1-9][0-9]*"), "a positive integer"),
    ("xgmi", "count"): (re.compile(r"[1-9][0-9]*"), "a positive integer"),
    ("c2c", "count"): (_UINT, "an integer"),
    ("c2c", "bw"): (_UINT, "an integer"),
    ("net", "dev"): (_UINT, "an integer"),
    ("net", "speed"): (_UINT, "an integer (Mbit/s)"),
    ("net", "port"): (_UINT, "an integer"),
    ("net", "gdr"): (re.compile(r"[01]"), "0 or 1"),
}


def attribute_errors(tag: str, attrs: list[tuple[str, str]], dialect: Dialect = NCCL) -> list[str]:
    """Every way element `tag` with `attrs` breaks `dialect`'s rules of one element other than
    a missing attribute (`missing_required`): a value's format, an unknown architecture or x86
    vendor, too many attributes. The check generated files pass, asked of one element before
    it is written; each message starts with `<tag>`."""
    element = _Element(tag, 0, list(attrs))
    errors: list[str] = []
    _check_attributes(element, element.tag(), errors, dialect)
    return errors


def _check_element(element: _Element, errors: list[str], dialect: Dialect = NCCL) -> None:
    at = f"line {element.line}: {element.tag()}"
    for key in _required(element, dialect):
        if element.get(key) is None:
            errors.append(f"{at} is missing required attribute '{key}'")
    if dialect.max_children is not None and len(element.children) > dialect.max_children:
        errors.append(f"{at} has {len(element.children)} children: {dialect.limit_from} keeps at most "
                      f"{dialect.max_children} under one element")
    _check_attributes(element, at, errors, dialect)
    name = element.name
    allowed = dialect.children.get(name)
    if allowed is None:
        return
    for child in element.children:
        if child.name not in allowed:
            where = f"allowed there: {', '.join(allowed)}" if allowed else f"<{name}> takes no children"
            errors.append(f"line {child.line}: {child.tag()} is not allowed under {element.tag()} "
                          f"({dialect.name} ignores it and everything inside it); {where}")
        else:
            _check_element(child, errors, dialect)


def _check_attributes(element: _Element, at: str, errors: list[str], dialect: Dialect) -> None:
    """The rules of `element`'s own attributes but the required ones, each error starting with `at`."""
    if len(element.attrs) > MAX_ATTRIBUTES:
        errors.append(f"{at} has {len(element.attrs)} attributes: NCCL keeps only the first {MAX_ATTRIBUTES}")
    for key, value in element.attrs:
        rule = _FORMATS.get((element.name, key))
        if rule is not None and not rule[0].fullmatch(value):
            errors.append(f"{at}: {key}=\"{value}\" is not {rule[1]}")
    name = element.name
    if name == "system" and element.get("version") not in (None, dialect.version):
        errors.append(f"{at}: version must be \"{dialect.version}\" ({dialect.name}: \"XML Topology has wrong version\")")
    if name == "cpu":
        arch = element.get("arch")
        if arch is not None and arch not in CPU_ARCHS:
            errors.append(f"{at}: arch=\"{arch}\" is not one of {', '.join(CPU_ARCHS)}")
        vendor = element.get("vendor")
        if vendor is not None and arch == "x86_64" and vendor not in X86_VENDORS:
            errors.append(f"{at}: vendor=\"{vendor}\" is not one of GenuineIntel, AuthenticAMD, CentaurHauls")
        affinity = element.get("affinity")
        if affinity is not None and not re.fullmatch(r"[0-9a-f]{1,8}(,[0-9a-f]{8})*", affinity):
            errors.append(f"{at}: affinity=\"{affinity}\" is not a sysfs cpumap (comma-separated 32-bit hex words)")
    if name == "pci":
        busid = element.get("busid")
        if busid is not None and not BUSID.fullmatch(busid):
            errors.append(f"{at}: busid=\"{busid}\" is not a lower-case 'dddd:bb:dd.f' bus id "
                          "(NCCL matches bus ids as exact strings)")
        speed = element.get("link_speed")
        if speed is not None and speed not in LINK_SPEEDS:
            errors.append(f"{at}: link_speed=\"{speed}\" is not one of NCCL's strings "
                          f"({', '.join(PCIE_LINK_SPEED.values())}); NCCL would silently assume Gen3")
    if name in (dialect.gpu_link, "pcilink"):
        target = element.get("target")
        is_gpu = name == dialect.gpu_link and _gpu_tclass(element, dialect)
        if target is not None and (is_gpu or name == "pcilink") and not BUSID.fullmatch(target):
            errors.append(f"{at}: target=\"{target}\" is not a lower-case 'dddd:bb:dd.f' bus id")


def _check_semantics(root: _Element, errors: list[str], dialect: Dialect = NCCL) -> None:
    """Cross-element rules: unique bus ids, ranks 0..n-1, unique net devs, NVLink/xGMI peers."""
    elements = list(_walk(root, dialect))
    busids: dict[str, int] = {}
    for e in elements:
        busid = e.get("busid")
        if e.name == "pci" and busid is not None:
            if busid in busids:
                errors.append(f"line {e.line}: <pci busid=\"{busid}\"> repeats the bus id of line {busids[busid]}")
            else:
                busids[busid] = e.line

    gpus = [(e, text) for e in elements if e.name == "gpu" and (text := e.get("rank")) is not None and _UINT.fullmatch(text)]
    ranks: dict[int, int] = {}
    for gpu, text in gpus:
        rank = int(text)
        if rank in ranks:
            errors.append(f"line {gpu.line}: <gpu rank=\"{rank}\"> repeats the rank of line {ranks[rank]}")
        ranks.setdefault(rank, gpu.line)
    expected = set(range(len(gpus)))
    if set(ranks) != expected:
        found = ", ".join(sorted((text for _, text in gpus), key=int))
        missing = sorted(expected - set(ranks))
        errors.append(f"file: GPU ranks must be 0..{len(gpus) - 1}, each once; found {found}"
                      + (f" (missing {', '.join(map(str, missing))})" if missing else ""))

    devs: dict[str, int] = {}
    for net in elements:
        dev = net.get("dev")
        if net.name != "net" or dev is None:
            continue
        if dev in devs:
            errors.append(f"line {net.line}: <net dev=\"{dev}\"> repeats the dev of line {devs[dev]}")
        else:
            devs[dev] = net.line

    gpu_bus: dict[str, _Element] = {}
    for gpu in (e for e in elements if e.name == "gpu"):
        busid = gpu.parent.get("busid") if gpu.parent is not None and gpu.parent.name == "pci" else None
        if busid:
            gpu_bus[busid] = gpu
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    link_name = "NVLink" if dialect.gpu_link == "nvlink" else "xGMI"
    for link in (e for e in elements if e.name == dialect.gpu_link and _gpu_tclass(e, dialect)):
        target, count = link.get("target"), link.get("count")
        if target is None or count is None or not _UINT.fullmatch(count) or link.parent is None or link.parent.parent is None:
            continue
        source = link.parent.parent.get("busid")
        if source is None:
            continue  # its <pci> lacks busid, reported as a missing attribute: nothing to match the other end with
        if target not in gpu_bus:
            errors.append(f"line {link.line}: <{link.name} target=\"{target}\"> names no GPU in this file")
            continue
        if target == source:
            errors.append(f"line {link.line}: <{link.name} target=\"{target}\"> links a GPU to itself")
            continue
        key = (source, target)
        previous = counts.get(key, (0, link.line))[0]
        counts[key] = (previous + int(count), link.line)
    for (source, target), (total, line) in sorted(counts.items()):
        back = counts.get((target, source), (0, 0))[0]
        if back != total:
            errors.append(f"line {line}: {link_name} count from {source} to {target} is {total} "
                          f"but from {target} to {source} is {back}: {link_name} counts must be symmetric")


def _walk(element: _Element, dialect: Dialect = NCCL) -> Iterator[_Element]:
    """The elements the library reads: misplaced ones (already reported) are skipped with their subtree."""
    yield element
    for child in element.children:
        if child.name in dialect.children.get(element.name, ()):
            yield from _walk(child, dialect)


def check_nccl_xml(text: str) -> list[str]:
    """Every way `text` breaks NCCL's topology-file rules (empty when NCCL reads it as written)."""
    return check_topology_xml(text, NCCL)


def check_rccl_xml(text: str) -> list[str]:
    """Every way `text` breaks RCCL's topology-file rules (empty when RCCL reads it as written)."""
    return check_topology_xml(text, RCCL)


_CHECKED: dict[tuple[str, str], tuple[str, ...]] = {}
"""Results of `check_topology_xml` by (dialect, text): a cluster's node files repeat the node
platform's topology file, so it is checked once per run. At most _CHECKED_MAX entries."""
_CHECKED_MAX = 64


def check_topology_xml(text: str, dialect: Dialect) -> list[str]:
    """Every way `text` breaks `dialect`'s topology-file rules. The tokenizer is shared (RCCL's
    parser is NCCL's), so its messages quote NCCL's error texts for both."""
    key = (dialect.name, text)
    if key not in _CHECKED:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[key] = tuple(_check_topology_xml(text, dialect))
    return list(_CHECKED[key])


def _check_topology_xml(text: str, dialect: Dialect) -> list[str]:
    tokens = _Tokenizer(text)
    root = tokens.parse()
    errors = list(tokens.errors)
    needs = f"<system version=\"{dialect.version}\">"
    if root is None:
        if not errors:
            errors.append(f"file: no elements: {dialect.name} needs {needs}")
        return errors
    if len(tokens.elements) > dialect.max_elements:
        errors.append(f"file: {len(tokens.elements)} elements: {dialect.limit_from} reads at most {dialect.max_elements} "
                      f"(\"XML parser is limited to {dialect.max_elements} nodes\")")
    if root.name != "system":
        errors.append(f"line {root.line}: the root element is {root.tag()}: {dialect.name} needs {needs}")
        return errors
    _check_element(root, errors, dialect)
    _check_semantics(root, errors, dialect)
    if not errors:
        # NCCL is the strict judge; a file it accepts should also be XML other tools can read.
        from xml.etree import ElementTree  # only this last check needs it

        try:
            ElementTree.fromstring(text)
        except ElementTree.ParseError as exc:
            errors.append(f"file: not well-formed XML: {exc}")
    return errors
