"""Keys a Spark task cannot settle alone, and how its figures settle them on the driver.

A task decodes some connections only: it numbers them itself and knows a topic only by its id where
the Metadata answer naming it went to another task (``TableSink(resolve_topics=False)``). Its
figures key such a topic by :class:`TopicId` and order rows by each connection's place in capture
order (which orders them as the final connection ids do); the driver, which knows every place and
name (``tables.merge.Settled``), renames the keys (:func:`renamed`) and numbers the connections.
The local engine's figures never hold a :class:`TopicId`: its sink names topics itself.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TypeVar

from kdissect.analysis.bounded import Groups, Mergeable

V = TypeVar("V", bound=Mergeable)


class TopicId(str):
    """A topic known by its id only (the id as text)."""

    __slots__ = ()


def topic_key(topic: object, topic_id: object) -> object:
    """A row's topic: its name, else its id (a null id, all zero bits, is no id), else None."""
    if topic is not None:
        return topic
    if topic_id is None or getattr(topic_id, "int", 1) == 0:
        return None
    return TopicId(str(topic_id))


def namer(names: Mapping[str, str]) -> Callable[[object], object]:
    """What names a topic key from the whole run's topic id -> name map (None: an id never named)."""
    return lambda topic: names.get(topic) if isinstance(topic, TopicId) else topic


def renamed(groups: Groups[V], rename: Callable[[tuple], Hashable | None]) -> Groups[V]:
    """``groups`` with each key renamed (groups whose keys become equal merged; None: left out)."""
    out: Groups[V] = Groups(groups.make, groups.limit)
    for key, value in groups.groups.items():
        new = rename(key)  # type: ignore[arg-type]
        if new is not None:
            out.get(new).merge(value)
    out.other.merge(groups.other)
    return out
