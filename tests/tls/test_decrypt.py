"""Real OpenSSL TLS sessions carrying Kafka frames, decrypted with their key logs: the exchanges
equal those of the same frames sent in the clear, for every suite family and both versions."""

from __future__ import annotations

import pytest

from kdissect.tls.keylog import KeyLog
from tests.tls.tls_helpers import anomalies, encrypted, exchanges, plaintext, run, session, summary

CASES = {
    "tls13-aes256gcm": dict(version="1.3"),
    "tls13-aes128gcm": dict(version="1.3", tls13_suite="TLS_AES_128_GCM_SHA256"),
    "tls13-chacha20": dict(version="1.3", tls13_suite="TLS_CHACHA20_POLY1305_SHA256"),
    "tls13-ccm": dict(version="1.3", tls13_suite="TLS_AES_128_CCM_SHA256"),
    "tls12-aes128gcm": dict(version="1.2", ciphers="ECDHE-RSA-AES128-GCM-SHA256"),
    "tls12-aes256gcm": dict(version="1.2", ciphers="ECDHE-RSA-AES256-GCM-SHA384"),
    "tls12-chacha20": dict(version="1.2", ciphers="ECDHE-RSA-CHACHA20-POLY1305"),
    "tls12-cbc-sha-etm": dict(version="1.2", ciphers="ECDHE-RSA-AES128-SHA"),
    "tls12-cbc-sha-mte": dict(version="1.2", ciphers="ECDHE-RSA-AES128-SHA", etm=False),
    "tls12-cbc-sha256": dict(version="1.2", ciphers="ECDHE-RSA-AES128-SHA256", etm=False),
    "tls12-cbc-sha384": dict(version="1.2", ciphers="ECDHE-RSA-AES256-SHA384"),
    "tls12-ccm": dict(version="1.2", ciphers="ECDHE-ECDSA-AES128-CCM", key_type="ec"),
    "tls12-ccm8": dict(version="1.2", ciphers="ECDHE-ECDSA-AES256-CCM8", key_type="ec"),
}
SUITE_NAMES = {
    "tls13-aes256gcm": "TLS_AES_256_GCM_SHA384", "tls13-chacha20": "TLS_CHACHA20_POLY1305_SHA256",
    "tls12-cbc-sha-mte": "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "tls12-ccm8": "TLS_ECDHE_ECDSA_WITH_AES_256_CCM_8",
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_decrypted_exchanges_equal_the_plaintext_ones(case: str) -> None:
    kw = dict(CASES[case])
    s = session(**kw)
    clear = run(plaintext(s))
    decrypted = run(encrypted(s), s.keylog)
    assert len(exchanges(clear)) == 6
    assert exchanges(decrypted) == exchanges(clear)
    assert anomalies(decrypted) == anomalies(clear) == []
    conn = summary(decrypted)
    assert conn.encrypted and conn.is_kafka and conn.decryption == "handshake"
    assert conn.tls_version == ("TLS 1.3" if kw["version"] == "1.3" else "TLS 1.2")
    assert conn.sni == "broker.test" and conn.tls_resumed is False
    if case in SUITE_NAMES:
        assert conn.cipher_suite == SUITE_NAMES[case]


def test_alpn_is_recorded_tls13_and_tls12() -> None:
    for version in ("1.3", "1.2"):
        s = session(version=version, alpn=("kafka",))
        assert summary(run(encrypted(s), s.keylog)).alpn == "kafka"


def test_without_a_key_only_no_key_rows() -> None:
    for version in ("1.3", "1.2"):
        s = session(version=version)
        events = run(encrypted(s))
        conn = summary(events)
        assert (conn.encrypted, conn.decryption, conn.is_kafka) == (True, "no key", False)
        assert anomalies(events) == ["tls_no_key"]
        assert exchanges(events) == []
        other = session(version=version, sni="other.test")  # a key log of another session
        assert summary(run(encrypted(s), other.keylog)).decryption == "no key"


def test_a_wrong_key_is_failed_not_invented() -> None:
    s = session(version="1.3")
    lines = [line.split() for line in s.keylog.splitlines() if line and not line.startswith(b"#")]
    forged = KeyLog(b"\n".join(label + b" " + random + b" " + b"00" * (len(secret) // 2)
                                for label, random, secret in lines))  # fmt: skip
    events = run(encrypted(s), forged)
    assert summary(events).decryption == "failed"
    assert exchanges(events) == []
    assert set(anomalies(events)) == {"tls_decrypt_error"}


def test_keys_never_reach_an_output() -> None:
    s = session(version="1.2", ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    keylog = KeyLog(s.keylog)
    events = run(encrypted(s), keylog)
    from kdissect.options import Options

    text = repr(events) + repr(keylog) + repr(Options(tls_keylog=keylog))
    for line in s.keylog.splitlines():
        if line and not line.startswith(b"#"):
            secret = line.split()[2].decode()
            assert secret not in text and secret.upper() not in text


def test_segments_cut_anywhere_still_decrypt() -> None:
    """Records split across segments and several per segment: tiny and huge segments alike."""
    from kdissect.testing.conversation import tcp_conversation

    s = session(version="1.3")
    want = exchanges(run(plaintext(s)))
    for mss in (7, 100, 65483):
        assert exchanges(run(tcp_conversation(s.records, mss=mss), s.keylog)) == want


def test_resumed_sessions_decrypt_and_say_so() -> None:
    """TLS 1.2 session-id/ticket resumption (abbreviated handshake) and TLS 1.3 PSK resumption."""
    for version in ("1.2", "1.3"):
        s = session(version=version, resume=True)
        events = run(encrypted(s), s.keylog)
        conn = summary(events)
        assert (conn.tls_resumed, conn.decryption) == (True, "handshake"), version
        assert exchanges(events) == exchanges(run(plaintext(s)))
