"""A connection picked up mid-stream: TLS or not? Its first bytes are anywhere inside a record or a
Kafka frame, so the first bytes cannot tell. The probe holds the runs (bounded) while record readers
hunt for a chain of TLS record headers in each direction; the first chain found makes it TLS, a
direction hunted past a whole maximum record (or too much held) makes it plain. Either way the
held runs are replayed, unchanged, into the sink chosen, and the probe steps aside.
"""

from __future__ import annotations

from collections.abc import Callable

from kdissect.reassembly.streams import DirectionStats, RunSink, StreamConflict
from kdissect.tls.records import HEADER, MAX_RECORD, RecordReader

PROBE_BYTES = 64 * 1024  # bytes held before deciding the connection is not TLS


class MidstreamProbe:
    """A ``RunSink`` that decides between ``plain`` and the TLS stage ``tls()`` builds."""

    def __init__(self, conn_id: int, plain: RunSink, tls: Callable[[], RunSink]) -> None:
        self.conn_id = conn_id
        self.sink: RunSink | None = None
        self._plain = plain
        self._tls = tls
        self._readers = (RecordReader(hunting=True), RecordReader(hunting=True))
        self._held: list[tuple] = []
        self._held_bytes = 0

    def data(self, direction: int, offset: int, data: bytes, ts_ns: int) -> list:
        if self.sink is not None:
            return self.sink.data(direction, offset, data, ts_ns)
        self._held.append(("data", direction, offset, data, ts_ns))
        self._held_bytes += len(data)
        self._readers[direction].feed(offset, data, ts_ns)
        return self._decide()

    def gap(self, direction: int, offset: int, length: int | None, ts_ns: int, reason: str) -> list:
        if self.sink is not None:
            return self.sink.gap(direction, offset, length, ts_ns, reason)
        self._held.append(("gap", direction, offset, length, ts_ns, reason))
        self._readers[direction].gap(offset, length, ts_ns, reason)
        return []

    def conflict(self, ev: StreamConflict) -> list:
        if self.sink is not None:
            return self.sink.conflict(ev)  # type: ignore[attr-defined]
        self._held.append(("conflict", ev))
        return []

    def end(self, ts_ns: int, reason: str, stats: tuple[DirectionStats, DirectionStats] | None = None) -> list:
        events: list = []
        if self.sink is None:
            for reader in self._readers:
                if reader.at is not None:
                    reader.finish(ts_ns)
            events = self._choose(self._tls() if self._synced() else self._plain)
        assert self.sink is not None
        return events + self.sink.end(ts_ns, reason, stats)

    def _synced(self) -> bool:
        return any(reader.synced for reader in self._readers)

    def _decide(self) -> list:
        if self._synced():
            return self._choose(self._tls())
        hopeless = any(reader.skipped > MAX_RECORD + HEADER for reader in self._readers)
        if hopeless or self._held_bytes > PROBE_BYTES:
            return self._choose(self._plain)
        return []

    def _choose(self, sink: RunSink) -> list:
        """Replay what was held into ``sink``, which takes every run from now on."""
        self.sink = sink
        events: list = []
        for run in self._held:
            if run[0] == "data":
                events.extend(sink.data(*run[1:]))
            elif run[0] == "gap":
                events.extend(sink.gap(*run[1:]))
            else:
                events.extend(sink.conflict(run[1]))  # type: ignore[attr-defined]
        self._held.clear()
        self._readers = ()  # type: ignore[assignment]  # done with: their buffers go
        return events
