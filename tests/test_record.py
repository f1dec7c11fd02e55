"""`hwspec.record`: a record class behaves as the `@dataclass(frozen=True)` it replaces."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from hwspec.model.node import Gpu, PcieLink
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


def _parameters(cls: type) -> list[tuple[str, object, object]]:
    import inspect

    return [(p.name, p.kind, p.default) for p in inspect.signature(cls).parameters.values()]


def test_a_record_is_constructed_as_the_frozen_dataclass():
    assert _parameters(Pair) == _parameters(PairDataclass)
    assert vars(Pair("a", note="n")) == vars(PairDataclass("a", note="n")) == {"name": "a", "count": 0, "note": "n"}
    for cls in (Pair, PairDataclass):
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
            cls()
        with pytest.raises(TypeError, match="got an unexpected keyword argument 'colour'"):
            cls("a", colour="red")
        with pytest.raises(TypeError, match="got multiple values for argument 'name'"):
            cls("a", name="b")


def test_a_record_is_frozen_against_deletion():
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'name'"):
        del Pair("a").name


def test_record_fields_take_factories_init_false_and_post_init():
    @record
    class Bag(Record):
        items: list = field(default_factory=list)
        size: int = field(default=0, init=False)
        seen: set = field(default_factory=set, init=False)
        label: str = ""

        def __post_init__(self) -> None:
            object.__setattr__(self, "size", len(self.items))

    first, second = Bag(), Bag([1, 2], label="x")
    assert first.items is not Bag().items and first.seen is not Bag().seen  # a fresh value per instance
    assert (first.size, second.size, second.label, second.seen) == (0, 2, "x", set())
    assert [(name, repr(default)) for name, _, default in _parameters(Bag)] == [("items", "<factory>"), ("label", "''")]


def test_record_refuses_what_a_dataclass_refuses_and_keyword_only_fields():
    with pytest.raises(TypeError, match="non-default argument 'count' follows default argument"):
        @record
        class Backwards(Record):
            name: str = ""
            count: int

    with pytest.raises(TypeError, match="Named.name: a record has no keyword-only fields"):
        @record
        class Named(Record):
            name: str = field(kw_only=True)


def test_a_record_field_may_have_any_name_its_init_uses():
    @record
    class Odd(Record):
        _set: int
        _FACTORY: list = field(default_factory=list)
        self_: str = "s"

    odd = Odd(1)
    assert (odd._set, odd._FACTORY, odd.self_) == (1, [], "s")
