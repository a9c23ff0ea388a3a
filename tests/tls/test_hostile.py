"""Bad TLS input gives anomaly rows, never a traceback, in bounded time."""

from __future__ import annotations

import random
import time

from kdissect.testing.conversation import tcp_conversation
from kdissect.tls.keylog import MAX_LINE, KeyLog
from kdissect.tls.records import RecordReader
from tests.tls.tls_helpers import anomalies, encrypted, exchanges, plaintext, run, session, summary

HELLO = b"\x16\x03\x01"


def test_absurd_record_lengths_and_junk_are_malformed_rows() -> None:
    junk = [(0, HELLO + b"\xff\xff" + bytes(300), 1), (1, b"\x17\x03\x03\x00\x10" + bytes(16) + b"\x99" * 50, 2)]
    events = run(tcp_conversation(junk))
    assert "tls_malformed" in anomalies(events)
    assert summary(events).encrypted


def test_truncated_and_malformed_handshakes() -> None:
    s = session(version="1.3")
    first = s.records[0][1]
    cases = [
        [(0, first[: len(first) // 2], 1)],  # cut in the middle of the ClientHello
        [(0, first[:5] + b"\x01\x00\x00\x05" + b"\x03\x03", 1)],  # a ClientHello shorter than its random
        [(0, first[:9] + b"\xff" * (len(first) - 9), 1)],  # lengths that run past everything
    ]
    for messages in cases:
        events = run(tcp_conversation(messages), s.keylog)
        assert summary(events).encrypted
        assert set(anomalies(events)) <= {"tls_malformed", "tls_no_key"}


def test_flipped_ciphertext_bytes_are_decrypt_errors_and_the_rest_still_decrypts() -> None:
    s = session(6, version="1.2", ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    records = list(s.records)
    index = next(i for i, (d, _, t) in enumerate(records) if t == s.plain[4][2])
    d, data, t = records[index]
    records[index] = (d, data[:-3] + bytes(b ^ 0x55 for b in data[-3:]), t)
    events = run(tcp_conversation(records), s.keylog)
    assert "tls_decrypt_error" in anomalies(events)
    assert summary(events).decryption == "handshake"
    assert len(exchanges(events)) >= 10


def test_random_bytes_after_a_real_hello_cost_linear_time() -> None:
    s = session(version="1.3")
    rng = random.Random(7)
    noise = bytes(rng.getrandbits(8) for _ in range(400_000))
    messages = [s.records[0], (1, noise, s.records[1][2])]
    t = time.process_time()
    events = run(tcp_conversation(messages), s.keylog)
    assert time.process_time() - t < 10
    assert summary(events).encrypted


def test_the_record_reader_holds_at_most_one_record() -> None:
    reader = RecordReader()
    reader.feed(0, b"\x17\x03\x03\x48\x00", 0)  # a record of 18432 bytes announced
    for i in range(100):
        reader.feed(5 + i * 100, b"x" * 100, 0)
    assert reader.pending_bytes <= 5 + 18432


def test_a_key_log_of_junk_is_counted_not_fatal() -> None:
    s = session(version="1.3")
    junk = b"\n".join([b"CLIENT_RANDOM zz 00", b"NOT_A_LABEL " + b"00" * 32 + b" " + b"11" * 32, b"\xff\xfe\x00",
                       b"CLIENT_RANDOM " + b"00" * 31 + b" " + b"11" * 48, b"x" * (MAX_LINE * 3)])  # fmt: skip
    keylog = KeyLog(junk + b"\n" + s.keylog)
    assert keylog.junk_lines == 5 and len(keylog) == 1
    assert exchanges(run(encrypted(s), keylog)) == exchanges(run(plaintext(s)))
    assert "11" * 32 not in repr(keylog)


def test_a_plaintext_alert_is_a_tls_alert_row_naming_it() -> None:
    s = session(version="1.3")
    refused = [s.records[0], (1, b"\x15\x03\x03\x00\x02\x02\x28", s.records[1][2])]  # fatal handshake_failure
    events = run(tcp_conversation(refused), s.keylog)
    alerts = [a for a in events if getattr(a, "kind", None) == "tls_alert"]
    assert len(alerts) == 1 and "fatal" in alerts[0].detail and "handshake_failure" in alerts[0].detail
    assert alerts[0].direction == "response"


def test_random_damage_to_real_sessions_never_raises() -> None:
    """Flipped bytes, cut segments and dropped segments anywhere in TLS 1.3 and 1.2 sessions (with
    their keys): rows and anomalies, never an exception."""
    from kdissect.testing.synthetic import with_payload

    rng = random.Random(11)
    for s in (session(version="1.3"), session(version="1.2", ciphers="ECDHE-RSA-AES128-SHA", etm=False)):
        segments = tcp_conversation(s.records, mss=300)
        for _ in range(40):
            damaged = list(segments)
            for _ in range(rng.randint(1, 4)):
                k = rng.randrange(len(damaged))
                payload = bytearray(damaged[k].payload)
                if not payload:
                    continue
                choice = rng.random()
                if choice < 0.5:
                    payload[rng.randrange(len(payload))] ^= 1 << rng.randrange(8)
                elif choice < 0.8:
                    payload = payload[: rng.randrange(len(payload))]
                else:
                    del damaged[k]
                    continue
                damaged[k] = with_payload(damaged[k], bytes(payload))
            events = run(damaged, s.keylog)
            assert summary(events).encrypted


def test_records_held_for_trial_decryption_are_bounded_per_run(monkeypatch) -> None:
    from kdissect.tls import trial
    from kdissect.tls.records import Record

    monkeypatch.setattr(trial, "RUN_HOLD_BYTES", 100_000)
    run_ = trial.TrialRun(10, 10, 64)
    directions = [trial.DirectionTrial(run_) for _ in range(50)]
    for i in range(200):
        for d in directions:
            d.add(Record(23, 0x0303, bytes(1000), i * 1005, i))
    assert run_.held <= 100_000 + 50 * 1000  # the bound, plus at most a first probe per direction
    assert run_.held == sum(d.held_bytes for d in directions)
    for d in directions:
        d.release()
    assert run_.held == 0


def test_renegotiation_is_reported_and_not_followed() -> None:
    """Python cannot renegotiate, so the HelloRequest is handed to an established connection's
    handshake reader directly: one row, and the next ChangeCipherSpec stops decryption there."""
    from kdissect.kafka.session import KafkaConnection
    from kdissect.options import Options
    from kdissect.tls.connection import TlsConnection
    from kdissect.tls.records import Record
    from kdissect.tls.trial import TrialRun

    s = session(version="1.2", ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    ends = (("10.0.0.1", 40000), ("10.0.0.2", 9092))
    conn = TlsConnection(1, KafkaConnection(1, *ends, 0, True, Options()), KeyLog(s.keylog), TrialRun(10, 10, 64),
                         midstream=False, report=True)  # fmt: skip
    offsets = [0, 0]
    for d, data, ts in s.records:
        conn.data(d, offsets[d], data, ts)
        offsets[d] += len(data)
    assert conn.established and conn.decrypted
    hello_request = Record(22, 0x0303, b"", 0, 1)
    [row] = conn._message(1, 0, b"", hello_request)
    assert row.kind == "tls_decrypt_error" and "renegotiation" in row.detail
    conn._record(1, Record(20, 0x0303, b"\x01", 0, 2))  # the server's next ChangeCipherSpec
    assert conn.dirs[1].cipher is None
