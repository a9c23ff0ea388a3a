"""kdissect's ``dataclass`` keeps the standard decorator's semantics while sharing its methods."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import inspect
import pickle
from dataclasses import field
from typing import Any

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


def _spec() -> dict[str, object]:
    """A class body of every field shape ``__init__`` handles: plain, defaulted, factory, init=False with
    a default or a factory, keyword-only with and without defaults."""
    return {
        "__annotations__": {
            "a": "int", "b": "str", "c": "list[int]", "d": "int", "e": "list[str]", "k": "int", "m": "dict[str, int]"
        },
        "b": "x",
        "c": field(default_factory=lambda: [1]),
        "d": field(default=7, init=False),
        "e": field(default_factory=list, init=False),
        "k": field(kw_only=True),
        "m": field(default_factory=dict, kw_only=True),
    }


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("slots", [False, True])
def test_init_and_frozen_methods_behave_as_the_standard_ones(frozen: bool, slots: bool) -> None:
    ours = dataclass(frozen=frozen, slots=slots)(type("Shape", (), _spec()))
    std = dataclasses.dataclass(frozen=frozen, slots=slots)(type("Shape", (), _spec()))
    assert str(inspect.signature(ours)) == str(inspect.signature(std))
    assert ours.__init__.__annotations__ == std.__init__.__annotations__
    assert ours.__init__.__qualname__ == std.__init__.__qualname__ == "Shape.__init__"
    assert ours.__doc__ == std.__doc__
    assert ours.__dataclass_params__.init and ours.__dataclass_params__.frozen == frozen
    made, expected = ours(1, k=2), std(1, k=2)
    assert dataclasses.asdict(made) == dataclasses.asdict(expected) == {
        "a": 1, "b": "x", "c": [1], "d": 7, "e": [], "k": 2, "m": {}}  # fmt: skip
    assert made.c is not ours(1, k=2).c
    given = {"b": "y", "c": [2], "k": 3, "m": {"z": 1}}
    assert dataclasses.asdict(ours(1, **given)) == dataclasses.asdict(std(1, **given))
    for bad in ((), (1, "y", [2], 3), (1,)):
        with pytest.raises(TypeError) as mine:
            ours(*bad)
        with pytest.raises(TypeError) as theirs:
            std(*bad)
        assert str(mine.value) == str(theirs.value)
    assert copy.deepcopy(made) == made
    assert pickle.loads(pickle.dumps(Point(1, 2, "n"))).note == "n"
    if frozen:
        for act in (lambda o: setattr(o, "a", 5), lambda o: delattr(o, "b"), lambda o: setattr(o, "new", 1)):
            with pytest.raises(dataclasses.FrozenInstanceError):
                act(made)
            with pytest.raises((dataclasses.FrozenInstanceError, TypeError)):
                act(expected)
    else:
        made.a = 5
        assert made.a == 5


def test_a_default_before_a_plain_field_is_refused_as_the_standard_one_refuses_it() -> None:
    body = {"__annotations__": {"a": "int", "b": "int"}, "a": 1}
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        dataclass(type("Bad", (), dict(body)))
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        dataclasses.dataclass(type("Bad", (), dict(body)))


def test_inheritance_rules_are_the_standard_ones() -> None:
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        dataclass(type("Loose", (Point,), {"__annotations__": {"w": "int"}, "w": 0}))
    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        dataclass(frozen=True)(type("Own", (), {"__annotations__": {"a": "int"}, "__setattr__": lambda s, n, v: None}))


def _recording(real: Any, sources: list[str]) -> Any:
    def call(src: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(src, str) and "__init__" in src:
            sources.append(src)
        return real(src, *args, **kwargs)

    return call


def test_classes_of_one_shape_share_one_compiled_init(monkeypatch: pytest.MonkeyPatch) -> None:
    """No source is compiled per class: once a shape's template exists, a class of that shape compiles
    nothing (the standard decorator compiles an ``__init__``'s source per class)."""
    dataclass(frozen=True)(type("First", (), {"__annotations__": {"a": "int", "z": "int"}}))
    compiled: list[object] = []
    for name in ("compile", "exec"):
        real = getattr(builtins, name)
        monkeypatch.setattr(builtins, name, _recording(real, compiled))
    made = [dataclass(frozen=True)(type(f"C{i}", (), {"__annotations__": {f"n{i}": "int", "z": "int"}}))
            for i in range(3)]  # fmt: skip
    assert compiled == []
    assert [c.__init__.__code__.co_varnames for c in made] == [("self", f"n{i}", "z") for i in range(3)]
    assert (made[2](1, 2).n2, made[2](1, 2).z) == (1, 2)
