"""Equality and pickled state of a small mergeable figure, from its slots.

Figures are compared in tests (any split merges to the same state) and pickled from Spark tasks to
the driver; written per class, a slot added to one but left out of its ``__eq__`` or pickled state
would silently drop out of the merge. Every slot of the class and its bases counts, so a subclass
adds only its own ``__slots__``.
"""

from __future__ import annotations

from functools import cache


@cache
def _slots(cls: type) -> tuple[str, ...]:
    return tuple(name for klass in reversed(cls.__mro__) for name in klass.__dict__.get("__slots__", ()))


class SlotState:
    """Equal to another of the same class when every slot is; pickled as a tuple of the slots' values."""

    __slots__ = ()

    def _state(self) -> tuple:
        return tuple(getattr(self, name) for name in _slots(type(self)))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._state() == other._state()  # type: ignore[attr-defined]

    def __getstate__(self) -> tuple:
        return self._state()

    def __setstate__(self, state: tuple) -> None:
        for name, value in zip(_slots(type(self)), state, strict=True):
            setattr(self, name, value)
