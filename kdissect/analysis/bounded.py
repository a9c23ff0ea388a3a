"""Figures kept per key where the keys are chosen by clients (client ids, client addresses, and
broker addresses on hostile input): at most ``limit`` keys, those whose CRC-32 is smallest, a
choice that does not depend on the order pieces come in or how a run was split (a key kept in the
whole is kept in every piece that has it, so its figures are complete); every other key's figures
are merged into one ``other``, which the report names :data:`OTHER`.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

KEY_LIMIT = 10_000  # keys kept per table; the rest are one OTHER row
OTHER = "(other)"


class Mergeable(Protocol):
    def merge(self, other: ..., /) -> None: ...


V = TypeVar("V", bound=Mergeable)


def _rank(key: Hashable) -> tuple[int, str]:
    """Which keys a bounded dimension keeps (the smallest): the same in every process and piece."""
    text = repr(key)
    return zlib.crc32(text.encode("utf-8", "backslashreplace")), text


class _Kept:
    """A kept key in a heap whose top is the key to evict first (the largest rank)."""

    __slots__ = ("key", "rank")

    def __init__(self, key: Hashable) -> None:
        self.rank, self.key = _rank(key), key

    def __lt__(self, other: _Kept) -> bool:
        return self.rank > other.rank


class Groups(Generic[V]):
    """Figures per key (made by ``make``): at most ``limit`` keys (the smallest :func:`_rank`), the rest in
    ``other``."""

    __slots__ = ("_heap", "groups", "limit", "make", "other")

    def __init__(self, make: Callable[[], V], limit: int = KEY_LIMIT) -> None:
        self.make, self.limit = make, limit
        self.groups: dict[Hashable, V] = {}
        self.other = make()
        self._heap: list[_Kept] = []

    def get(self, key: Hashable) -> V:
        """The figures of ``key`` (``other``'s when it is not kept)."""
        found = self.groups.get(key)
        if found is not None:
            return found
        kept = _Kept(key)
        if len(self.groups) >= self.limit:
            if not self._heap or kept.rank >= self._heap[0].rank:
                return self.other
            evicted = heapq.heapreplace(self._heap, kept)
            self.other.merge(self.groups.pop(evicted.key))
        else:
            heapq.heappush(self._heap, kept)
        found = self.groups[key] = self.make()
        return found

    def merge(self, other: Groups[V]) -> None:
        for key, latencies in other.groups.items():
            self.get(key).merge(latencies)
        self.other.merge(other.other)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Groups) and (self.groups, self.other) == (other.groups, other.other)

    def __getstate__(self) -> tuple:
        return self.make, self.limit, self.groups, self.other

    def __setstate__(self, state: tuple) -> None:
        self.make, self.limit, self.groups, self.other = state
        self._heap = [_Kept(key) for key in self.groups]
        heapq.heapify(self._heap)
