"""Hostile text: pieces that break a file syntax or a reader, and valid specs carrying them in a
field that reaches an output (`hostile_node_specs()`, `hostile_cluster_specs()`)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from hypothesis import strategies as st

from hwspec.testing.clusters import ClusterFiles, cluster_specs
from hwspec.testing.faults import Path_
from hwspec.testing.nodes import YamlDict, node_specs
from hwspec.text import xml_escape

HOSTILE_PIECES = ("\n", "\r", "\r\n", "$(touch PWNED)", "`touch PWNED`", "'", '"', "--", "-->", "<!--", "\x00",
                  "\x01", "\x1b[31m", "\x7f", "\u2028", "\u0085", "\\", "${n}", "{{ x }}", "{% raw %}", "%s", ";",
                  "&amp;", "|", " ", "\t", "é", "\U0001f600", "\ufeff", "\u202e", "\ud800", "]]>", "#", "=", "a")
"""Pieces of text that break a file syntax or a reader when written raw: line breaks of every
kind, shell command substitution and quotes, XML comment ends, NUL and control characters,
terminal escapes, a lone surrogate, jinja2 and format syntax."""

HOSTILE_PATH_PIECES = (b"\n", b"\r", b"$(touch PWNED)", b"`touch PWNED`", b"'", b'"', b"--", b"-->", b"\x01",
                       b"\x1b[31m", b"\x7f", b"\xff", b"\xc3", "é".encode(), "\u2028".encode(), b"\\", b" ", b"\t",
                       b"-", b"#", b"=", b"a", b"%")
"""Pieces of one directory or file name (bytes: a name need not be UTF-8); no `/` and no NUL,
which no name can hold."""

TEXT_FIELDS: tuple[Path_, ...] = (("title",), ("description",), ("sources", "paper"), ("sockets", 0, "assumed"),
                                  ("sockets", 0, "source"))
"""Free text of a node platform: accepted as written, and shown safely wherever it is written."""

NAME_FIELDS: tuple[Path_, ...] = (("name",), ("sockets", 0, "id"), ("sockets", 0, "cpus"), ("gpus", 0, "id"),
                                  ("gpus", 0, "part"), ("gpus", 0, "pcie", "bus"), ("gpus", 0, "pcie", "upstream"),
                                  ("nics", 0, "device"), ("nics", 0, "interface"), ("rules", "HW103", "severity"),
                                  ("environment", "NCCL_IB_TIMEOUT"))
"""Names (and env values) of a node platform: a hostile one is refused by validate, at its place."""


def hostile_texts(max_pieces: int = 6) -> st.SearchStrategy[str]:
    """Strings made of `HOSTILE_PIECES` and a little random text (lone surrogates included)."""
    piece = st.sampled_from(HOSTILE_PIECES) | st.text(max_size=3)
    return st.lists(piece, min_size=1, max_size=max_pieces).map("".join)


def hostile_names(max_pieces: int = 6) -> st.SearchStrategy[bytes]:
    """A directory or file name as bytes, made of `HOSTILE_PATH_PIECES`: never empty, `.`, `..`,
    and at most 200 bytes."""
    return (st.lists(st.sampled_from(HOSTILE_PATH_PIECES), min_size=1, max_size=max_pieces).map(b"".join)
            .filter(lambda name: name not in (b".", b"..") and len(name) <= 200))


DANGEROUS_ENV_NAMES = ("LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "PATH", "PYTHONPATH", "PYTHONSTARTUP", "BASH_ENV",
                       "ENV", "IFS", "PS4", "NCCL_ENV_PLUGIN", "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN",
                       "NCCL_DEBUG_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE", "NCCL_TOPO_FILE", "NCCL_CONF_FILE",
                       "PET_RDZV_ENDPOINT", "MASTER_ADDR", "NCCL_COMM_ID", "CUDA_VISIBLE_DEVICES", "HWSPEC_DIR")
"""Variable names that would load code, name a file or move the launch if a platform file could
set them (`hwspec.formats.environment` refuses them all)."""


EnvValue: TypeAlias = str | int | float | bool
"""What YAML may put under an `environment:` name (`hostile_env_values`)."""


def hostile_env_values() -> st.SearchStrategy[EnvValue]:
    """What YAML may put under an `environment:` name: hostile text, integers, floats (NaN and
    infinities included), booleans."""
    return hostile_texts() | st.integers() | st.floats() | st.booleans()


def hostile_environments(max_size: int = 4) -> st.SearchStrategy[dict[str, EnvValue]]:
    """An `environment:` mapping of 1-`max_size` entries: names that must be refused
    (`DANGEROUS_ENV_NAMES`), vendor tunables, any variable-shaped name, or hostile text; values
    from `hostile_env_values()` or a tunable's plain value."""
    from hwspec.testing.nodes import ENVIRONMENT_SETTINGS

    names = (st.sampled_from(DANGEROUS_ENV_NAMES) | st.sampled_from(sorted(ENVIRONMENT_SETTINGS))
             | st.from_regex(r"[A-Z_][A-Z0-9_]{0,20}", fullmatch=True) | hostile_texts())
    values = hostile_env_values() | st.sampled_from(("22", "4", "rc", "mlx5_0:1", "^lo,docker"))
    return st.dictionaries(names, values, min_size=1, max_size=max_size)


@st.composite
def hostile_environment_specs(draw: st.DrawFn, /, **kwargs: Any) -> tuple[dict[str, EnvValue], dict[str, Any]]:
    """`(environment, spec)`: a valid `node_specs(**kwargs)` spec whose `environment:` is
    `environment` (from `hostile_environments()`). Validate refuses it at its place (HW702 for a
    name the policy refuses, E110 for a malformed name or value), or every name is a tunable and
    generated launch.env sets exactly the values written."""
    spec = copy.deepcopy(draw(node_specs(**kwargs)))
    environment = draw(hostile_environments(), label="environment")
    spec["environment"] = environment
    return environment, spec


def _set(spec: YamlDict, path: Path_, value: object) -> bool:
    """Put `value` at `path` in `spec` when the parent exists; False when it does not."""
    node: Any = spec
    for key in path[:-1]:
        if isinstance(key, int):
            if not isinstance(node, list) or key >= len(node):
                return False
        elif not isinstance(node, dict) or key not in node:
            if not isinstance(node, dict):
                return False
            node[key] = {}
        node = node[key]
    if isinstance(path[-1], str) and not isinstance(node, dict):
        return False
    node[path[-1]] = value
    return True


@st.composite
def hostile_node_specs(draw: st.DrawFn, /, **kwargs: Any) -> tuple[Path_, str, dict[str, Any]]:
    """`(path, kind, spec)`: a valid `node_specs(**kwargs)` spec with hostile text at `path`,
    where `kind` is "text" (free text, `TEXT_FIELDS`: validate accepts it unless it cannot be
    encoded, and generated files show it safely) or "name" (`NAME_FIELDS`: validate refuses a
    hostile name at its place). Either way validate ends with a verdict and, when clean,
    generate succeeds and writes only safe files."""
    spec = copy.deepcopy(draw(node_specs(**kwargs)))
    kind = draw(st.sampled_from(("text", "name")), label="kind")
    fields = [p for p in (TEXT_FIELDS if kind == "text" else NAME_FIELDS) if _set(copy.deepcopy(spec), p, "x")]
    path = draw(st.sampled_from(fields), label="field")
    _set(spec, path, draw(hostile_texts(), label="text"))
    return path, kind, spec


@st.composite
def hostile_cluster_specs(draw: st.DrawFn, /, **kwargs: Any) -> tuple[Path_, ClusterFiles]:
    """`(path, files)`: a valid `cluster_specs(**kwargs)` cluster with hostile text in its title,
    a host name pattern, an address pattern or its node platform path."""
    files = draw(cluster_specs(**kwargs))
    cluster = copy.deepcopy(files.cluster)
    path = draw(st.sampled_from((("title",), ("nodes", 0, "hostname"), ("nodes", 0, "address"), ("nodes", 0, "platform"))),
                label="field")
    _set(cluster, path, draw(hostile_texts(), label="text"))
    return path, ClusterFiles(cluster, files.node)


# ------------------------------------------------------------------ inputs of `hwspec import` / `hwspec diff`

IMPORT_FORMATS = ("nccl", "topo-m", "lstopo", "smi-xml")
"""The input formats `hostile_import_inputs()` writes (`hwspec import --input-format` names)."""

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_XML_ATTRIBUTE = {'"': "&quot;", "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}
_TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""The terminal escapes the `topo -m` reader strips from its input (headers may be underlined)."""


@dataclass(frozen=True)
class ImportInput:
    """A minimal input file of `hwspec import`/`diff` in `format`, written twice: with hostile
    text in its free-text fields (`data`, saved under the hostile file `name`) and with a benign
    placeholder in each of those places (`benign_data`, `benign_name`).

    `texts` pairs each placeholder with the hostile text at its place, as the reader reads it
    back. Invariant: both files parse with no error, into machines that differ only in those
    texts (and the file name); every placeholder is unique and appears nowhere else."""

    format: str
    name: bytes
    data: bytes
    benign_name: bytes
    benign_data: bytes
    texts: tuple[tuple[str, str], ...]


def _xml_attribute(text: str) -> str:
    """`text` as the inside of a double-quoted XML attribute that reads back as itself."""
    return xml_escape(text, _XML_ATTRIBUTE)


def _xml_text(text: str) -> str:
    """`text` without the characters XML 1.0 cannot hold (NUL, most C0 controls, surrogates)."""
    return _NOT_XML.sub("", text)


def _xml_element_text(text: str) -> str:
    """`text` as the content of an element reads back: XML's characters, without the trailing
    white space a pretty-printed file's reader strips."""
    return _xml_text(text).rstrip()


def _matrix_cell_text(text: str) -> str:
    """`text` as one cell of `topo -m` reads it: no whitespace (cells are split at tabs and
    runs of spaces, lines at every line break), no terminal escape, no surrogate."""
    text = "".join(c for c in text if not c.isspace() and not 0xD800 <= ord(c) <= 0xDFFF)
    while _TERMINAL_ESCAPE.search(text):
        text = _TERMINAL_ESCAPE.sub("", text)
    return text


_NCCL = """<system version="1">
  <cpu numaid="0" affinity="0000ffff" arch="{arch}" vendor="GenuineIntel" familyid="6" modelid="85">
    <pci busid="0000:11:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
      <pci busid="0000:14:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="80" rank="0" gdr="1"><nvlink target="0000:1c:00.0" count="12" tclass="0x030200"/></gpu>
      </pci>
      <pci busid="0000:16:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="16">
        <nic><net name="{nic0}" dev="0" speed="200000" port="1" gdr="1"/></nic>
      </pci>
      <pci busid="0000:1c:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16">
        <gpu dev="1" sm="80" rank="1" gdr="1"><nvlink target="0000:14:00.0" count="6" tclass="0x030200"/></gpu>
      </pci>
      <pci busid="0000:1e:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="16">
        <nic><net name="{nic1}" dev="1" speed="200000" port="1" gdr="1"/></nic>
      </pci>
    </pci>
  </cpu>
</system>
"""
"""Two GPUs and two NICs on one switch; the NVLink counts disagree, so the draft has a note
naming the file."""

_TOPO_M = ("\tGPU0\tGPU1\tNIC0\t{column}\tCPU Affinity\tNUMA Affinity\n"
           "GPU0\t X \tNV12\tPIX\tPIX\t0-15\t0\n"
           "GPU1\tNV6\t X \tPIX\tPIX\t0-15\t0\n"
           "NIC0\tPIX\tPIX\t X \tPIX\n"
           "{column}\tPIX\tPIX\tPIX\t X \n"
           "\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: {nic0}\n")
"""The same machine as `_NCCL`; the second NIC's column has no legend (its device name is a
placeholder), so its hostile header text reaches only the messages."""

_LSTOPO = """<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000ffff" nodeset="0x00000001" gp_index="1">
    <info name="Architecture" value="{arch}"/>
    <object type="Package" os_index="0" cpuset="0x0000ffff" nodeset="0x00000001" gp_index="2">
      <info name="CPUVendor" value="GenuineIntel"/>
      <info name="CPUFamilyNumber" value="6"/>
      <info name="CPUModelNumber" value="250"/>
      <info name="CPUModel" value="{cpu_model}"/>
      <object type="NUMANode" os_index="0" cpuset="0x0000ffff" nodeset="0x00000001" gp_index="3" local_memory="274877906944"/>
      <object type="Bridge" gp_index="4">
        <object type="Bridge" gp_index="5" pci_busid="0000:11:00.0" pci_type="0604 [8086:2030] [0000:0000] 00" pci_link_speed="31.507692">
          <object type="PCIDev" gp_index="6" pci_busid="0000:14:00.0" pci_type="0302 [10de:fff0] [10de:0000] a1" pci_link_speed="31.507692">
            <object type="OSDev" gp_index="7" name="cuda0" osdev_type="5"><info name="GPUModel" value="{gpu_model}"/></object>
          </object>
          <object type="PCIDev" gp_index="8" pci_busid="0000:16:00.0" pci_type="0200 [15b3:101b] [15b3:0000] 00" pci_link_speed="31.507692">
            <object type="OSDev" gp_index="9" name="{interface}" osdev_type="2"/>
            <object type="OSDev" gp_index="10" name="{nic0}" osdev_type="3"/>
          </object>
        </object>
      </object>
    </object>
  </object>
</topology>
"""
"""A GPU and a CPU the parts catalogue does not know (their model names reach the draft as
`override: {model_name}`) and a RoCE NIC with its RDMA device and network interface."""

_SMI = """<?xml version="1.0" ?>
<nvidia_smi_log>
  <attached_gpus>1</attached_gpus>
  <gpu id="00000000:14:00.0">
    <product_name>{gpu_model}</product_name>
    <pci>
      <pci_device_id>FFF010DE</pci_device_id>
      <pci_bus_id>00000000:14:00.0</pci_bus_id>
      <pci_gpu_link_info>
        <pcie_gen><max_link_gen>4</max_link_gen></pcie_gen>
        <link_widths><max_link_width>16x</max_link_width></link_widths>
      </pci_gpu_link_info>
    </pci>
  </gpu>
</nvidia_smi_log>
"""
"""`nvidia-smi -q -x` of a GPU the parts catalogue does not know: NVML's product name reaches
the draft as `override: {model_name}`."""

_FIELDS: dict[str, tuple[str, dict[str, str], Callable[[str], str], Callable[[str], str]]] = {
    "nccl": (_NCCL, {"arch": "x86_64-", "nic0": "mlx5_x", "nic1": "mlx5_x"}, _xml_text, _xml_attribute),
    "topo-m": (_TOPO_M, {"column": "NICx", "nic0": "mlx5_x"}, _matrix_cell_text, str),
    "lstopo": (_LSTOPO, {"arch": "x86_64-", "cpu_model": "CPU ", "gpu_model": "GPU ", "interface": "eth_x",
                         "nic0": "mlx5_x"}, _xml_text, _xml_attribute),
    "smi-xml": (_SMI, {"gpu_model": "GPU-"}, _xml_element_text, _xml_attribute),
}
"""Per format: the template, its free-text fields with the prefix that keeps each in its role
(an RDMA device name starts like one), what of a text the format can hold, how it is written."""


@st.composite
def hostile_import_inputs(draw: st.DrawFn, formats: tuple[str, ...] = IMPORT_FORMATS) -> ImportInput:
    """An `ImportInput` in one of `formats`: `hostile_texts()` in every free-text field that
    reaches the draft (NIC device and interface names, CPU architecture, CPU and GPU model
    names, a `topo -m` column header) and a `hostile_names()` file name."""
    fmt = draw(st.sampled_from(formats), label="format")
    template, prefixes, readable, written = _FIELDS[fmt]
    hostile: dict[str, str] = {}
    benign: dict[str, str] = {}
    texts = []
    for position, (field_name, prefix) in enumerate(prefixes.items()):
        text = readable(draw(hostile_texts(), label=field_name))
        placeholder = f"benign{position}z"
        hostile[field_name], benign[field_name] = written(prefix + text), prefix + placeholder
        texts.append((placeholder, text))
    return ImportInput(fmt, draw(hostile_names(), label="file name"), template.format(**hostile).encode(),
                       b"benign-input", template.format(**benign).encode(), tuple(texts))
