"""Byte accounting over pipeline events: every stream byte is decoded, lost or reported.

Shared by the property tests and the damaged-capture tests: per (connection, direction),
the frames of exchanges (size prefix included) plus the lengths of non-decode anomalies
must add up to what was sent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kdissect.events import Anomaly, ConnectionSummary, Exchange, KafkaEvent

_DESCRIBE = ("decode_error", "retransmission_conflict")


def accounted(events: Iterable[KafkaEvent]) -> Counter[tuple[int, str]]:
    """Bytes per (conn_id, "request"/"response") that some event stands for.

    A frame cut by gaps of known length (its size field was captured) stands for its whole
    span, as does the anomaly for one too short to pair or still incomplete at the end: the
    gaps inside such a span are reported too but counted by the span. A connection never identified
    as Kafka has no Kafka anomaly: its bytes are those its connections row counts (delivered, or
    lost in gaps of known length).
    """
    events = list(events)
    spans = _cut_spans(events)
    out: Counter[tuple[int, str]] = Counter()
    for ev in events:
        if isinstance(ev, Exchange):
            for role, msg in (("request", ev.request), ("response", ev.response)):
                if msg is not None:
                    out[(ev.conn_id, role)] += 4 + msg.size
        elif isinstance(ev, ConnectionSummary) and not ev.is_kafka and ev.tcp is not None:
            for role, stats in zip(("request", "response"), ev.tcp, strict=True):
                out[(ev.conn_id, role)] += stats.bytes + stats.gap_bytes
        elif isinstance(ev, Anomaly) and ev.kind not in _DESCRIBE and ev.direction and ev.length:
            # These describe bytes counted elsewhere (a decode_error: the frame of an "undecodable"
            # exchange; a retransmission_conflict: bytes of the stream, which count once).
            if ev.kind == "gap" and _inside(spans.get((ev.conn_id, ev.direction), []), ev.offset, ev.length):
                continue
            out[(ev.conn_id, ev.direction)] += ev.length
    return out


def _cut_spans(events: list[KafkaEvent]) -> dict[tuple[int, str], list[tuple[int, int]]]:
    spans: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for ev in events:
        if isinstance(ev, Exchange):
            for role, msg in (("request", ev.request), ("response", ev.response)):
                if msg is not None and any(w.get("code") == "cut" for w in msg.warnings):
                    spans.setdefault((ev.conn_id, role), []).append((msg.offset, msg.offset + 4 + msg.size))
        elif isinstance(ev, Anomaly) and ev.kind in ("partial_frame", "truncated_frame") and ev.direction:
            assert ev.offset is not None and ev.length is not None
            spans.setdefault((ev.conn_id, ev.direction), []).append((ev.offset, ev.offset + ev.length))
    return spans


def _inside(spans: list[tuple[int, int]], offset: int | None, length: int) -> bool:
    return offset is not None and any(a <= offset and offset + length <= b for a, b in spans)


def anomaly_kinds(events: Iterable[KafkaEvent]) -> Counter[str]:
    return Counter(ev.kind for ev in events if isinstance(ev, Anomaly))
