"""Captures that start after the TLS handshake: TLS 1.3 decrypted by trial, TLS 1.2 reported."""

from __future__ import annotations

from kdissect.testing.conversation import tcp_conversation
from kdissect.tls.keylog import KeyLog
from tests.tls.tls_helpers import anomalies, exchanges, plaintext, run, session, summary


def _cut(s, at: int):
    """The session's segments from the time of plaintext message ``at`` on (no SYN, no handshake)."""
    start = s.plain[at][2]
    return [seg for seg in tcp_conversation(s.records) if seg.ts_ns >= start]


def test_tls13_after_the_handshake_is_decrypted_by_trial() -> None:
    s = session(20, version="1.3")
    others = session(2, version="1.3", sni="other.test").keylog  # more sessions in the key log
    events = run(_cut(s, 10), KeyLog(others + s.keylog))
    conn = summary(events)
    assert (conn.decryption, conn.tls_version, conn.cipher_suite) == ("trial", "TLS 1.3", "TLS_AES_256_GCM_SHA384")
    got = exchanges(events)
    start = s.plain[10][2]
    want = [e for e in exchanges(run(plaintext(s))) if e[0] is not None and e[0][4] >= start]
    assert len(got) == len(want) == 35 and got == want  # every exchange sent after the capture started
    assert set(anomalies(events)) <= {"midstream"}


def test_tls13_trial_works_mid_record_and_with_chacha() -> None:
    s = session(20, version="1.3", tls13_suite="TLS_CHACHA20_POLY1305_SHA256")
    segs = tcp_conversation(s.records, mss=500)
    start = s.plain[9][2]
    cut = [seg for seg in segs if seg.ts_ns >= start][1:]  # the first segment of a flight lost too
    events = run(cut, s.keylog)
    assert summary(events).decryption == "trial"
    assert len(exchanges(events)) >= 30


def test_tls12_after_the_handshake_is_no_handshake_and_nothing_invented() -> None:
    s = session(20, version="1.2", ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    events = run(_cut(s, 10), s.keylog)
    assert summary(events).decryption == "no handshake"
    assert exchanges(events) == []
    assert anomalies(events) == ["tls_no_key"]


def test_the_trial_budget_bounds_the_work_and_says_so() -> None:
    s = session(20, version="1.2", ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    tls13_keys = session(2, version="1.3").keylog  # something to try, that never fits
    events = run(_cut(s, 10), tls13_keys, tls_trial_connection=500)
    assert summary(events).decryption == "no handshake"
    assert sorted(anomalies(events)) == ["cap", "tls_no_key"]


def test_a_plain_kafka_connection_picked_up_midstream_is_untouched() -> None:
    s = session(20, version="1.3")
    start = s.plain[10][2]
    clear = [seg for seg in plaintext(s) if seg.ts_ns >= start]
    events = run(clear, s.keylog)
    assert summary(events).encrypted is False and summary(events).decryption is None
    assert len(exchanges(events)) == 35


def test_trial_finds_its_session_among_thousands_within_the_budget() -> None:
    import os

    def sessions(n: int) -> bytes:
        return b"".join(b"%s %s %s\n" % (label, os.urandom(32).hex().encode(), os.urandom(48).hex().encode())
                        for _ in range(n) for label in (b"CLIENT_TRAFFIC_SECRET_0", b"SERVER_TRAFFIC_SECRET_0"))

    s = session(20, version="1.3")
    events = run(_cut(s, 10), KeyLog(sessions(1500) + s.keylog + sessions(1500)))
    assert summary(events).decryption == "trial"
    assert len(exchanges(events)) == 35
