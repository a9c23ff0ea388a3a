"""The key schedules: from a key log's secret to one direction's record keys.

TLS 1.2 (RFC 5246 §6.3): the key block is ``PRF(master_secret, "key expansion", server_random +
client_random)`` with the suite's PRF hash; extended master secret (RFC 7627) changes how the
master secret is made, not this step, and the key log already holds the master secret.
TLS 1.3 (RFC 8446 §7): each traffic secret gives a key and an IV by HKDF-Expand-Label, and a
KeyUpdate replaces a secret by ``HKDF-Expand-Label(secret, "traffic upd", "", Hash.length)``.
"""

from __future__ import annotations

import hmac

from kdissect.tls.ciphers import RecordCipher, Suite


def prf(hash_name: str, secret: bytes, label: bytes, seed: bytes, length: int) -> bytes:
    """TLS 1.2's PRF: P_hash(secret, label + seed), cut to ``length`` bytes."""
    seed = label + seed
    out = bytearray()
    a = seed
    while len(out) < length:
        a = hmac.digest(secret, a, hash_name)
        out += hmac.digest(secret, a + seed, hash_name)
    return bytes(out[:length])


def hkdf_expand_label(hash_name: str, secret: bytes, label: bytes, length: int) -> bytes:
    """HKDF-Expand-Label with an empty context (all the record layer needs)."""
    full = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes((len(full),)) + full + b"\x00"
    # (imported here: PyCA loads only for a capture with decryptable TLS, not at every start)
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

    algorithm = {"sha256": hashes.SHA256, "sha384": hashes.SHA384}[hash_name]
    return HKDFExpand(algorithm(), length, info).derive(secret)


def tls12_ciphers(suite: Suite, master: bytes, client_random: bytes, server_random: bytes,
                  etm: bool) -> tuple[RecordCipher, RecordCipher]:  # fmt: skip
    """(client-to-server, server-to-client) record ciphers of a TLS 1.2 session."""
    mac, key, iv = suite.mac_len, suite.key_len, suite.iv_len
    block = prf(suite.prf, master, b"key expansion", server_random + client_random, 2 * (mac + key + iv))
    parts = []
    at = 0
    for size in (mac, mac, key, key, iv, iv):
        parts.append(block[at : at + size])
        at += size
    c_mac, s_mac, c_key, s_key, c_iv, s_iv = parts
    return RecordCipher(suite, c_key, c_iv, c_mac, etm), RecordCipher(suite, s_key, s_iv, s_mac, etm)


def tls13_cipher(suite: Suite, secret: bytes) -> RecordCipher:
    """The record cipher of one TLS 1.3 traffic secret."""
    key = hkdf_expand_label(suite.prf, secret, b"key", suite.key_len)
    iv = hkdf_expand_label(suite.prf, secret, b"iv", suite.iv_len)
    return RecordCipher(suite, key, iv)


def next_secret(suite: Suite, secret: bytes) -> bytes:
    """The traffic secret after a KeyUpdate."""
    return hkdf_expand_label(suite.prf, secret, b"traffic upd", suite.hash_len)
