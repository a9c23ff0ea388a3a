"""kdissect's ``dataclass`` keeps the standard decorator's semantics while sharing its methods."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import field

import pytest

from kdissect.dataclass import dataclass


@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    note: str = field(default="", compare=False)


@dataclass(order=True)
class Version:
    major: int
    minor: int = 0
    tags: list[str] = field(default_factory=list, repr=False)


@dataclass
class Empty:
    pass


@dataclass(frozen=True)
class Shown:
    value: int

    def __repr__(self) -> str:
        return "mine"


@dataclass(frozen=True, slots=True)
class Point3(Point):
    z: int = 0


def test_equality_and_hash_follow_the_compared_fields() -> None:
    assert Point(1, 2, "a") == Point(1, 2, "b")
    assert hash(Point(1, 2, "a")) == hash(Point(1, 2, "b"))
    assert Point(1, 2) != Point(1, 3)
    assert len({Point(1, 2), Point(1, 2), Point(2, 1)}) == 2
    assert Point(1, 2) != (1, 2)  # another type: NotImplemented, then identity
    assert Point3(1, 2, 0) != Point(1, 2)  # only the very same class compares equal
    assert Empty() == Empty()


def test_frozen_slots_and_defaults_are_the_standard_ones() -> None:
    p = Point(1)
    assert (p.y, p.note) == (0, "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5  # type: ignore[misc]
    assert not hasattr(p, "__dict__")
    assert [f.name for f in dataclasses.fields(Point3)] == ["x", "y", "note", "z"]
    assert dataclasses.replace(p, y=4) == Point(1, 4)
    assert dataclasses.asdict(Point3(1, 2, "n", 3)) == {"x": 1, "y": 2, "note": "n", "z": 3}
    assert pickle.loads(pickle.dumps(Point3(1, 2, "n", 3))) == Point3(1, 2, "n", 3)
    assert Version(1).tags is not Version(1).tags


def test_a_mutable_class_with_eq_is_unhashable() -> None:
    with pytest.raises(TypeError):
        hash(Version(1))


def test_order_compares_the_fields_in_turn() -> None:
    assert Version(1, 2) < Version(1, 3) <= Version(1, 3) < Version(2)
    assert Version(2) > Version(1, 9) >= Version(1, 9)
    assert sorted([Version(2), Version(1, 1), Version(1)]) == [Version(1), Version(1, 1), Version(2)]
    with pytest.raises(TypeError):
        Version(1) < Point(1)  # noqa: B015


def test_repr_shows_the_repr_fields_and_a_written_repr_wins() -> None:
    assert repr(Point(1, 2, "a")) == "Point(x=1, y=2, note='a')"
    assert repr(Version(1, 2, ["t"])) == "Version(major=1, minor=2)"
    assert repr(Shown(1)) == "mine"
    assert repr(Empty()) == "Empty()"


def test_methods_are_shared_not_compiled_per_class() -> None:
    assert Point.__eq__ is Version.__eq__
    assert Point.__repr__ is Version.__repr__
    assert Point.__hash__ is Point3.__hash__
