"""``dataclass`` as the standard library's, but with one shared ``__eq__``, ``__hash__``, ``__repr__`` and
ordering for every class instead of source code compiled per class.

The standard decorator writes each class's methods as text and ``exec``\\ s it: with a hundred-odd classes
that was a measurable part of every process's start-up (a summary run's fixed cost is most of its cost).
Here the standard decorator still makes ``__init__`` (per class, for construction speed) and the frozen
``__setattr__``, so ``fields``, ``replace``, ``asdict``, ``slots`` and ``FrozenInstanceError`` behave
as ever; the comparison methods read a per-class key (an ``attrgetter`` of the compared fields) instead.
Semantics kept: equality and ordering only between instances of the very same class (else
``NotImplemented``), ``compare=False``/``hash=`` per field, the standard ``__hash__`` rules
(frozen+eq: hashed by fields; eq alone: unhashable; a ``__hash__`` or method written in the body wins).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, TypeVar

T = TypeVar("T")


def _key(names: list[str]) -> Callable[[Any], Any]:
    """The compared fields' values as one comparable (a tuple, or the value itself for one field)."""
    return attrgetter(*names) if names else lambda _: ()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    key = self.__class__.__kd_eq_key__
    return key(self) == key(other)


def _hash(self: Any) -> int:
    return hash(self.__class__.__kd_hash_key__(self))


@recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__class__.__kd_repr_names__)
    return f"{self.__class__.__qualname__}({shown})"


def _order(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        key = self.__class__.__kd_eq_key__
        return compare(key(self), key(other))

    return method


_ORDER = {
    "__lt__": _order(lambda a, b: a < b),
    "__le__": _order(lambda a, b: a <= b),
    "__gt__": _order(lambda a, b: a > b),
    "__ge__": _order(lambda a, b: a >= b),
}


def _set(cls: type, name: str, value: Any) -> bool:
    """Set a method the class body did not write itself (the standard rule); whether it was set."""
    if name in cls.__dict__:
        return False
    setattr(cls, name, value)
    return True


def _hash_action(cls: type, eq: bool, frozen: bool, unsafe_hash: bool, explicit: bool) -> None:
    """The standard ``__hash__`` table: add one, make the class unhashable, or leave it."""
    if unsafe_hash:
        if explicit:
            raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
        cls.__hash__ = _hash  # type: ignore[method-assign]
    elif eq and not explicit:
        cls.__hash__ = _hash if frozen else None  # type: ignore[assignment,method-assign]


def _shape(cls: type, *, repr: bool, eq: bool, order: bool, unsafe_hash: bool, frozen: bool,
           explicit_hash: bool) -> type:  # fmt: skip
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    compared = [f.name for f in fields if f.compare]
    hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
    cls.__kd_eq_key__ = staticmethod(_key(compared))  # type: ignore[attr-defined]
    cls.__kd_hash_key__ = staticmethod(_key(hashed))  # type: ignore[attr-defined]
    cls.__kd_repr_names__ = tuple(f.name for f in fields if f.repr)  # type: ignore[attr-defined]
    if repr:
        _set(cls, "__repr__", _repr)
    if eq:
        _set(cls, "__eq__", _eq)
    if order:
        if not eq:
            raise ValueError("eq must be true if order is true")
        for name, method in _ORDER.items():
            if not _set(cls, name, method):
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    _hash_action(cls, eq, frozen, unsafe_hash, explicit_hash)
    return cls


def dataclass(cls: type[T] | None = None, /, *, init: bool = True, repr: bool = True, eq: bool = True,
              order: bool = False, unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True,
              kw_only: bool = False, slots: bool = False) -> Any:  # fmt: skip
    """``dataclasses.dataclass`` with shared comparison, hash and repr methods (see the module docstring)."""

    def wrap(cls: type[T]) -> type[T]:
        body_hash = cls.__dict__.get("__hash__", dataclasses.MISSING)
        explicit_hash = not (body_hash is dataclasses.MISSING or (body_hash is None and "__eq__" in cls.__dict__))
        made = dataclasses.dataclass(cls, init=init, repr=False, eq=False, order=False, unsafe_hash=False,
                                     frozen=frozen, match_args=match_args, kw_only=kw_only, slots=slots)  # fmt: skip
        return _shape(made, repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash, frozen=frozen,
                      explicit_hash=explicit_hash)  # type: ignore[return-value]  # fmt: skip

    return wrap if cls is None else wrap(cls)
