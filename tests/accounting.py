"""Byte accounting over pipeline events: every stream byte is decoded, lost or reported.

Shared by the property tests and the damaged-capture tests: per (connection, direction),
the frames of exchanges (size prefix included) plus the lengths of non-decode anomalies
must add up to what was sent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kdissect.events import Anomaly, Exchange, KafkaEvent


def accounted(events: Iterable[KafkaEvent]) -> Counter[tuple[int, str]]:
    """Bytes per (conn_id, "request"/"response") that some event stands for."""
    out: Counter[tuple[int, str]] = Counter()
    for ev in events:
        if isinstance(ev, Exchange):
            for role, msg in (("request", ev.request), ("response", ev.response)):
                if msg is not None:
                    out[(ev.conn_id, role)] += 4 + msg.size
        elif isinstance(ev, Anomaly) and ev.kind != "decode_error" and ev.direction and ev.length:
            # A decode_error anomaly describes the frame of an "undecodable" exchange: counted there.
            out[(ev.conn_id, ev.direction)] += ev.length
    return out


def anomaly_kinds(events: Iterable[KafkaEvent]) -> Counter[str]:
    return Counter(ev.kind for ev in events if isinstance(ev, Anomaly))
