"""`hwspec.record`: a record class behaves as the `@dataclass(frozen=True)` it replaces."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from hwspec.model import Gpu, PcieLink
from hwspec.record import Record, record


@record
class Pair(Record):
    name: str
    count: int = 0
    note: str = field(default="", repr=False, compare=False)


@dataclass(frozen=True)
class PairDataclass:
    name: str
    count: int = 0
    note: str = field(default="", repr=False, compare=False)


@record
class One(Record):
    value: int


@pytest.mark.parametrize("args", [("a",), ("a", 2), ("a", 2, "x"), ("b", 0, "y")])
def test_a_record_compares_hashes_and_shows_as_the_frozen_dataclass(args):
    ours, theirs = Pair(*args), PairDataclass(*args)
    assert repr(ours) == repr(theirs).replace("PairDataclass", "Pair")
    assert hash(ours) == hash(theirs)
    assert (ours == Pair("a", 2)) == (theirs == PairDataclass("a", 2))
    assert ours == Pair(*args[:2], note="other note")  # a compare=False field is not compared


def test_a_record_is_frozen_and_a_dataclass():
    pair = Pair("a", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        pair.count = 2  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(pair)] == ["name", "count", "note"]
    assert dataclasses.replace(pair, count=3) == Pair("a", 3)


def test_records_of_different_classes_are_never_equal():
    assert One(1) != Pair("a", 1) and One(1) != (1,) and One(1) == One(1)
    assert hash(One(1)) == hash((1,))  # as the dataclass's hash of its one-field tuple


def test_a_record_holding_itself_is_shown_without_recursing():
    @record
    class Box(Record):
        items: list

    box = Box([])
    box.items.append(box)
    assert repr(box).endswith(".<locals>.Box(items=[...])")  # __qualname__, as a dataclass shows it


def test_the_model_classes_are_records():
    assert issubclass(Gpu, Record) and issubclass(PcieLink, Record)
    assert PcieLink(4, 16) == PcieLink(4, 16) and len({PcieLink(4, 16), PcieLink(4, 16)}) == 1


def test_record_refuses_a_class_without_the_base():
    with pytest.raises(TypeError, match="Plain: a record class derives from hwspec.record.Record"):
        @record
        class Plain:
            value: int
