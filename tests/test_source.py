"""Tests for hwspec.source.loader: the safe YAML loader that keeps positions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hwspec.diagnostics import HwspecError, Location
from hwspec.source.dumper import dump_yaml
from hwspec.source.loader import MAX_DEPTH, MAX_FILE_BYTES, SourceDoc, load_yaml_file, load_yaml_text
from tests.examples import pinned

FIXTURES = Path(__file__).parent / "fixtures" / "source"


@pytest.fixture(autouse=True)
def _in_fixtures(monkeypatch):
    """Run from the fixture directory so messages show plain file names."""
    monkeypatch.chdir(FIXTURES)


def errors(source: str | bytes | Path) -> str:
    """The full formatted text of the HwspecError that loading `source` raises."""
    with pytest.raises(HwspecError) as info:
        if isinstance(source, Path):
            load_yaml_file(source)
        else:
            load_yaml_text(source, "p.yaml")
    return str(info.value)


# --- positions ------------------------------------------------------------------------------


def test_positions_of_keys_and_values_at_several_depths():
    doc = load_yaml_file(Path("positions.yaml"))
    assert doc.file == "positions.yaml"
    assert doc.data == {
        "name": "zion",
        "gpus": [
            {"model": "H100", "pcie": {"switch": "sw0", "gen": 5}, "memory_gb": 80},
            {"model": "H100", "pcie": {"switch": "sw1"}},
        ],
        "nics": ["mlx0", "mlx1"],
        "notes": "free text\n",
        "empty": None,
    }
    expected = {  # path: (key position, value position)
        ("name",): ((2, 1), (2, 7)),
        ("gpus",): ((3, 1), (4, 3)),
        ("gpus", 0): ((4, 5), (4, 5)),
        ("gpus", 0, "model"): ((4, 5), (4, 12)),
        ("gpus", 0, "pcie"): ((5, 5), (5, 11)),  # flow mapping
        ("gpus", 0, "pcie", "switch"): ((5, 12), (5, 20)),
        ("gpus", 0, "pcie", "gen"): ((5, 25), (5, 30)),
        ("gpus", 0, "memory_gb"): ((6, 5), (6, 16)),
        ("gpus", 1, "model"): ((7, 5), (7, 12)),  # a quoted value starts at its quote
        ("gpus", 1, "pcie"): ((8, 5), (9, 7)),
        ("gpus", 1, "pcie", "switch"): ((9, 7), (9, 15)),
        ("nics", 0): ((10, 8), (10, 8)),  # flow list items
        ("nics", 1): ((10, 14), (10, 14)),
        ("notes",): ((11, 1), (11, 8)),  # block scalar: at the '|'
        ("empty",): ((13, 1), (13, 7)),  # an empty value: just after the ':'
    }
    for path, (key, value) in expected.items():
        assert doc.key_position(path) == Location(doc.file, *key), path
        assert doc.value_position(path) == Location(doc.file, *value), path


def test_locate_falls_back_to_the_longest_known_prefix():
    doc = load_yaml_file(Path("positions.yaml"))
    assert doc.locate(("gpus", 0, "pcie", "gen")) == Location(doc.file, 5, 30)
    assert doc.locate(("gpus", 1, "pcie", "gen")) == Location(doc.file, 9, 7)  # missing key: its mapping
    assert doc.locate(("gpus", 7, "model")) == Location(doc.file, 4, 3)
    assert doc.locate(("nope", "deeper")) == Location(doc.file, 1, 1)
    assert doc.locate(()) == doc.value_position(()) == Location(doc.file, 1, 1)
    with pytest.raises(KeyError):
        doc.value_position(("gpus", 1, "pcie", "gen"))
    with pytest.raises(KeyError):
        doc.key_position(())


def test_columns_count_characters_not_bytes():
    doc = load_yaml_text("vendor: café\nnote: ünïcode ok\nx: 1\n".encode(), "p.yaml")
    assert doc.value_position(("note",)) == Location("p.yaml", 2, 7)
    doc = load_yaml_text("a: {é: 1, ü: 2}\n", "p.yaml")
    assert doc.key_position(("a", "ü")) == Location("p.yaml", 1, 11)


def test_merge_keys_share_blocks_and_explicit_keys_win():
    doc = load_yaml_file(Path("merge_keys.yaml"))
    gpu = {"model": "H100", "memory_gb": 80}
    assert doc.data == {
        "defaults": gpu,
        "gpus": [
            {"model": "H100", "memory_gb": 94},
            gpu,
            {"model": "H100", "memory_gb": 80, "nvlink": 5, "name": "last"},  # earlier merge source wins
        ],
    }
    # Not compared with yaml.safe_load: PyYAML 6.0.4 lets a later merge source win when the key
    # strings are distinct objects (it deduplicates merged keys by id()), against the merge-key spec.
    assert doc.data["gpus"][1] is not doc.data["defaults"]  # aliases are expanded into copies
    # Merged keys are where the anchored text is; explicit keys where they are written.
    assert doc.key_position(("gpus", 0, "model")) == Location(doc.file, 2, 3)
    assert doc.value_position(("gpus", 0, "model")) == Location(doc.file, 2, 10)
    assert doc.value_position(("gpus", 0, "memory_gb")) == Location(doc.file, 6, 16)
    # A value that is an alias is at the alias; what is inside it is in the anchor.
    assert doc.value_position(("gpus", 1)) == Location(doc.file, 7, 5)
    assert doc.value_position(("gpus", 1, "memory_gb")) == Location(doc.file, 3, 14)
    assert doc.key_position(("gpus", 2, "nvlink")) == Location(doc.file, 8, 31)
    assert doc.value_position(("gpus", 2, "name")) == Location(doc.file, 8, 50)


def test_alias_value_positions_in_mappings():
    doc = load_yaml_text("a: &x [1, 2]\nb: *x\nc: [*x, 3]\n", "p.yaml")
    assert doc.data == {"a": [1, 2], "b": [1, 2], "c": [[1, 2], 3]}
    assert doc.value_position(("b",)) == Location(doc.file, 2, 4)
    assert doc.value_position(("c", 0)) == Location(doc.file, 3, 5)
    assert doc.value_position(("c", 0, 1)) == Location(doc.file, 1, 11)


def test_scalars_use_safe_resolution_but_timestamps_stay_strings():
    doc = load_yaml_text("d: 2024-01-02\nt: 2001-12-14t21:59:43.10-05:00\ni: 0x10\nf: 1.5e+3\n"
                         "b: true\nn: ~\ninf: .inf\ne: =\ns: '12'\nq: '010'\nx: !!str 1:30\n", "p.yaml")
    assert doc.data == {"d": "2024-01-02", "t": "2001-12-14t21:59:43.10-05:00", "i": 16, "f": 1500.0,
                        "b": True, "n": None, "inf": float("inf"), "e": "=", "s": "12", "q": "010", "x": "1:30"}
    assert type(yaml.safe_load("d: 2024-01-02")["d"]).__name__ == "date"  # SafeLoader is untouched


@pytest.mark.parametrize(("written", "expected"), [
    ("010", "'010' is the number 8 in YAML 1.1 but the number 10 in YAML 1.2 (editors): hwspec refuses a form the two "
            "read differently\n  hint: write 8 or 10"),
    ("1:30", "'1:30' is the number 90 in YAML 1.1 but text in YAML 1.2 (editors): hwspec refuses a form the two read "
             "differently\n  hint: write 90, or quote it ('1:30') for the text"),
    ("0b101", "'0b101' is the number 5 in YAML 1.1 but text in YAML 1.2 (editors): hwspec refuses a form the two read "
              "differently\n  hint: write 5, or quote it ('0b101') for the text"),
    ("1_000", "'1_000' is the number 1000 in YAML 1.1 but text in YAML 1.2 (editors): hwspec refuses a form the two read "
              "differently\n  hint: write 1000, or quote it ('1_000') for the text"),
    ("0o10", "'0o10' is text in YAML 1.1 but the number 8 in YAML 1.2 (editors): hwspec refuses a form the two read "
             "differently\n  hint: write 8, or quote it ('0o10') for the text"),
    ("1e3", "'1e3' is text in YAML 1.1 but the number 1000.0 in YAML 1.2 (editors): hwspec refuses a form the two read "
            "differently\n  hint: write 1000.0, or quote it ('1e3') for the text"),
    ("yes", "'yes' is the boolean true in YAML 1.1 but text in YAML 1.2 (editors): hwspec refuses a form the two read "
            "differently\n  hint: write true, or quote it ('yes') for the text"),
])
def test_a_value_yaml_1_1_and_1_2_read_differently_is_a_located_e110(written, expected):
    """PyYAML reads YAML 1.1, editors (and so the JSON Schema) YAML 1.2: `gpus: 010` would be
    8 to hwspec and 10 in the editor. Such a value is refused where it is written."""
    with pytest.raises(HwspecError) as caught:
        load_yaml_text(f"hwspec: 1\ngpus: [2, {written}]\n", "p.yaml")
    assert "\n".join(d.format() for d in caught.value.diagnostics) == f"p.yaml:2:11: error[E110]: {expected}"


def test_a_bare_off_is_refused_except_as_a_rule_severity():
    """`severity: off` (docs/site-rules.md) is read as the text off, as YAML 1.2 reads it; elsewhere a bare
    off is YAML 1.1's false and YAML 1.2's text, so it is refused."""
    doc = load_yaml_text("rules:\n  HW103: {severity: off, reason: r}\n", "p.yaml")
    assert doc.data == {"rules": {"HW103": {"severity": "off", "reason": "r"}}}
    with pytest.raises(HwspecError) as caught:
        load_yaml_text("rdma: off\n", "p.yaml")
    assert [(d.line, d.col, d.code) for d in caught.value.diagnostics] == [(1, 7, "E110")]


# --- errors ---------------------------------------------------------------------------------


def test_all_duplicate_and_non_string_keys_are_reported_together():
    assert errors(Path("duplicate_key.yaml")) == (
        "duplicate_key.yaml:4:1: error[E107]: duplicate key 'name' (first defined at line 1, column 1)\n"
        "duplicate_key.yaml:5:1: error[E104]: mapping keys must be strings, got the integer 1\n"
        "  hint: quote the key: '1':\n"
        "duplicate_key.yaml:6:1: error[E107]: duplicate key 'gpus' (first defined at line 2, column 1)\n"
        "duplicate_key.yaml:9:3: error[E107]: duplicate key 'sockets' (first defined at line 8, column 3)"
    )


@pytest.mark.parametrize(("text", "expected"), [
    ("on: x\n", "p.yaml:1:1: error[E104]: mapping keys must be strings, got the boolean 'on'\n"
                "  hint: 'on' is read as a boolean in YAML 1.1; quote it"),
    ("true: x\n", "p.yaml:1:1: error[E104]: mapping keys must be strings, got the boolean 'true'\n"
                  "  hint: quote the key: 'true':"),
    ("null: x\n", "p.yaml:1:1: error[E104]: mapping keys must be strings, got null\n"
                  "  hint: quote the key: 'null':"),
    ("a: {1.5: x}\n", "p.yaml:1:5: error[E104]: mapping keys must be strings, got the number 1.5\n"
                      "  hint: quote the key: '1.5':"),
    ("? [a, b]\n: x\n", "p.yaml:1:3: error[E104]: mapping keys must be strings, got a list\n"
                        "  hint: use a plain name as the key"),
])
def test_non_string_keys(text, expected):
    assert errors(text) == expected


def test_duplicate_merge_key_and_bad_merge_value():
    assert errors("a: &a {x: 1}\nb: {<<: *a, <<: {y: 2}}\nc: {<<: 3}\n") == (
        "p.yaml:2:13: error[E107]: duplicate key '<<' (first defined at line 2, column 5)\n"
        "  hint: merge several mappings with '<<: [*one, *two]'\n"
        "p.yaml:3:9: error[E103]: a merge key '<<' needs a mapping or a list of mappings\n"
        "  hint: write '<<: *anchor' or '<<: [*one, *two]'"
    )


def test_billion_laughs_is_refused_quickly():
    start = time.process_time()
    message = errors(Path("billion_laughs.yaml"))
    assert time.process_time() - start < 1.0
    assert message == (
        "billion_laughs.yaml:7:4: error[E105]: anchors and aliases expand to more than 100000 nodes\n"
        "  hint: a platform file this large is almost certainly a mistake (or a 'billion laughs' document)"
    )


def test_recursive_alias():
    assert errors(Path("recursive_alias.yaml")) == (
        "recursive_alias.yaml:3:9: error[E105]: alias '*base' is inside its own anchor '&base', "
        "so it would expand forever"
    )


@pytest.mark.parametrize(("text", "where"), [
    ("a: " + "[" * 100_000 + "]" * 100_000, "1:67"),
    ("a: " + "{a: " * 100_000 + "}" * 100_000, "1:256"),
    ("a:\n  " + "- " * 100_000 + "x\n", "2:129"),  # the 64th "-"
], ids=["flow-lists", "flow-mappings", "block-lists"])
def test_deep_nesting_is_refused_without_a_traceback(text, where):
    start = time.process_time()
    assert errors(text) == f"p.yaml:{where}: error[E106]: nesting is deeper than 64 levels"
    assert time.process_time() - start < 5.0


def test_nesting_limit_is_exact_and_counts_alias_expansion():
    deepest: list = []
    for _ in range(MAX_DEPTH - 2):
        deepest = [deepest]
    ok = "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert load_yaml_text(ok, "p.yaml").data == {"a": deepest}
    assert errors("a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH) == (
        "p.yaml:1:67: error[E106]: nesting is deeper than 64 levels")
    through_alias = "a: &a " + "[" * 60 + "1" + "]" * 60 + "\nb: " + "[" * 10 + "*a" + "]" * 10 + "\n"
    assert errors(through_alias) == "p.yaml:1:60: error[E106]: nesting is deeper than 64 levels"


def test_nesting_too_deep_is_reported_alone_at_the_first_place_whichever_composer_reads_the_file():
    text = "a: " + "[" * 65 + "]" * 65 + "\nb: " + "[" * 70 + "]" * 70 + "\nc: !!foo x\n"
    assert errors(text) == "p.yaml:1:67: error[E106]: nesting is deeper than 64 levels"


def test_the_shipped_platforms_are_composed_from_libyamls_events(monkeypatch):
    """The fast path: libyaml's parser feeds PyYAML's composer; the pure-Python parser is only
    the fallback (no libyaml, or a YAML error to report)."""
    from hwspec.source import loader as source

    assert source._CParser is not None, "PyYAML is built without libyaml here: every file takes the slow path"

    def reference_parser(*args, **kwargs):
        raise AssertionError("the pure-Python parser composed a shipped platform")

    monkeypatch.setattr(source._Loader, "__init__", reference_parser)
    shipped = sorted((Path(__file__).parent.parent / "platforms").rglob("*.yaml"))
    assert shipped and all(load_yaml_file(path).data for path in shipped)


def test_not_utf8():
    assert errors(Path("not_utf8.yaml")) == (
        "not_utf8.yaml:2:12: error[E102]: file is not valid UTF-8 (byte 0xe9)\n  hint: save the file as UTF-8")


def test_characters_yaml_refuses():
    assert errors(b"name: zion\nx: a\x00b\n") == (
        "p.yaml:2:5: error[E102]: file contains the character U+0000, which YAML does not allow\n"
        "  hint: a NUL character means this is probably not a text file")
    assert errors("x: \x07\n") == (
        "p.yaml:1:4: error[E102]: file contains the character U+0007, which YAML does not allow")


def test_file_larger_than_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("big.yaml").write_bytes(b"# padding\n" * (5 * 1024 * 1024 // 10 + 1))
    assert errors(Path("big.yaml")) == (
        "big.yaml:1:1: error[E101]: file is 5.0 MiB, larger than the 4 MiB limit for a platform file")
    assert errors(b" " * (MAX_FILE_BYTES + 1)).startswith("p.yaml:1:1: error[E101]: file is 4.0 MiB")


def test_unreadable_files(tmp_path, monkeypatch):
    assert errors(Path("missing.yaml")) == (
        "missing.yaml:1:1: error[E100]: cannot read file: no such file or directory")
    monkeypatch.chdir(tmp_path)
    Path("dir.yaml").mkdir()
    assert errors(Path("dir.yaml")) == "dir.yaml:1:1: error[E100]: cannot read file: it is a directory, not a regular file"


def test_empty_file_and_top_level_not_a_mapping():
    assert errors(Path("empty.yaml")) == "empty.yaml:1:1: error[E108]: file is empty"
    assert errors("# only a comment\n") == "p.yaml:1:1: error[E108]: file is empty"
    assert errors(Path("top_level_list.yaml")) == (
        "top_level_list.yaml:1:1: error[E108]: a platform file must be a mapping of keys to values, got a list")
    assert errors("\n  just text\n") == (
        "p.yaml:2:3: error[E108]: a platform file must be a mapping of keys to values, got a string of 9 characters "
        "(not shown)")


def test_syntax_errors():
    assert errors(Path("syntax_error.yaml")) == (
        "syntax_error.yaml:3:5: error[E103]: invalid YAML: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence at line 2, column 7)")
    assert errors("a: b: c\n") == "p.yaml:1:5: error[E103]: invalid YAML: mapping values are not allowed here"
    assert errors(Path("tab_indent.yaml")) == (
        "tab_indent.yaml:3:1: error[E103]: invalid YAML: found character '\\t' that cannot start any token "
        "(while scanning for the next token)\n"
        "  hint: YAML indentation must use spaces, not tabs")
    assert errors("a: *nope\n") == (
        "p.yaml:1:4: error[E103]: invalid YAML: found undefined alias 'nope'\n"
        "  hint: define the anchor ('&name') before using it ('*name')")
    assert errors("a: &x 1\nb: &x 2\n") == (
        "p.yaml:2:4: error[E103]: invalid YAML: found duplicate anchor 'x' (first defined at line 1, column 4)\n"
        "  hint: give each anchor its own name")


def test_unknown_tags():
    assert errors(Path("unknown_tag.yaml")) == (
        "unknown_tag.yaml:2:7: error[E103]: unsupported YAML tag '!!python/object/apply:os.system'\n"
        "  hint: platform files are plain data; remove the tag\n"
        "unknown_tag.yaml:3:8: error[E103]: unsupported YAML tag '!foo'\n"
        "  hint: platform files are plain data; remove the tag")
    assert errors("a: !!int [1]\nb: !!int x1\nc: !!timestamp 2001-01-01\n") == (
        "p.yaml:1:4: error[E103]: YAML tag '!!int' cannot be used on a list\n"
        "  hint: platform files are plain data; remove the tag\n"
        "p.yaml:2:4: error[E103]: cannot read 'x1' as !!int\n"
        "p.yaml:3:4: error[E103]: unsupported YAML tag '!!timestamp'\n"
        "  hint: platform files are plain data; remove the tag")
    assert load_yaml_text("a: !!str 12\nb: !!float 1\n", "p.yaml").data == {"a": "12", "b": 1.0}


def test_multi_document_file():
    assert errors(Path("multi_document.yaml")) == (
        "multi_document.yaml:2:1: error[E103]: a platform file holds one YAML document; found a second one\n"
        "  hint: put each platform in its own file")
    assert load_yaml_text("---\na: 1\n...\n", "p.yaml").data == {"a": 1}


# --- properties -----------------------------------------------------------------------------

SETTINGS = settings(derandomize=True, database=None, max_examples=pinned(200))
YAMLISH = st.text(alphabet=st.sampled_from(list("ab1:-[]{}?!&*<>,|'\"#%@ \t\n.~\\\x00\ufeffé")), max_size=40)


def _loads_or_refuses(text: str | bytes) -> None:
    try:
        assert isinstance(load_yaml_text(text, "p.yaml"), SourceDoc)
    except HwspecError as e:
        assert e.diagnostics and all(d.code.startswith("E1") for d in e.diagnostics)


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_load_or_raise_hwspec_error(data):
    _loads_or_refuses(data)


@SETTINGS
@given(st.text(max_size=80) | YAMLISH)
def test_arbitrary_text_loads_or_raises_hwspec_error(text):
    _loads_or_refuses(text)


# PyYAML's own emitter writes U+0085 (NEL) raw with allow_unicode=True, and its reader then takes it for a
# line break, so yaml.safe_load does not round-trip it either: leave it out.
TEXT = st.characters(codec="utf-8", exclude_characters="\x85")
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(TEXT, max_size=20)
DATA = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(TEXT, max_size=10), inner, max_size=4),
    max_leaves=25,
)


def _paths(value, path=()):
    """Every path into `value` (not the root)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield path + (key,)
        yield from _paths(item, path + (key,))


@SETTINGS
@given(st.dictionaries(st.text(TEXT, max_size=10), DATA, max_size=5), st.booleans())
def test_text_dumped_by_hwspec_round_trips(data, flow):
    text = dump_yaml(data, flow)
    doc = load_yaml_text(text, "p.yaml")
    assert doc.data == data
    lines = text.splitlines()
    for path in _paths(data):  # every key and value has a position inside the text
        for pos in (doc.key_position(path), doc.value_position(path)):
            assert 1 <= pos.line <= len(lines) + 1 and pos.col >= 1


def _load_both_ways(path: Path):
    """The outcomes of loading `path` with PyYAML's composer over libyaml's events, and with
    PyYAML alone: (data, value positions, key positions) or the diagnostics."""
    from hwspec.source import loader as source

    outcomes = []
    for use_libyaml in (source.HAS_LIBYAML, False):
        saved = source.HAS_LIBYAML
        source.HAS_LIBYAML = use_libyaml
        try:
            doc = source.load_yaml_file(path)
            outcomes.append((doc.data, doc._values, doc._keys))
        except HwspecError as exc:
            outcomes.append([d.format() for d in exc.diagnostics])
        finally:
            source.HAS_LIBYAML = saved
    return outcomes


@pytest.mark.parametrize("path", sorted({*Path(__file__).parent.rglob("*.yaml"), *(Path(__file__).parent.parent / "platforms").rglob("*.yaml")}),
                         ids=lambda p: p.name)
def test_libyaml_and_the_reference_parser_give_the_same_document_or_diagnostics(path):
    events_composed, reference = _load_both_ways(path)
    assert events_composed == reference
