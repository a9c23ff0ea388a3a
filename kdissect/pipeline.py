"""The core pipeline as one sans-I/O object: TCP segments in, Kafka events out.

reassembly (TCP, knows nothing of Kafka) -> one :class:`KafkaConnection` per connection
(framing, decoding, pairing). Every engine — local files, live capture, Spark tasks —
feeds segments here and hands the events to its sinks.
"""

from __future__ import annotations

from .connection import KafkaConnection, Options
from .events import Anomaly, KafkaEvent
from .limits import CAP
from .reassembly.events import StreamData, StreamEnd, StreamGap, StreamStart
from .reassembly.segment import TcpSegment
from .reassembly.tcp import TcpReassembler


class KafkaPipeline:
    """Feed segments in capture order; call :meth:`finish` at the end of input."""

    def __init__(self, options: Options | None = None, *, conn_id_base: int = 0) -> None:
        self.options = options or Options()
        budget = self.options.budget
        self.reassembler = TcpReassembler(
            max_buffer_bytes=budget.ooo_bytes, max_connections=budget.connections, idle_timeout_ns=budget.idle_ns
        )
        # A connection's Kafka state is built at its first bytes: until then its start event stands
        # for it (SYN floods and scans cost a few hundred bytes each, not a Kafka connection).
        self.connections: dict[int, KafkaConnection | StreamStart] = {}
        self.conn_id_base = conn_id_base  # keeps ids unique when several pipelines' outputs are merged

    def feed(self, segment: TcpSegment) -> list[KafkaEvent]:
        return self._dispatch(self.reassembler.feed(segment))

    def finish(self) -> list[KafkaEvent]:
        return self._dispatch(self.reassembler.flush())

    def _connection(self, conn_id: int) -> KafkaConnection | None:
        conn = self.connections.get(conn_id)
        if isinstance(conn, StreamStart):
            conn = self.connections[conn_id] = KafkaConnection(
                self.conn_id_base + conn_id, conn.a, conn.b, conn.ts_ns, conn.syn_seen, self.options
            )
        return conn

    def _dispatch(self, events: list) -> list[KafkaEvent]:
        out: list[KafkaEvent] = []
        for ev in events:
            if isinstance(ev, StreamData):
                conn = self._connection(ev.conn_id)
                if conn is not None:
                    out.extend(conn.data(ev.direction, ev.offset, ev.data, ev.ts_ns))
            elif isinstance(ev, StreamGap):
                conn = self._connection(ev.conn_id)
                if conn is not None:
                    out.extend(conn.gap(ev.direction, ev.offset, ev.length, ev.ts_ns, ev.reason))
            elif isinstance(ev, StreamStart):
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
        limit = self.options.budget.connections
        return Anomaly(CAP, None, None, None, None, ts_ns,
                       f"more than {limit} connections open at once: connection {conn_id} (the least recently "
                       "active) ended early")  # fmt: skip
