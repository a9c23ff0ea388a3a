"""Where a batch of segments ends by its payload bytes (``segment.payload_cut``): the C twin
(``sources/_payload_cut.c``) against the Python loop, on segments the sources make and on items they do
not (other classes, payloads that are not bytes, a payload missing)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kdissect.sources import segment
from kdissect.sources.segment import TcpSegment, payload_cut

pytestmark = pytest.mark.skipif(segment._native is None, reason="the sources extension is not built")


class Loose:
    """Not a laid-out segment: read by its attribute."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload


def _segment(payload: Any) -> TcpSegment:
    return TcpSegment(0, "10.0.0.1", 1, "10.0.0.2", 2, 0, 0, 0, 0, payload, len(payload))


payloads = st.one_of(st.binary(max_size=40), st.builds(bytearray, st.binary(max_size=9)))
items = st.one_of(payloads.map(_segment), payloads.map(Loose))


def _both(segments: list, start: int, most: int, room: int) -> tuple[Any, Any]:
    def call() -> Any:
        try:
            return payload_cut(segments, start, most, room)
        except (ValueError, AttributeError, TypeError) as exc:
            return type(exc)

    native = call()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(segment, "_native", None)
        return native, call()


@given(segments=st.lists(items, max_size=20), start=st.integers(-1, 22), most=st.integers(-1, 25),
       room=st.integers(-5, 200))  # fmt: skip
def test_the_c_cut_is_the_python_loop(segments: list, start: int, most: int, room: int) -> None:
    native, python = _both(segments, start, most, room)
    assert native == python


def test_a_cut_takes_at_least_one_segment_and_stops_at_the_one_that_fills_it() -> None:
    segments = [_segment(bytes(n)) for n in (5, 0, 7, 3, 100)]
    assert payload_cut(segments, 0, 10, 10) == (3, 12)  # the third brings 12 >= 10
    assert payload_cut(segments, 0, 2, 100) == (2, 5)  # most first
    assert payload_cut(segments, 4, 10, 1) == (5, 100)  # one, whatever its size
    assert payload_cut(segments, 5, 10, 1) == (5, 0)  # none left


def test_items_the_sources_do_not_make_are_read_as_python_reads_them() -> None:
    assert _both([Loose(b"ab"), Loose(None)], 0, 5, 100) == (TypeError, TypeError)  # len(None)
    assert _both([object()], 0, 5, 100) == (AttributeError, AttributeError)
    assert _both([Loose(b"abc"), Loose(None)], 0, 5, 2) == ((1, 3), (1, 3))  # (stops before the bad one)
