"""Repeat blocks, ${...} arithmetic and annotated values."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwspec.diagnostics import HwspecError
from hwspec.source.expand import Pattern, Provenance, evaluate, expand, substitute
from hwspec.source.loader import load_yaml_text
from tests.examples import pinned


def expanded(text: str):
    return expand(load_yaml_text(text, "t.yaml"))


def messages(text: str) -> list[str]:
    with pytest.raises(HwspecError) as caught:
        expanded(text)
    return [d.format() for d in caught.value.diagnostics]


@pytest.mark.parametrize("expr, value", [("i", 3), ("i//2", 1), ("i%2", 1), ("0x10+i*0x20", 0x70), ("-(i-5)", 2), ("(i+1)*2", 8)])
def test_integer_arithmetic(expr, value):
    assert evaluate(expr, {"i": 3}) == value


@pytest.mark.parametrize("expr, message", [
    ("j", "unknown variable 'j' (variables here: i)"),
    ("i/2", "'i/2' is not integer arithmetic: use variables, integers and + - * // %"),
    ("__import__('os')", "'__import__('os')' is not integer arithmetic: use variables, integers and + - * // %"),
    ("i//0", "division by zero in 'i//0'"),
    ("i +", "cannot read 'i +' as integer arithmetic"),
])
def test_arithmetic_refuses_anything_else(expr, message):
    with pytest.raises(ValueError) as caught:
        evaluate(expr, {"i": 3})
    assert str(caught.value) == message


def test_substitute_applies_format_specs():
    assert substitute("0000:${0x17+i*0x20:02x}:00.0", {"i": 1}) == "0000:37:00.0"
    assert substitute("gpu${i}-nic${i+1}", {"i": 0}) == "gpu0-nic1"


def test_repeat_expands_ranges_lists_and_products_first_variable_slowest():
    result = expanded("items:\n  - repeat: {a: 0..1, b: [5, 7]}\n    id: x${a}${b}\n  - id: last\n")
    assert result.data == {"items": [{"id": "x05"}, {"id": "x07"}, {"id": "x15"}, {"id": "x17"}, {"id": "last"}]}
    assert result.written_path(("items", 3, "id")) == ("items", 0, "id")
    assert result.written_path(("items", 4)) == ("items", 1)


def test_annotated_values_become_their_value_and_keep_provenance():
    result = expanded("memory:\n  capacity: {value: 1 TiB, source: datasheet, assumed: even split}\n")
    assert result.data == {"memory": {"capacity": "1 TiB"}}
    assert result.provenance[("memory", "capacity")] == Provenance("datasheet", "even split")


def test_blocks_with_source_or_assumed_record_provenance_and_keep_the_keys():
    result = expanded("backend: {transport: tcp, assumed: not stated}\n")
    assert result.data == {"backend": {"transport": "tcp", "assumed": "not stated"}}
    assert result.provenance[("backend",)] == Provenance(None, "not stated")


def test_bad_repeat_blocks_are_all_reported():
    assert messages(
        "a:\n  - repeat: {i: 7..0}\n    id: x\n"
        "  - repeat: {i: lots}\n    id: y\n"
        "  - repeat: {i: 0..1}\n    id: z${k}\n"
        "b: ${i}\n"
    ) == [
        "t.yaml:2:17: error[E120]: empty range '7..0': the end is below the start",
        "t.yaml:4:17: error[E120]: cannot read 'lots' as a range\n  hint: write an inclusive range such as 0..7, a list of whole "
        "numbers, or a table: a list of texts or whole numbers, indexed as ${name[i]}",
        "t.yaml:7:9: error[E120]: unknown variable 'k' (variables here: i)",
        "t.yaml:8:4: error[E120]: '${i}' uses ${...} outside a repeat block",
    ]


def test_repeat_refuses_huge_expansions():
    assert messages("a:\n  - repeat: {i: 0..99999}\n    id: x\n") == [
        "t.yaml:2:17: error[E120]: range '0..99999' is longer than 4096"]


@settings(derandomize=True, database=None, max_examples=pinned(300))
@given(st.lists(st.one_of(st.sampled_from(["zx", "-", "{", "}", "{}", ".", ""]),
                          st.sampled_from(["${n}", "${i:05}", "${n//256%256}", "${n%256:x}", "${i:{<4}", "${n*3:>6}"])),
                max_size=6),
       st.integers(0, 5000), st.integers(1, 40))
def test_a_pattern_renders_many_points_as_substitute_renders_each(pieces, first, count):
    text = "".join(pieces)
    many = Pattern(text, ("n", "i")).many({"n": range(first, first + count), "i": range(count)}, count)
    assert many == [substitute(text, {"n": first + k, "i": k}) for k in range(count)]


def test_a_value_a_format_cannot_write_is_named_with_its_format():
    with pytest.raises(ValueError, match=r"bad format 'c' in '\$\{n\*1000000:c\}'"):
        Pattern("h${n*1000000:c}", ("n",)).many({"n": range(0, 3)}, 3)


@pytest.mark.parametrize("text, message", [
    ("h${n*2}", "number too large in 'n*2'"),        # a constant operand: bounds of the range's ends
    ("h${n+n}", "number too large in 'n+n'"),        # two columns
    ("h${n//(n-n)}", "division by zero in 'n//(n-n)'"),
])
def test_a_node_group_beyond_the_operand_limit_is_refused(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Pattern(text, ("n",)).many({"n": range(2**48 - 1, 2**48 + 2)}, 3)


# ---------------------------------------------------------------- tables: ${name[expr]}


def test_a_list_of_texts_is_a_table_indexed_by_arithmetic_not_repeated_over():
    result = expanded('gpus:\n  - repeat: {g: 0..2, bus: ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0"]}\n'
                      '    id: gpu${g}\n    bus: "${bus[g]}"\n    peer: "${bus[(g+1)%3]}"\n')
    assert result.data == {"gpus": [{"id": "gpu0", "bus": "0000:18:00.0", "peer": "0000:2a:00.0"},
                                    {"id": "gpu1", "bus": "0000:2a:00.0", "peer": "0000:3a:00.0"},
                                    {"id": "gpu2", "bus": "0000:3a:00.0", "peer": "0000:18:00.0"}]}
    assert result.written_path(("gpus", 2, "bus")) == ("gpus", 0, "bus")


def test_an_outer_table_is_indexed_inside_an_inner_repeat_block():
    result = expanded('nodes:\n  - repeat: {n: 0..1, host: [alpha, beta]}\n    id: "${host[n]}"\n'
                      '    gpus:\n      - repeat: {g: 0..1}\n        id: "${host[n]}-gpu${g}"\n')
    assert [g["id"] for node in result.data["nodes"] for g in node["gpus"]] == ["alpha-gpu0", "alpha-gpu1", "beta-gpu0", "beta-gpu1"]


def test_table_faults_are_located_errors():
    base = 'gpus:\n  - repeat: {g: 0..3, bus: [a, b, c]}\n    id: gpu${g}\n    bus: "%s"\n'
    assert messages(base % "${bus[g]}") == [
        "t.yaml:4:10: error[E120]: '${bus[g]}' is item 3 of 'bus', which has 3 (indexes 0..2)"]
    assert messages(base % "${bus[g-1]}") == [
        "t.yaml:4:10: error[E120]: '${bus[g-1]}' is item -1 of 'bus', which has 3 (indexes 0..2)"]
    assert messages(base % "${bus}") == [
        "t.yaml:4:10: error[E120]: '${bus}' names the table 'bus': take one item, e.g. ${bus[i]}"]
    assert messages(base % "${pci[g]}") == [
        "t.yaml:4:10: error[E120]: '${pci[g]}' indexes 'pci', which is no table of this repeat block (tables: bus)"]
    assert messages(base % "${bus[h]}") == ["t.yaml:4:10: error[E120]: unknown variable 'h' (variables here: g)"]
    assert messages('gpus:\n  - repeat: {bus: [a, b]}\n    id: "${bus[0]}"\n') == [
        "t.yaml:2:13: error[E120]: repeat has tables but nothing to repeat over\n"
        "  hint: add a variable with a range to index them, e.g. repeat: {i: 0..1, ...}"]
    assert messages('gpus:\n  - repeat: {g: 0..1, bus: [a, 2]}\n    id: "x"\n') == [
        "t.yaml:2:28: error[E120]: table 'bus' mixes texts and whole numbers: ['a', 2]\n"
        "  hint: a table holds texts (quote every item: \"0x14\") or whole numbers, not both"]


def test_a_table_is_bounded_like_a_range():
    items = ", ".join(["x"] * 4097)
    assert messages(f"gpus:\n  - repeat: {{g: 0..1, bus: [{items}]}}\n    id: x\n") == [
        "t.yaml:2:28: error[E120]: table 'bus' has 4097 items, more than 4096"]


def test_a_table_of_whole_numbers_is_indexed_and_formatted_like_arithmetic():
    """Bus numbers as YAML reads them (0x14 is 20): a list of whole numbers the item indexes is a
    table, its items formatted as any ${...} value; one the item does not index is repeated over."""
    table = 'gpus:\n  - repeat: {g: 0..2, bus: [0x14, 0x1c, 0x54]}\n    id: gpu${g}\n    bus: "0000:${bus[g]:02x}:00.0"\n    slot: ${bus[g]}\n'
    assert expand(load_yaml_text(table, "t.yaml")).data["gpus"] == [
        {"id": "gpu0", "bus": "0000:14:00.0", "slot": "20"}, {"id": "gpu1", "bus": "0000:1c:00.0", "slot": "28"},
        {"id": "gpu2", "bus": "0000:54:00.0", "slot": "84"}]
    axis = 'gpus:\n  - repeat: {g: 0..1, s: [3, 5]}\n    id: gpu${g}s${s}\n'
    assert [g["id"] for g in expand(load_yaml_text(axis, "t.yaml")).data["gpus"]] == ["gpu0s3", "gpu0s5", "gpu1s3", "gpu1s5"]


def test_a_format_on_an_item_of_a_table_of_texts_says_the_table_holds_texts():
    assert messages('gpus:\n  - repeat: {g: 0..1, bus: ["14", "1c"]}\n    id: "${bus[g]:02x}"\n') == [
        "t.yaml:3:9: error[E120]: '${bus[g]:02x}' formats an item of the table 'bus', which holds texts: write the text as it "
        "should appear, or make the table whole numbers"]
