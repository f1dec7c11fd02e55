"""Hostile text: pieces that break a file syntax or a reader, and valid specs carrying them in a
field that reaches an output (`hostile_node_specs()`, `hostile_cluster_specs()`)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from hwspec.testing.clusters import ClusterFiles, cluster_specs
from hwspec.testing.faults import Path_
from hwspec.testing.nodes import node_specs

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


def hostile_env_values() -> st.SearchStrategy[Any]:
    """What YAML may put under an `environment:` name: hostile text, integers, floats (NaN and
    infinities included), booleans."""
    return hostile_texts() | st.integers() | st.floats() | st.booleans()


def hostile_environments(max_size: int = 4) -> st.SearchStrategy[dict[str, Any]]:
    """An `environment:` mapping of 1-`max_size` entries: names that must be refused
    (`DANGEROUS_ENV_NAMES`), vendor tunables, any variable-shaped name, or hostile text; values
    from `hostile_env_values()` or a tunable's plain value."""
    from hwspec.testing.nodes import ENVIRONMENT_SETTINGS

    names = (st.sampled_from(DANGEROUS_ENV_NAMES) | st.sampled_from(sorted(ENVIRONMENT_SETTINGS))
             | st.from_regex(r"[A-Z_][A-Z0-9_]{0,20}", fullmatch=True) | hostile_texts())
    values = hostile_env_values() | st.sampled_from(("22", "4", "rc", "mlx5_0:1", "^lo,docker"))
    return st.dictionaries(names, values, min_size=1, max_size=max_size)


@st.composite
def hostile_environment_specs(draw, **kwargs: Any) -> tuple[dict[str, Any], dict]:
    """`(environment, spec)`: a valid `node_specs(**kwargs)` spec whose `environment:` is
    `environment` (from `hostile_environments()`). Validate refuses it at its place (HW702 for a
    name the policy refuses, E110 for a malformed name or value), or every name is a tunable and
    generated launch.env sets exactly the values written."""
    spec = copy.deepcopy(draw(node_specs(**kwargs)))
    environment = draw(hostile_environments(), label="environment")
    spec["environment"] = environment
    return environment, spec


def _set(spec: dict, path: Path_, value: Any) -> bool:
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
def hostile_node_specs(draw, **kwargs: Any) -> tuple[Path_, str, dict]:
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
def hostile_cluster_specs(draw, **kwargs: Any) -> tuple[Path_, ClusterFiles]:
    """`(path, files)`: a valid `cluster_specs(**kwargs)` cluster with hostile text in its title,
    a host name pattern, an address pattern or its node platform path."""
    files = draw(cluster_specs(**kwargs))
    cluster = copy.deepcopy(files.cluster)
    path = draw(st.sampled_from((("title",), ("nodes", 0, "hostname"), ("nodes", 0, "address"), ("nodes", 0, "platform"))),
                label="field")
    _set(cluster, path, draw(hostile_texts(), label="text"))
    return path, ClusterFiles(cluster, files.node)
