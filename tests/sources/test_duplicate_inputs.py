"""The same packets read twice (a real capture with a copy of part of it; two rotations that overlap),
in either order, give the exchanges of the capture alone, and one anomaly per input says how many
packets were dropped as copies of which input's."""

from __future__ import annotations

from dataclasses import astuple
from functools import cache
from pathlib import Path

import pytest

from kdissect.engines import local
from kdissect.events import Anomaly, Exchange
from kdissect.sources.duplicates import DUPLICATE_PACKETS, DuplicateFilter
from kdissect.sources.files import iter_capture
from kdissect.sources.segment import TcpSegment
from kdissect.testing.pcapwrite import write_capture

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
REAL = ("librdkafka-produce-consume.pcap", "kafka-python-produce-consume.pcapng")


@cache
def segments(name: str) -> tuple[TcpSegment, ...]:
    return tuple(s for s in iter_capture(CAPTURES / name) if isinstance(s, TcpSegment))


def _exchanges(paths: list[Path]) -> tuple[list[tuple], list[Anomaly]]:
    exchanges, duplicates = [], []
    for ev in local.events(paths):
        if isinstance(ev, Exchange):
            first = ev.request or ev.response
            exchanges.append((ev.status, first.api_key, first.correlation_id, first.ts_first, first.size,
                              ev.response.ts_last if ev.response else None, ev.inferred))
        elif isinstance(ev, Anomaly) and ev.kind == DUPLICATE_PACKETS:
            duplicates.append(ev)
    return sorted(exchanges, key=repr), duplicates


def _write(path: Path, segs) -> Path:
    path.write_bytes(write_capture(segs))
    return path


@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("part", [(0, 2), (1, 3), (2, 4)], ids=["first-half", "middle", "second-half"])
def test_a_capture_read_with_a_copy_of_part_of_it_gives_its_exchanges_once(tmp_path: Path, name: str,
                                                                           part: tuple[int, int]) -> None:
    segs = segments(name)
    lo, hi = (len(segs) * q // 4 for q in part)
    whole = _write(tmp_path / "whole.pcap", segs)
    copy = _write(tmp_path / "copy.pcap", segs[lo:hi])
    alone, none = _exchanges([whole])
    assert alone and not none
    for order in ([whole, copy], [copy, whole]):
        got, duplicates = _exchanges(order)
        assert got == alone, order
        assert sum(row.length for row in duplicates) == hi - lo  # one row per connection
        for row in duplicates:  # the input met later on the timeline repeats the other
            repeated = str(whole) if row.source == str(copy) else str(copy)
            assert row.detail.endswith(f"of {repeated} (same sequence range, bytes and time): read once")


@pytest.mark.parametrize("name", REAL)
def test_overlapping_rotations_read_in_either_order_give_the_exchanges_once(tmp_path: Path, name: str) -> None:
    segs = segments(name)
    n = len(segs)
    alone, _ = _exchanges([_write(tmp_path / "whole.pcap", segs)])
    first = _write(tmp_path / "rot-1.pcap", segs[: 2 * n // 3])
    second = _write(tmp_path / "rot-2.pcap", segs[n // 3 :])
    for order in ([first, second], [second, first]):
        got, duplicates = _exchanges(order)
        assert got == alone, order
        assert sum(row.length for row in duplicates) == 2 * n // 3 - n // 3


def test_rotations_without_overlap_read_out_of_order_continue_each_other(tmp_path: Path) -> None:
    segs = segments(REAL[0])
    alone, _ = _exchanges([_write(tmp_path / "whole.pcap", segs)])
    parts = [_write(tmp_path / f"rot-{i}.pcap", segs[i * len(segs) // 3 : (i + 1) * len(segs) // 3]) for i in range(3)]
    got, duplicates = _exchanges(parts[::-1])
    assert got == alone and duplicates == []


def test_only_a_copy_from_another_input_is_dropped() -> None:
    """A retransmission differs in time, a duplicate on the wire comes from the same input: both stay."""
    seg = segments(REAL[0])[5]
    later = TcpSegment(seg.ts_ns + 1, *astuple(seg)[1:])
    dups = DuplicateFilter()
    assert [dups.keep(s, src) for s, src in ((seg, "a"), (seg, "a"), (later, "b"), (seg, "b"), (seg, "c"))] == [
        True, True, True, False, False]
    assert [n for _, _, n in dups.report()] == [1, 1]
