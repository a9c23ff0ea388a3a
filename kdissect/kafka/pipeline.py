"""The core pipeline as one sans-I/O object: TCP segments in, Kafka events out.

reassembly (TCP, knows nothing of Kafka) -> one :class:`KafkaConnection` per connection
(framing, decoding, pairing). Every engine — local files, live capture, Spark tasks —
feeds segments here and hands the events to its sinks.
"""

from __future__ import annotations

from kdissect.events import KafkaEvent
from kdissect.kafka.session import KafkaConnection
from kdissect.options import Options
from kdissect.reassembly.reassembler import TcpReassembler
from kdissect.reassembly.streams import StreamConflict, StreamData, StreamEnd, StreamGap, StreamStart
from kdissect.sources.segment import TcpSegment


class KafkaPipeline:
    """Feed segments in capture order; call :meth:`finish` at the end of input.

    Without ``options.auto_detect``, connections with no endpoint on a broker port are ignored."""

    def __init__(self, options: Options | None = None, *, idle_timeout_ns: int | None = None,
                 opened: dict[int, str | None] | None = None) -> None:  # fmt: skip
        self.options = options or Options()
        # A live capture never ends: it ends connections silent for ``idle_timeout_ns`` of capture time.
        self.reassembler = TcpReassembler(idle_timeout_ns=idle_timeout_ns)
        self.connections: dict[int, KafkaConnection] = {}
        # The engine names the input it is feeding (a capture file); with ``opened``, each connection's
        # id goes there with the name current when it opened, in opening order (``source_file`` columns).
        self.source: str | None = None
        self.opened = opened

    def feed(self, segment: TcpSegment) -> list[KafkaEvent]:
        return self._dispatch(self.reassembler.feed(segment))

    def finish(self) -> list[KafkaEvent]:
        return self._dispatch(self.reassembler.flush())

    def _dispatch(self, events: list) -> list[KafkaEvent]:
        out: list[KafkaEvent] = []
        for ev in events:
            if isinstance(ev, StreamData):
                conn = self.connections.get(ev.conn_id)
                if conn is not None:
                    out.extend(conn.data(ev.direction, ev.offset, ev.data, ev.ts_ns))
            elif isinstance(ev, StreamGap):
                conn = self.connections.get(ev.conn_id)
                if conn is not None:
                    out.extend(conn.gap(ev.direction, ev.offset, ev.length, ev.ts_ns, ev.reason))
            elif isinstance(ev, StreamConflict):
                conn = self.connections.get(ev.conn_id)
                if conn is not None:
                    out.extend(conn.conflict(ev))
            elif isinstance(ev, StreamStart):
                if self.opened is not None:
                    self.opened[ev.conn_id] = self.source
                ports = self.options.ports
                if self.options.auto_detect or ev.a[1] in ports or ev.b[1] in ports:
                    self.connections[ev.conn_id] = KafkaConnection(
                        ev.conn_id, ev.a, ev.b, ev.ts_ns, ev.syn_seen, self.options
                    )
            elif isinstance(ev, StreamEnd):
                conn = self.connections.pop(ev.conn_id, None)
                if conn is not None:
                    out.extend(conn.end(ev.ts_ns, ev.reason, ev.stats))
        return out
