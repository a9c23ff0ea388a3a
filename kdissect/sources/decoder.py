"""The whole sans-I/O source: capture-file bytes in, TCP segments and anomalies out.

What the file front, a live pipe and a Spark task all drive; it joins the push parser
to the packet decoder and keeps the counters.
"""

from __future__ import annotations

from kdissect.sources.defrag import DefragLimits
from kdissect.sources.native_records import NativeRecords, PackedSegments
from kdissect.sources.packets import PacketDecoder
from kdissect.sources.reader import CaptureParser
from kdissect.sources.record_loop import ReaderLimits
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import CaptureRecord, DecryptionSecrets, RecordEvent, SourceEvent, SourceStats

_DECODED = frozenset((TcpSegment, PackedSegments))  # what the native path hands over decoded


class CaptureDecoder:
    """Feed pcap/pcapng bytes in any chunking; get events in stream order (with ``records``, each
    ``CaptureRecord`` too, before the events decoded from it; ``packed`` too, each run of segments the
    native path takes as one ``PackedSegments`` in their place). Common pcap records and pcapng packet
    blocks take the native path when it is built (``native_records``).

    Raises ``CaptureFormatError`` only when the stream is not a capture at all.
    """

    def __init__(
        self,
        limits: ReaderLimits | None = None,
        defrag: DefragLimits | None = None,
        stats: SourceStats | None = None,
        records: bool = False,
        packed: bool = False,
    ) -> None:
        self.stats = stats if stats is not None else SourceStats()
        self._records = records
        native = NativeRecords(with_records=records, packed=packed) if NativeRecords.available() else None
        self._native = native
        self._parser = CaptureParser(limits, native)
        self._packets = PacketDecoder(defrag, self.stats)

    @property
    def buffered(self) -> int:
        """Stream bytes held waiting for the rest of their record or block."""
        return self._parser.buffered

    def feed(self, data: bytes) -> list[SourceEvent]:
        """Add the next stream bytes; return the events they complete."""
        self.stats.bytes_read += len(data)
        self._arm()
        return self._decode(self._parser.feed(data))

    def close(self) -> list[SourceEvent]:
        """End of stream: the last records, truncation, and incomplete IP datagrams."""
        self._arm()
        out = self._decode(self._parser.close())
        self._packets.flush(out)
        return out

    def _arm(self) -> None:
        """The native path may take records from here unless the defragmenter holds fragments."""
        if self._native is not None:
            self._native.active = not self._packets.reassembling

    def _decode(self, records: list[RecordEvent | TcpSegment | tuple[CaptureRecord, TcpSegment] | PackedSegments]
                ) -> list[SourceEvent]:  # fmt: skip
        # (the common chunk: every record taken natively, handed on as it is, with no step per packet)
        out = records if set(map(type, records)) <= _DECODED else self._decoded(records)
        if self._native is not None:
            self._packets.count_native(*self._native.counted())
        return out  # type: ignore[return-value]

    def _decoded(self, records: list[RecordEvent | TcpSegment | tuple[CaptureRecord, TcpSegment] | PackedSegments]
                 ) -> list[SourceEvent]:  # fmt: skip
        out: list[SourceEvent] = []
        decode = self._packets.decode
        keep = self._records
        for event in records:
            kind = type(event)
            if kind is TcpSegment or kind is PackedSegments:  # records the native path decoded
                out.append(event)  # type: ignore[arg-type]
            elif kind is tuple:  # the same, with its record (``records``)
                out += event  # type: ignore[arg-type]
            elif kind is CaptureRecord:
                if keep:
                    out.append(event)
                decode(event, out)  # type: ignore[arg-type]
            elif kind is DecryptionSecrets:
                out.append(event)  # type: ignore[arg-type]
            else:
                self.stats.anomalies += 1
                out.append(event)  # type: ignore[arg-type]
        return out


def decode_capture(
    data: bytes, limits: ReaderLimits | None = None, defrag: DefragLimits | None = None
) -> tuple[list[SourceEvent], SourceStats]:
    """Decode a whole in-memory capture in one call (tests, a Spark task's blob)."""
    decoder = CaptureDecoder(limits, defrag)
    events = decoder.feed(data)
    events += decoder.close()
    return events, decoder.stats
