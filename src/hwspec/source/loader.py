"""Safe YAML loading that remembers where every mapping key and every value came from.

The data is built by hand from PyYAML's composed node graph (never `yaml.load`), so only plain
data can come out: dict / list / str / int / float / bool / None. Loading works in three steps:

1. compose (one pass of PyYAML's parser): syntax errors, nesting deeper than MAX_DEPTH and
   recursive aliases stop everything here, so each is reported alone; a second document does not;
2. check every node of the graph once (aliases share nodes, so this is cheap even for a
   'billion laughs' file): tags, scalar values, values YAML 1.1 and 1.2 read differently
   (`hwspec.source.yaml_versions`), non-string and duplicate keys, merge keys, and the size and
   depth the data would have once aliases are expanded; all problems are collected;
3. build the data, recording the 1-based position of every key and value by path.
"""

from __future__ import annotations

import os
import pathlib
import re
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity, display_path, os_reason
from hwspec.source import yaml_versions

Path_ = tuple[str | int, ...]

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_NODES = 100_000  # nodes after alias expansion
MAX_DEPTH = 64  # nesting depth of collections (the top-level mapping is depth 1)

_Y = "tag:yaml.org,2002:"
STR, SEQ, MAP, MERGE = _Y + "str", _Y + "seq", _Y + "map", _Y + "merge"
# The SafeConstructor method for each scalar tag; a `<<` that is not a mapping key is the string "<<".
_SCALARS = {STR: "str", _Y + "int": "int", _Y + "float": "float", _Y + "bool": "bool", _Y + "null": "null",
            MERGE: "str"}
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_KINDS = {ScalarNode: "scalar", SequenceNode: "list", MappingNode: "mapping"}
_TAGS = {"scalar": _SCALARS, "list": {SEQ}, "mapping": {MAP}}  # the tags each kind of node may have
_PLAIN = "platform files are plain data; remove the tag"
_SURROGATE = re.compile("[\ud800-\udfff]")
_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")  # the line breaks PyYAML counts


@dataclass(frozen=True, slots=True)
class SourceDoc:
    """A loaded platform file: plain data plus where each key and value starts in the file.

    Invariants: `data` is a dict with str keys all the way down, holding only dict / list / str /
    int / float / bool / None, as a tree (aliases are expanded into copies, nothing is shared);
    every path into `data` has a value position, and every non-empty path a key position. The
    root value is the whole file, at 1:1. Values that came through an alias (`x: *a`) are at the
    alias; the keys and values inside it (and keys brought in by `<<` merges) are where the
    anchored text is.
    """

    file: str
    data: dict[str, Any]
    _values: dict[Path_, Location] = field(default_factory=dict, repr=False, compare=False)
    _keys: dict[Path_, Location] = field(default_factory=dict, repr=False, compare=False)

    def value_position(self, path: Path_) -> Location:
        """Where the value at `path` starts; KeyError if there is no value at `path`."""
        path = tuple(path)
        if not path:
            return Location(self.file, 1, 1)
        if path not in self._values:
            raise KeyError(f"{self.file}: no value at {path!r}")
        return self._values[path]

    def key_position(self, path: Path_) -> Location:
        """Where the key naming `path[-1]` starts (for a list index: where the item starts)."""
        path = tuple(path)
        if path not in self._keys:
            raise KeyError(f"{self.file}: no key at {path!r}")
        return self._keys[path]

    def locate_key(self, path: Path_) -> Location:
        """The key position of `path` when there is one, else `locate(path)`. Never raises."""
        return self._keys.get(tuple(path)) or self.locate(path)

    def locate(self, path: Path_) -> Location:
        """The value position of `path`, else of its longest known prefix, else 1:1. Never raises."""
        path = tuple(path)
        for end in range(len(path), 0, -1):
            if path[:end] in self._values:
                return self._values[path[:end]]
        return Location(self.file, 1, 1)


def read_regular_file(path: pathlib.Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `limit` bytes.

    A FIFO, socket, device or directory is refused before it is opened for reading (reading
    one would block forever or never end), and again on the open descriptor (the path may
    have been swapped in between); the file is opened non-blocking and read up to `limit`.
    Raises HwspecError (E100 unreadable, E101 too large)."""
    def refuse(message: str) -> HwspecError:
        return HwspecError([_error(display_path(path), None, Code.CANNOT_READ_FILE, message)])

    if "\x00" in os.fspath(path):
        raise refuse("cannot read file: the path holds a NUL character")
    try:
        kind = _file_kind(os.stat(path).st_mode)
        if kind:
            raise refuse(f"cannot read file: it is {kind}, not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as stream:
            info = os.fstat(stream.fileno())
            kind = _file_kind(info.st_mode)
            if kind:
                raise refuse(f"cannot read file: it is {kind}, not a regular file")
            if info.st_size > limit:
                raise HwspecError([_too_big(display_path(path), info.st_size)])
            raw = stream.read(limit + 1)
    except OSError as e:
        raise refuse(f"cannot read file: {os_reason(e)}") from None
    if len(raw) > limit:
        raise HwspecError([_too_big(display_path(path), len(raw))])
    return raw


def _file_kind(mode: int) -> str | None:
    """None for a regular file, else what it is ("a FIFO", "a directory", ...)."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def load_yaml_file(path: pathlib.Path) -> SourceDoc:
    """Read and load a platform file: a regular file, its size checked before it is read."""
    path = pathlib.Path(path)
    return load_yaml_text(read_regular_file(path), display_path(path))


def load_yaml_text(text: str | bytes, file: str) -> SourceDoc:
    """Load one platform document from `text` (bytes must be UTF-8); raise HwspecError on any problem."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_FILE_BYTES:
        raise HwspecError([_too_big(file, len(raw))])
    if isinstance(text, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            prefix = raw[: e.start].decode("utf-8")
            message = f"file is not valid UTF-8 (byte 0x{raw[e.start]:02x})"
            at = _location_at(file, prefix, len(prefix))
            raise HwspecError([_error(file, at, Code.NOT_UTF8, message, "save the file as UTF-8")]) from None
    try:
        return _Load(text, file).run()
    except RecursionError:  # not expected: compose stops at MAX_DEPTH, and checking is iterative
        raise HwspecError([_error(file, None, Code.NESTING_TOO_DEEP, _TOO_DEEP)]) from None


def _error(file: str, where: Location | _Mark | None, code: Code, message: str, hint: str | None = None) -> Diagnostic:
    """An error diagnostic at a Location in `file`, a (0-based) PyYAML mark, or (None) 1:1."""
    at = where if isinstance(where, Location) else _location(file, where)
    return Diagnostic(file, at.line, at.col, Severity.ERROR, code, message, hint)


def _too_big(file: str, size: int) -> Diagnostic:
    limit = MAX_FILE_BYTES // 2**20
    message = f"file is {size / 2**20:.1f} MiB, larger than the {limit} MiB limit for a platform file"
    return _error(file, None, Code.FILE_TOO_LARGE, message)


def _location(file: str, mark: _Mark | None) -> Location:
    """Where the (0-based) PyYAML `mark` is in `file`; 1:1 for None."""
    return Location(file, mark.line + 1, mark.column + 1) if mark is not None else Location(file, 1, 1)


_TOO_DEEP = f"nesting is deeper than {MAX_DEPTH} levels"
_TOO_BIG_HINT = "a platform file this large is almost certainly a mistake (or a 'billion laughs' document)"


def _location_at(file: str, text: str, index: int) -> Location:
    """Where character `index` of `file`'s `text` is."""
    line, start = 1, 0
    for m in _BREAK.finditer(text, 0, index):
        line, start = line + 1, m.end()
    return Location(file, line, index - start + 1)


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_Y):] if tag.startswith(_Y) else tag


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return node.value if isinstance(node, SequenceNode) else []


if TYPE_CHECKING:
    from yaml._yaml import Mark as _CMark

    _Mark = yaml.Mark | _CMark
    """A position as PyYAML's pure-Python or libyaml parser gives it (0-based line and column)."""

    class _Composing(yaml.parser.Parser, yaml.composer.Composer):
        """What `_Hooks` is mixed into (a PyYAML composer over a parser), for the type checker,
        with the parser's methods typed as PyYAML and libyaml's parsers both define them."""

        def peek_event(self) -> yaml.Event: ...
        def get_event(self) -> yaml.Event: ...
else:
    _Composing = object


class _Hooks(_Composing):
    """SafeLoader resolution minus timestamps (they stay strings) and the odd `=` value tag.

    `compose_node` is wrapped to stop at MAX_DEPTH (PyYAML composes recursively), to refuse an
    alias inside its own anchor, and to remember where each alias was written.
    """

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in (_Y + "timestamp", _Y + "value")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def _hooks_init(self, file: str) -> None:
        self.file, self.depth, self.composed = file, 0, 0
        self.open_anchors: set[str] = set()
        self.alias_marks: dict[tuple[int, int, bool], _Mark] = {}  # (id(parent), item index, is key)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        """`index` is an item's index, its key node, or None for a key (PyYAML's own use; the
        stubs say int)."""
        event = self.peek_event()
        if not isinstance(event, yaml.AliasEvent):
            # the written nodes alone are too many: stop now, not after composing 4 MiB of them
            self.composed += 1
            if self.composed > MAX_NODES:
                message = f"the file has more than {MAX_NODES} nodes (keys, values and list items)"
                raise HwspecError([_error(self.file, event.start_mark, Code.EXPANSION_TOO_LARGE, message, _TOO_BIG_HINT)])
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self.open_anchors:
                name = event.anchor
                message = f"alias '*{name}' is inside its own anchor '&{name}', so it would expand forever"
                raise HwspecError([_error(self.file, event.start_mark, Code.EXPANSION_TOO_LARGE, message)])
            node = super().compose_node(parent, index)
            if parent is not None and event.start_mark is not None:
                self.alias_marks[(id(parent), len(parent.value), index is None)] = event.start_mark
            return node
        if not isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise HwspecError([_error(self.file, event.start_mark, Code.NESTING_TOO_DEEP, _TOO_DEEP)])
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        node = super().compose_node(parent, index)
        self.open_anchors.discard(event.anchor)
        self.depth -= 1
        return node


class _ImplicitTags(_Hooks, yaml.resolver.BaseResolver):
    """The tag `_Hooks`' resolution gives a plain scalar by its text alone (no explicit tag)."""

    def tag_of(self, text: str) -> str:
        tag: str = self.resolve(ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
        return tag


_IMPLICIT_TAGS = _ImplicitTags()
_SEVERITY_OFF = ("severity", "off")
"""A rule setting's `severity: off`, written bare (docs/site-rules.md): read as the text off, as YAML 1.2
reads it, not as YAML 1.1's false (`hwspec.spec.checks.off_is_off` takes that too)."""


class _Loader(_Hooks, yaml.SafeLoader):
    """The reference loader: PyYAML's pure-Python scanner and parser. Every diagnostic about
    the YAML itself (syntax, characters) comes from it."""

    def __init__(self, text: str, file: str):
        yaml.SafeLoader.__init__(self, text)
        self._hooks_init(file)


try:
    from yaml._yaml import CParser as _CParser  # PyYAML built with libyaml (what yaml.cyaml wraps)
    HAS_LIBYAML = True
except ImportError:  # pragma: no cover - pure-Python PyYAML: the reference loader alone
    HAS_LIBYAML = False


if HAS_LIBYAML:
    class _FastLoader(_Hooks, yaml.composer.Composer, _CParser, yaml.resolver.Resolver):
        """libyaml's scanner and parser (PyYAML's CParser events, same marks) under the same
        Python composer and hooks: the node graph is the one `_Loader` builds, several times
        faster. Used first; any YAML error makes `_Load` compose again with `_Loader`, so
        messages never depend on which parser ran."""

        def __init__(self, text: str, file: str):
            _CParser.__init__(self, text)
            yaml.resolver.Resolver.__init__(self)
            self.anchors = {}
            self._hooks_init(file)


class _Load:
    """One load: compose, check every node once, then build the data and its positions."""

    def __init__(self, text: str, file: str):
        self.text, self.file = text, file
        self.problems: list[Diagnostic] = []
        self.scalars: dict[int, object] = {}  # id(ScalarNode) -> its value
        self.alias_marks: dict[tuple[int, int, bool], _Mark] = {}
        self.values: dict[Path_, Location] = {}
        self.keys: dict[Path_, Location] = {}

    def error(self, where: Location | _Mark | None, code: Code, message: str, hint: str | None = None) -> None:
        self.problems.append(_error(self.file, where, code, message, hint))

    def run(self) -> SourceDoc:
        root = self.compose()
        if root is None or (isinstance(root, ScalarNode) and root.tag == _Y + "null" and root.value == ""):
            self.error(None, Code.NOT_A_PLATFORM_DOCUMENT, "file is empty")
            raise HwspecError(self.problems)
        self.check(root)
        if not isinstance(root, MappingNode):
            # the file may be anything (a cluster's `platform:` names a path): say what it
            # holds, never the text itself
            got = self.describe(root)
            if isinstance(root, ScalarNode) and isinstance(self.scalars.get(id(root), root.value), str):
                got = f"a string of {len(root.value)} characters (not shown)"
            message = f"a platform file must be a mapping of keys to values, got {got}"
            self.error(root.start_mark, Code.NOT_A_PLATFORM_DOCUMENT, message)
        if self.problems:
            raise HwspecError(self.problems)
        return SourceDoc(self.file, self.build(root, ()), self.values, self.keys)

    def compose(self) -> Node | None:
        if HAS_LIBYAML:
            before = len(self.problems)
            try:
                return self._compose_with(_FastLoader)
            except (yaml.YAMLError, UnicodeError, ValueError):
                del self.problems[before:]  # let the reference parser say what is wrong
        return self._compose(_Loader)

    def _compose_with(self, loader_class: type[_Loader] | type[_FastLoader]) -> Node | None:
        """Compose with `loader_class`; YAML errors propagate as PyYAML raises them."""
        loader = loader_class(self.text, self.file)
        try:
            loader.get_event()  # stream start
            if loader.check_event(yaml.StreamEndEvent):
                return None
            root = loader.compose_document()
            if not loader.check_event(yaml.StreamEndEvent):
                self.error(loader.peek_event().start_mark, Code.INVALID_YAML,
                           "a platform file holds one YAML document; found a second one",
                           "put each platform in its own file")
            self.alias_marks = loader.alias_marks
            return root
        finally:
            loader.dispose()

    def _compose(self, loader_class: type[_Loader]) -> Node | None:
        try:
            return self._compose_with(loader_class)
        except yaml.reader.ReaderError as e:
            code = e.character if isinstance(e.character, int) else ord(e.character)  # an int for str input
            hint = "a NUL character means this is probably not a text file" if code == 0 else None
            message = f"file contains the character U+{code:04X}, which YAML does not allow"
            at = _location_at(self.file, self.text, e.position)
            raise HwspecError([_error(self.file, at, Code.NOT_UTF8, message, hint)]) from None
        except yaml.MarkedYAMLError as e:
            raise HwspecError([self.syntax_error(e)]) from None

    def syntax_error(self, e: yaml.MarkedYAMLError) -> Diagnostic:
        mark = e.problem_mark or e.context_mark
        context = _location(self.file, e.context_mark)
        message, hint = f"invalid YAML: {e.problem or e.context}", None
        if e.context and e.problem:
            where = f" at line {context.line}, column {context.col}" if e.context_mark else ""
            message += f" ({e.context}{where})"
        if e.context and e.context.startswith("found duplicate anchor"):  # "...; first occurrence"
            anchor = e.context.split(";")[0]
            message = f"invalid YAML: {anchor} (first defined at line {context.line}, column {context.col})"
            hint = "give each anchor its own name"
        elif (e.problem or "").startswith("found undefined alias"):
            hint = "define the anchor ('&name') before using it ('*name')"
        elif mark is not None and "\t" in (_BREAK.split(self.text) + [""])[mark.line][: mark.column + 1]:
            hint = "YAML indentation must use spaces, not tabs"
        elif mark is not None and "${" in (_BREAK.split(self.text) + [""])[mark.line] and "flow" in (e.context or ""):
            hint = "inside {...} or [...], quote values that contain ${...}: upstream: \"sw${g//2}\""
        return _error(self.file, mark, Code.INVALID_YAML, message, hint)

    def check(self, root: Node) -> None:
        """Check each node once, children first, and compute expanded sizes and depths."""
        size: dict[int, int] = {}
        height: dict[int, int] = {}  # collections on the longest downward path, expanded
        seen, stack = {id(root)}, [(root, iter(_children(root)))]
        while stack:  # iterative: alias chains can make the expanded graph deeper than the stack
            node, todo = stack[-1]
            child = next(todo, None)
            if child is not None:
                if id(child) not in seen:  # compose guarantees no cycles, so seen means done
                    seen.add(id(child))
                    if type(child) is ScalarNode:  # a leaf: done at once
                        size[id(child)], height[id(child)] = 1, 0
                        self.check_node(child)
                    else:
                        stack.append((child, iter(_children(child))))
                continue
            stack.pop()
            kids = _children(node)
            size[id(node)] = 1 + sum(size[id(k)] for k in kids)
            below = max((height[id(k)] for k in kids), default=0)
            height[id(node)] = below + (not isinstance(node, ScalarNode))
            self.check_node(node)
        if size[id(root)] > MAX_NODES:  # point at the smallest piece that is already too large
            node = root
            while bigger := [k for k in _children(node) if size[id(k)] > MAX_NODES]:
                node = bigger[0]
            hint = _TOO_BIG_HINT
            message = f"anchors and aliases expand to more than {MAX_NODES} nodes"
            self.error(node.start_mark, Code.EXPANSION_TOO_LARGE, message, hint)
        if height[id(root)] > MAX_DEPTH:  # only reachable through aliases; compose caught the rest
            node = root
            for _ in range(MAX_DEPTH):
                node = max(_children(node), key=lambda k: height[id(k)])
            self.error(node.start_mark, Code.NESTING_TOO_DEEP, _TOO_DEEP)

    def check_encodable(self, node: Node, value: object) -> None:
        """A string must be writable as UTF-8: a `"\\ud800"` escape makes a lone surrogate,
        which no generated file (and no terminal) can hold."""
        surrogate = _SURROGATE.search(value) if isinstance(value, str) else None
        if isinstance(value, str) and surrogate:
            at = surrogate.start()
            self.error(node.start_mark, Code.STRING_NOT_ENCODABLE,
                       f"string has a lone surrogate (U+{ord(value[at]):04X}) at character {at + 1}: it cannot be "
                       "written as UTF-8", "write the character itself, or a \\U escape for characters beyond U+FFFF")

    def check_node(self, node: Node) -> None:
        if node.tag == STR and type(node) is ScalarNode:  # the usual node: a string is its own text
            self.scalars[id(node)] = node.value
            if not node.value.isascii():  # only non-ASCII text can hold a surrogate
                self.check_encodable(node, node.value)
            return
        kind, name = _KINDS[type(node)], _tag_name(node.tag)
        if node.tag not in _TAGS[kind]:
            message = f"unsupported YAML tag '{name}'"
            if any(node.tag in tags for tags in _TAGS.values()):
                message = f"YAML tag '{name}' cannot be used on a {kind}"
            self.error(node.start_mark, Code.INVALID_YAML, message, _PLAIN)
        elif kind == "scalar":
            try:
                self.scalars[id(node)] = getattr(_CONSTRUCTOR, "construct_yaml_" + _SCALARS[node.tag])(node)
            except (ValueError, KeyError, IndexError, TypeError):  # explicit tags (`!!int x`), huge ints
                self.error(node.start_mark, Code.INVALID_YAML, f"cannot read {_short(node.value)} as {name}")
            else:
                self.check_encodable(node, self.scalars[id(node)])
        if isinstance(node, MappingNode):
            self.check_keys(node)
        elif isinstance(node, SequenceNode):
            for item in node.value:
                self.check_version(item)

    def check_version(self, node: Node, key: object = None) -> None:
        """Refuse a plain scalar value that YAML 1.1 (PyYAML, hwspec's reader) and YAML 1.2
        (editors, the JSON Schema) read differently: `010`, `1:30`, `yes`, `1e3`. Keys are left
        to `check_keys` (a key must be text in both)."""
        if type(node) is not ScalarNode or node.style or id(node) not in self.scalars:  # libyaml: style "", PyYAML: None
            return
        text = node.value
        if not text or text[0] not in yaml_versions.MAY_DIFFER_FIRST or _IMPLICIT_TAGS.tag_of(text) != node.tag:
            return  # not a number or boolean word, or an explicit tag (`!!str 010`) says what it is
        if (key, text) == _SEVERITY_OFF:
            self.scalars[id(node)] = "off"
            return
        found = yaml_versions.conflict(text, self.scalars[id(node)])
        if found is not None:
            self.error(node.start_mark, Code.WRONG_VALUE, *found)

    def check_keys(self, node: MappingNode) -> None:
        first: dict[str, Node] = {}
        first_merge = None
        for key_node, value_node in node.value:
            self.check_version(value_node, self.scalars.get(id(key_node)))
            if key_node.tag == MERGE:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                if not all(isinstance(s, MappingNode) for s in sources):
                    self.error(value_node.start_mark, Code.INVALID_YAML, "a merge key '<<' needs a mapping or a list of "
                               "mappings", "write '<<: *anchor' or '<<: [*one, *two]'")
                if first_merge is not None:
                    hint = "merge several mappings with '<<: [*one, *two]'"
                    self.duplicate(key_node, "<<", first_merge, hint)
                first_merge = first_merge or key_node
                continue
            if isinstance(key_node, ScalarNode) and id(key_node) not in self.scalars:
                continue  # its tag or value is already reported
            key = self.scalars.get(id(key_node))
            if not isinstance(key, str):
                message = f"mapping keys must be strings, got {self.describe(key_node)}"
                self.error(key_node.start_mark, Code.NON_STRING_KEY, message, self.key_hint(key_node, key))
            elif key in first:
                self.duplicate(key_node, key, first[key])
            else:
                first[key] = key_node

    def duplicate(self, node: Node, key: str, earlier: Node, hint: str | None = None) -> None:
        at = _location(self.file, earlier.start_mark)
        message = f"duplicate key {key!r} (first defined at line {at.line}, column {at.col})"
        self.error(node.start_mark, Code.DUPLICATE_KEY, message, hint)

    def describe(self, node: Node) -> str:
        if not isinstance(node, ScalarNode):
            return f"a {_KINDS[type(node)]}"
        value = self.scalars.get(id(node), node.value)
        if value is None:
            return "null"
        if isinstance(value, bool):
            return f"the boolean {node.value!r}"
        if isinstance(value, (int, float)):
            return f"the {'integer' if isinstance(value, int) else 'number'} {node.value}"
        return f"the string {_short(str(value))}"

    @staticmethod
    def key_hint(node: Node, key: object) -> str:
        if not isinstance(node, ScalarNode):
            return "use a plain name as the key"
        if node.value == "":
            return "give the key a name"
        if isinstance(key, bool) and node.value.lower() in ("yes", "no", "on", "off"):
            return f"{node.value!r} is read as a boolean in YAML 1.1; quote it"
        return "quote the key: '" + str(node.value).replace("'", "''") + "':"

    def item_location(self, owner: Node, index: int, is_key: bool, node: Node) -> Location:
        """Where item `index` of `owner` (its key, or its value) is written: at the alias when it
        is one, else where `node` starts."""
        return _location(self.file, self.alias_marks.get((id(owner), index, is_key), node.start_mark))

    def pairs(self, node: MappingNode) -> dict[str, tuple[Node, Node, Node, int]]:
        """key -> (key node, value node, owning mapping, index): merged keys first, explicit keys win."""
        merged: dict[str, tuple[Node, Node, Node, int]] = {}
        explicit: dict[str, tuple[Node, Node, Node, int]] = {}
        for index, (key_node, value_node) in enumerate(node.value):
            if key_node.tag != MERGE:
                key = self.scalars[id(key_node)]
                assert isinstance(key, str)  # build() runs only when check_keys found every key a string
                explicit[key] = (key_node, value_node, node, index)
                continue
            for source in value_node.value if isinstance(value_node, SequenceNode) else [value_node]:
                assert isinstance(source, MappingNode)  # check_keys refused any other merge source
                for key, item in self.pairs(source).items():
                    merged.setdefault(key, item)  # earlier sources take precedence
        return {**merged, **explicit}

    def build(self, node: Node, path: Path_) -> Any:
        """The Python value of `node` at `path` (scalars as checked, lists, dicts), recording
        where every key and value under it is written."""
        if isinstance(node, ScalarNode):
            return self.scalars[id(node)]
        if isinstance(node, SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                here = path + (index,)
                self.keys[here] = self.values[here] = self.item_location(node, index, False, item)
                items.append(self.build(item, here))
            return items
        assert isinstance(node, MappingNode)
        mapping = {}
        for key, (key_node, value_node, owner, index) in self.pairs(node).items():
            here = path + (key,)
            self.keys[here] = self.item_location(owner, index, True, key_node)
            self.values[here] = self.item_location(owner, index, False, value_node)
            mapping[key] = self.build(value_node, here)
        return mapping
