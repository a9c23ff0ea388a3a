"""The core pipeline as one sans-I/O object: TCP segments in, Kafka events out.

reassembly (TCP, knows nothing of Kafka) -> [the TLS stage, for a connection that looks like TLS]
-> one :class:`KafkaConnection` per connection (framing, decoding, pairing). Every engine — local
files, live capture, Spark tasks — feeds segments here and hands the events to its sinks.

Whether a connection goes through the TLS stage is decided at its first event: first bytes that
start a TLS record, or a direction picked up mid-stream (which may be TLS: the stage probes it and
steps aside if it is not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from kdissect.decoders.errors import CAP
from kdissect.events import Anomaly, KafkaEvent
from kdissect.kafka.session import KafkaConnection
from kdissect.options import Options
from kdissect.reassembly.lanes import NativeLanes
from kdissect.reassembly.reassembler import TcpReassembler
from kdissect.reassembly.streams import StreamConflict, StreamData, StreamEnd, StreamGap, StreamStart
from kdissect.sources.duplicates import DUPLICATE_PACKETS, DuplicateFilter
from kdissect.sources.segment import TcpSegment
from kdissect.tls.keylog import KeyLog
from kdissect.tls.probe import MidstreamProbe
from kdissect.tls.records import looks_like_tls

if TYPE_CHECKING:  # (loaded at the first TLS connection: the record ciphers cost a run without TLS its import)
    from kdissect.tls.connection import TlsConnection
    from kdissect.tls.trial import TrialRun

Connection: TypeAlias = "KafkaConnection | TlsConnection | MidstreamProbe"


class KafkaPipeline:
    """Feed segments in capture order; call :meth:`finish` at the end of input.

    Without ``options.auto_detect``, connections with no endpoint on a broker port are ignored.
    With ``several_inputs`` (the engine reads several files, merged by time, or a rotated set), a
    segment that repeats one fed from another input (``source``) is dropped and counted
    (:mod:`kdissect.sources.duplicates`); one input has nothing to repeat, and costs nothing."""

    def __init__(self, options: Options | None = None, *, opened: dict[int, str | None] | None = None,
                 several_inputs: bool = False) -> None:
        self.options = options or Options()
        opts = self.options
        self.reassembler = TcpReassembler(
            max_buffer_bytes=opts.ooo_bytes, max_connections=opts.max_connections, idle_timeout_ns=opts.idle_ns
        )
        # A connection's Kafka state is built at its first bytes: until then its start event stands
        # for it (SYN floods and scans cost a few hundred bytes each, not a Kafka connection).
        self.connections: dict[int, Connection | StreamStart] = {}
        # Key material for the TLS stage: the run's key log (a fresh one when none was given, so a
        # pcapng's Decryption Secrets Blocks have somewhere to go) and the trial decryption budget.
        self.keylog = opts.tls_keylog if opts.tls_keylog is not None else KeyLog()
        self._trials: TrialRun | None = None  # (made with the first TLS connection: see trials)
        # The engine names the input it is feeding (a capture file); with ``opened``, each connection's
        # id goes there with the name current when it opened, in opening order (``source_file`` columns).
        self.source: str | None = None
        self.opened = opened
        self.duplicates = DuplicateFilter() if several_inputs else None
        # The native path's in-order lanes (kdissect/reassembly/lanes.py), unless the extension is not
        # there. A lane does not ask the duplicate filter: segments pass the filter before the lanes.
        self.lanes = NativeLanes(self.reassembler) if NativeLanes.available() else None

    def feed(self, segment: TcpSegment) -> list[KafkaEvent]:
        if self.duplicates is not None and not self.duplicates.keep(segment, self.source):
            return []
        return self._feed_run([segment]) if self.lanes is not None else self._feed_one(segment)

    def feed_many(self, segments: list[TcpSegment], ats: list[int] | None = None,
                  opens: list[int] | None = None, sources: list[str | None] | None = None) -> list[KafkaEvent]:
        """Segments in capture order, their events in order: the same as ``feed`` on each, in one call,
        so the native lanes take runs of them without a Python step per segment. ``sources``: the
        input of each segment, for a batch of several inputs' (``source`` is set from it as they
        are fed; without it, all are ``source``'s). For an engine that places what each segment
        brought (the Spark tasks): ``ats`` gets the index in ``segments`` of the segment of each
        event, ``opens`` that of each connection opened (with ``opened``)."""
        if self.duplicates is None:
            return self._feed_run(segments, ats, opens, sources)
        # The filter judges each segment by the ones before it alone, so the batch's copies can go
        # first; the places of those kept map the indices back.
        keep = self.duplicates.keep
        of = sources if sources is not None else [self.source] * len(segments)
        kept = [i for i, segment in enumerate(segments) if keep(segment, of[i])]
        if len(kept) == len(segments):
            return self._feed_run(segments, ats, opens, sources)
        kept_ats: list[int] | None = [] if ats is not None else None
        kept_opens: list[int] | None = [] if opens is not None else None
        out = self._feed_run([segments[i] for i in kept], kept_ats, kept_opens,
                             None if sources is None else [sources[i] for i in kept])
        for indices, found in ((ats, kept_ats), (opens, kept_opens)):
            if indices is not None and found is not None:
                indices.extend([kept[i] for i in found])
        return out

    def _feed_run(self, segments: list[TcpSegment], ats: list[int] | None = None,
                  opens: list[int] | None = None, sources: list[str | None] | None = None) -> list[KafkaEvent]:
        """``feed_many`` of segments the duplicate filter passed: the lanes take what they can, the
        reference the rest (a lane's connection is open already: the input's name is not its concern)."""
        lanes = self.lanes
        out: list[KafkaEvent] = []
        i, n = 0, len(segments)
        while (i := lanes.run(segments, i, out, ats) if lanes is not None else i) < n:
            segment = segments[i]
            if sources is not None:
                self.source = sources[i]
            before = len(self.opened) if opens is not None and self.opened is not None else 0
            out.extend(self._feed_one(segment))
            if ats is not None:
                ats.extend([i] * (len(out) - len(ats)))
            if opens is not None and self.opened is not None:
                opens.extend([i] * (len(self.opened) - before))
            if lanes is not None:
                lanes.offer(segment, self.connections)
            i += 1
        return out

    def _feed_one(self, segment: TcpSegment) -> list[KafkaEvent]:
        return self._dispatch(self.reassembler.feed(segment))

    def finish(self) -> list[KafkaEvent]:
        if self.lanes is not None:
            self.lanes.release_all()
        out = self._dispatch(self.reassembler.flush())
        out.extend(Anomaly(DUPLICATE_PACKETS, None, None, None, n, None,
                           f"{n} packets of {source} repeat packets of connection {repeated} (same sequence "
                           "range, bytes and time): read once", source)
                   for source, repeated, n in (self.duplicates.report() if self.duplicates else ()))  # fmt: skip
        return out

    def add_secrets(self, text: bytes) -> None:
        """Key log text found in the input itself (a pcapng Decryption Secrets Block)."""
        self.keylog.feed(text)
        self.keylog.close()

    def trials(self) -> TrialRun:
        """The run's trial decryption budget, shared by its TLS connections."""
        if self._trials is None:
            from kdissect.tls.trial import TrialRun

            opts = self.options
            self._trials = TrialRun(opts.tls_trial_connection, opts.tls_trial_run, opts.tls_trial_max_seq)
        return self._trials

    def _connection(self, conn_id: int, first: StreamData | StreamGap | None = None) -> Connection | None:
        """A connection's state, built at its first bytes (or its mid-stream start)."""
        conn = self.connections.get(conn_id)
        if isinstance(conn, StreamStart):
            start = conn
            kafka = KafkaConnection(conn_id, start.a, start.b, start.ts_ns, start.syn_seen, self.options)
            midstream = isinstance(first, StreamGap) and first.reason == "midstream"
            ports = self.options.ports

            def tls(kafka: KafkaConnection = kafka, midstream: bool = midstream) -> TlsConnection:
                from kdissect.tls.connection import TlsConnection

                return TlsConnection(conn_id, kafka, self.keylog, self.trials(), midstream=midstream,
                                     report=start.a[1] in ports or start.b[1] in ports)  # fmt: skip

            if midstream:
                conn = MidstreamProbe(conn_id, kafka, tls)
            elif isinstance(first, StreamData) and looks_like_tls(first.data[:3]):
                conn = tls()
            else:
                conn = kafka
            self.connections[conn_id] = conn
        return conn

    def _dispatch(self, events: list) -> list[KafkaEvent]:
        out: list[KafkaEvent] = []
        for ev in events:
            if isinstance(ev, StreamData):
                conn = self._connection(ev.conn_id, ev)
                if conn is not None:
                    out.extend(conn.data(ev.direction, ev.offset, ev.data, ev.ts_ns))
            elif isinstance(ev, StreamGap):
                conn = self._connection(ev.conn_id, ev)
                if conn is not None:
                    out.extend(conn.gap(ev.direction, ev.offset, ev.length, ev.ts_ns, ev.reason))
            elif isinstance(ev, StreamConflict):
                conn = self.connections.get(ev.conn_id)
                if conn is not None and not isinstance(conn, StreamStart):  # (not built: no bytes decoded yet)
                    out.extend(conn.conflict(ev))
            elif isinstance(ev, StreamStart):
                if self.opened is not None:
                    self.opened[ev.conn_id] = self.source
                ports = self.options.ports
                if self.options.auto_detect or ev.a[1] in ports or ev.b[1] in ports:
                    self.connections[ev.conn_id] = ev
            elif isinstance(ev, StreamEnd):
                conn = self._connection(ev.conn_id)
                if conn is not None:
                    del self.connections[ev.conn_id]
                    if ev.reason == "evicted":
                        out.append(self._evicted(conn.conn_id, ev.ts_ns))
                    out.extend(conn.end(ev.ts_ns, ev.reason, ev.stats))
        return out

    def _evicted(self, conn_id: int, ts_ns: int) -> Anomaly:
        """Connections over the tracked bound end early; their anomalies add up in one counted row."""
        limit = self.options.max_connections
        return Anomaly(CAP, None, None, None, None, ts_ns,
                       f"more than {limit} connections open at once: connection {conn_id} (the least recently "
                       "active) ended early")  # fmt: skip
