"""The sources stage's native path (``_native.c``): common capture records to segments, many per call.

Why: on chatty traffic (many small packets) building a record object, then walking link, IP and
TCP in Python cost several microseconds a packet. Here runs of plain records (classic pcap records,
pcapng Enhanced and Simple Packet Blocks, or a live engine's ``CaptureRecord`` objects) become
``TcpSegment`` objects in one C call; the Python path (``pcap.py``/``pcapng.py`` then ``packets.py``)
stays the reference and
decodes every record the C code declines (cut, malformed, not TCP, fragments, extension headers),
one at a time, reporting what it finds, and ``tests/sources/test_native_sources.py`` checks both
paths give the same events and counters.

The defragmenter's clock counts records, and an IP fragment makes it hold state that later records
must pass by (to expire it): so after a record that may be a fragment, and while the defragmenter
holds anything, the records go through Python.
"""

from __future__ import annotations

from typing import Any

from kdissect.dataclass import dataclass
from kdissect.native import native_module
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import CaptureRecord, RecordEvent, SourceEvent

_native = native_module("sources._native")

# The fields of a packed segment (``_segments.h``'s PackedSegment), in order, as numpy type strings
# (native byte order): its 4-tuple (addresses are ``version`` 4 or 16 bytes, zero-padded), the TCP
# fields, and where its captured payload lies in the stream (``payload_at``, ``captured`` bytes).
PACKED_FIELDS = (("ts", "=i8"), ("payload_at", "=i8"), ("payload_len", "=i8"), ("seq", "=u4"), ("ack", "=u4"),
                 ("captured", "=u4"), ("flags", "=u2"), ("window", "=u2"), ("src_port", "=u2"), ("dst_port", "=u2"),
                 ("version", "u1"), ("pad", "V3"), ("src", "V16"), ("dst", "V16"))  # fmt: skip


@dataclass(frozen=True, slots=True)
class PackedSegments:
    """A run of common segments in stream order, packed (``PACKED_FIELDS``) with no object per segment:
    what a packed walk gives a reader that keeps segments as headers and payload offsets (the Spark
    engine's read side), where the others get a ``TcpSegment`` (and its ``CaptureRecord``) each.
    ``shift``: what to add to a ``payload_at`` for its offset in the file (a range of a file is read
    after its header, so its stream offsets are not the file's)."""

    data: bytes
    shift: int = 0


class NativeRecords:
    """Takes runs of common records for one capture stream; ``active`` is False while Python must go on.

    With ``with_records`` each segment comes out as a ``(CaptureRecord, TcpSegment)`` pair, the record
    built as the Python reader builds it (for a reader that wants both); ``packed``, each run taken in
    one call comes out as one ``PackedSegments``."""

    __slots__ = ("active", "captured", "packed", "record_type", "records")

    def __init__(self, with_records: bool = False, packed: bool = False) -> None:
        self.record_type = CaptureRecord if with_records else None
        self.packed = packed
        self.active = True
        self.records = 0  # records taken since the owner last counted them
        self.captured = 0  # their captured bytes

    @staticmethod
    def available() -> bool:
        return _native is not None

    def take(self, buf: bytes, pos: int, base: int, big_endian: bool, ns_per_unit: int, rec_len: int,
             max_caplen: int, link_type: int, out: list[RecordEvent]) -> tuple[int, int | None]:
        """Segments of the common records from ``pos`` appended to ``out`` (``base``: the stream offset of
        ``buf[0]``): (bytes taken, the second of the last record taken or None)."""
        assert _native is not None
        packed = bytearray() if self.packed else None
        end, records, captured, last_sec, stop = _native.pcap_segments(
            buf, pos, big_endian, ns_per_unit, rec_len, max_caplen, link_type, TcpSegment, out, base,
            self.record_type if packed is None else packed)
        self._taken(records, captured, stop, packed, out)
        return end - pos, (last_sec if records else None)

    def take_pcapng(self, buf: bytes, pos: int, base: int, big_endian: bool, interfaces: list[Any],
                    max_block_len: int, last_ts: int, out: list[RecordEvent]) -> tuple[int, int]:
        """Segments of the common packet blocks from ``pos`` (``interfaces``: the section's, as
        ``pcapng.py`` read them) appended to ``out``: (bytes taken, the timestamp of the last one)."""
        assert _native is not None
        packed = bytearray() if self.packed else None
        end, records, captured, last_ts, stop = _native.pcapng_segments(
            buf, pos, big_endian, interfaces, max_block_len, last_ts, TcpSegment, out, base,
            self.record_type if packed is None else packed)
        self._taken(records, captured, stop, packed, out)
        return end - pos, last_ts

    def _taken(self, records: int, captured: int, stop: int, packed: bytearray | None, out: list[Any]) -> None:
        assert _native is not None
        if packed:
            out.append(PackedSegments(bytes(packed)))
        if stop == _native.DEFER_UNSAFE:
            self.active = False
        self.records += records
        self.captured += captured

    def counted(self) -> tuple[int, int]:
        """Records and captured bytes taken since the last call."""
        taken = self.records, self.captured
        self.records = self.captured = 0
        return taken


def record_segments(events: list[Any], index: int, out: list[SourceEvent]) -> tuple[int, int, int] | None:
    """The segments of the run of common ``CaptureRecord`` objects of ``events`` from ``index``,
    appended to ``out``: (index reached, records taken, their captured bytes); None without the
    native path. The item at the index reached (if any) is the Python path's."""
    if _native is None:
        return None
    end, records, captured, _stop = _native.record_segments(events, index, CaptureRecord, TcpSegment, out)
    return end, records, captured
