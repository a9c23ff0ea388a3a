"""Real Kafka over TLS (captures/tls, made by captures/make_tls_captures.py): kafka-python through a
TLS terminator in front of tansu, both legs captured at once. The decrypted TLS leg must equal the
plaintext leg behind the terminator, and agree with tshark decrypting with the same key log."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import kdissect
from kdissect.engines.keylog_file import load_keylog
from kdissect.options import Options
from tests.conftest import require_tool

TLS_CAPTURES = Path(__file__).resolve().parents[2] / "captures" / "tls"
NAMES = sorted(p.name.removesuffix(".truth.json") for p in TLS_CAPTURES.glob("*.truth.json"))
WITH_HANDSHAKE = [n for n in NAMES if "long-lived" not in n]
SAME = ["api_key", "api_version", "correlation_id", "request_bytes", "response_bytes", "status", "error_name"]


def truth(name: str) -> dict:
    return json.loads((TLS_CAPTURES / f"{name}.truth.json").read_text())


def _open(name: str, leg: str, keys: bool = True):
    t = truth(name)["capture"]
    options = Options(ports=(t["tls_port"], t["plain_port"]),
                      tls_keylog=load_keylog(TLS_CAPTURES / t["keylog"]) if keys else None)  # fmt: skip
    return kdissect.open_capture(TLS_CAPTURES / t[leg], options)


def _exchanges(cap, rows=None, since=None) -> Counter:
    ex = cap.exchanges if rows is None else rows
    ex = ex if since is None else ex[ex["request_ts"] >= since]
    return Counter(tuple(row) for row in ex[SAME].astype(str).itertuples(index=False))


def _requests(cap) -> Counter:
    return Counter(tuple(row) for row in cap.exchanges[SAME[:4]].astype(str).itertuples(index=False))


def test_the_corpus_covers_both_versions_and_the_suites() -> None:
    suites = {truth(n)["suite_forced"] for n in NAMES}
    assert {"1.2", "1.3"} <= {truth(n)["tls"] for n in NAMES}
    assert {"TLS_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-SHA384"} <= suites


@pytest.mark.parametrize("name", WITH_HANDSHAKE)
def test_decrypted_tls_leg_equals_the_plaintext_leg(name: str) -> None:
    t = truth(name)
    tls, plain = _open(name, "tls"), _open(name, "plain")
    assert set(tls.connections["decryption"]) == {"handshake"}
    assert set(tls.connections["tls_version"]) == {f"TLS {t['tls']}"}
    # Every request crossed both legs; an answer may not (a client that closes while its long-poll
    # Fetch waits: the broker answers the terminator, which has no one to hand it to).
    assert _requests(tls) == _requests(plain)
    answered = tls.exchanges[tls.exchanges["status"] != "unanswered"]
    assert not (_exchanges(tls, answered) - _exchanges(plain))
    assert len(tls.exchanges) - len(answered) <= 1
    assert len(tls.exchanges) + len(answered) == t["tshark_kafka_pdus_decrypted"]  # tshark sees the same PDUs
    for direction, done in (("produce", "produced"), ("fetch", "consumed")):  # the client's own account
        keys = tls.records.loc[tls.records["direction"] == direction, "key"]
        assert sorted(keys) == sorted(bytes.fromhex(r["key"]["hex"]) for r in t[done])
    assert tls.anomalies.empty or set(tls.anomalies["kind"]) <= {"truncated_frame"}
    # latencies: the terminator adds its hop to the TLS leg, never takes from it
    merged = tls.exchanges.merge(plain.exchanges, on=["api_key", "correlation_id", "client_id"],
                                 suffixes=("_tls", "_plain"))  # fmt: skip
    assert len(merged) >= len(tls.exchanges) // 2


@pytest.mark.parametrize("name", WITH_HANDSHAKE)
def test_without_the_key_log_only_no_key_rows(name: str) -> None:
    cap = _open(name, "tls", keys=False)
    assert set(cap.connections["decryption"]) == {"no key"}
    assert cap.exchanges.empty
    assert set(cap.anomalies["kind"]) == {"tls_no_key"}


@pytest.mark.parametrize("name", [n for n in NAMES if "tls13-long-lived" in n])
def test_tls13_long_lived_connections_decrypt_by_trial(name: str) -> None:
    tls, plain = _open(name, "tls"), _open(name, "plain")
    assert set(tls.connections["decryption"]) == {"trial"}
    assert set(tls.connections["cipher_suite"]) == {"TLS_AES_256_GCM_SHA384"}
    want = _exchanges(plain)
    # The TLS leg's capture starts a moment before the plaintext leg's: compare from there on.
    got = _exchanges(tls, since=plain.exchanges["request_ts"].min())
    assert sum((got & want).values()) >= 0.8 * sum(want.values())
    assert not (got - want)  # nothing invented


@pytest.mark.parametrize("name", [n for n in NAMES if "tls12-long-lived" in n])
def test_tls12_long_lived_connections_are_reported_not_invented(name: str) -> None:
    tls = _open(name, "tls")
    assert set(tls.connections["decryption"]) == {"no handshake"}
    assert tls.exchanges.empty


@pytest.mark.parametrize("name", WITH_HANDSHAKE[:1])
def test_inject_secrets_variant(name: str, tmp_path: Path) -> None:
    require_tool("editcap")
    t = truth(name)["capture"]
    out = tmp_path / "with-secrets.pcapng"
    subprocess.run(["editcap", "--inject-secrets", f"tls,{TLS_CAPTURES / t['keylog']}", str(TLS_CAPTURES / t["tls"]),
                    str(out)], check=True, capture_output=True)  # fmt: skip
    cap = kdissect.open_capture(out, Options(ports=(t["tls_port"],)))
    assert set(cap.connections["decryption"]) == {"handshake"}
    assert _requests(cap) == _requests(_open(name, "plain"))
