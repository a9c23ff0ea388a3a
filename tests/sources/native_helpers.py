"""Shared by the native sources' differential tests: the extension swapped for a counting spy or
for nothing (the Python reference), and a capture decoded both ways, with and without its records
(the Spark engine reads them to locate payloads)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager

from kdissect.sources import native_records
from kdissect.sources.files import iter_capture
from kdissect.sources.shapes import SourceStats


class Spy:
    """The extension, counting the records it took."""

    def __init__(self, real) -> None:
        self.real, self.taken = real, 0
        self.DEFER_SAFE, self.DEFER_UNSAFE = real.DEFER_SAFE, real.DEFER_UNSAFE

    def pcap_segments(self, *args):
        result = self.real.pcap_segments(*args)
        self.taken += result[1]
        return result

    def pcapng_segments(self, *args):
        result = self.real.pcapng_segments(*args)
        self.taken += result[1]
        return result

    def record_segments(self, *args):
        result = self.real.record_segments(*args)
        self.taken += result[1]
        return result


@contextmanager
def extension(module) -> Iterator[None]:
    saved = native_records._native
    native_records._native = module
    try:
        yield
    finally:
        native_records._native = saved


def decode(data: bytes, chunk: int | None = None, records: bool = False) -> tuple[list, SourceStats]:
    """Events and counters of a capture (gzip or not) read ``chunk`` bytes at a time."""
    stats = SourceStats()
    events = list(iter_capture(io.BytesIO(data), chunk_size=chunk or max(1, len(data)), stats=stats,
                               records=records))
    return events, stats


def both(data: bytes, chunk: int | None = None) -> tuple[tuple[list, SourceStats], tuple[list, SourceStats], int]:
    """(native result, reference result, records the native path took); read with records too, the
    two paths must also agree."""
    spy = Spy(native_records._native)
    with extension(spy):
        native = decode(data, chunk)
    with extension(native_records._native):
        with_records = decode(data, chunk, records=True)
    with extension(None):
        reference = decode(data, chunk)
        assert with_records == decode(data, chunk, records=True)
    return native, reference, spy.taken


def assert_damaged_decodes_the_same(sample: bytes, damage: list[tuple[int, int]], cut: int, chunk: int) -> None:
    """``sample`` with bytes overwritten (position, value), cut at ``cut`` and read ``chunk`` bytes at a
    time: the native path and the reference give the same events and counters."""
    data = bytearray(sample)
    for at, value in damage:
        data[at] = value
    native, reference, _taken = both(bytes(data[:cut]), chunk)
    assert native == reference
