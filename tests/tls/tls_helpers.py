"""Captures of in-process TLS sessions (kdissect.testing.tls_session) and their plaintext twins."""

from __future__ import annotations

import functools

from kdissect.engines.local import events_from
from kdissect.events import Anomaly, ConnectionSummary, Exchange, KafkaEvent
from kdissect.options import Options
from kdissect.sources.segment import TcpSegment
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.synthetic import kafka_messages
from kdissect.testing.tls_session import TlsSession, tls_session, tls_session_subprocess
from kdissect.tls.keylog import KeyLog


@functools.cache
def session(n: int = 3, **kw) -> TlsSession:
    """One session per parameter set for the whole test run (OpenSSL's handshake costs ~ms)."""
    suite = kw.pop("tls13_suite", None)
    if suite is not None:
        return tls_session_subprocess(kafka_messages(n), tls13_suite=suite, **kw)
    return tls_session(kafka_messages(n), **kw)


def run(segments: list[TcpSegment], keylog: bytes | KeyLog | None = None, **opts) -> list[KafkaEvent]:
    keys = keylog if isinstance(keylog, KeyLog) or keylog is None else KeyLog(keylog)
    return list(events_from(segments, Options(tls_keylog=keys, **opts)))


def encrypted(s: TlsSession) -> list[TcpSegment]:
    return tcp_conversation(s.records)


def plaintext(s: TlsSession) -> list[TcpSegment]:
    return tcp_conversation(s.plain)


def exchanges(events: list[KafkaEvent]) -> list[tuple]:
    """What an exchange row depends on: status, kinds, ids, sizes, times, decoded bodies."""
    out = []
    for e in events:
        if isinstance(e, Exchange):
            sides = [None if m is None else (m.api_key, m.api_version, m.correlation_id, m.size, m.ts_first,
                                             m.ts_last, m.body) for m in (e.request, e.response)]  # fmt: skip
            out.append((*sides, e.status))
    return out


def anomalies(events: list[KafkaEvent]) -> list[str]:
    return [a.kind for a in events if isinstance(a, Anomaly)]


def summary(events: list[KafkaEvent]) -> ConnectionSummary:
    [one] = [c for c in events if isinstance(c, ConnectionSummary)]
    return one
