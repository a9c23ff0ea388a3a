"""The cipher suites kdissect decrypts, as one registry built from their IANA names.

A suite's name says everything the record layer needs (``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256``:
AES, 128-bit key, GCM, SHA-256 for the PRF), so the table is the IANA (code, name) list and the
parameters are read from the names, not restated by hand. The ciphers themselves are PyCA
``cryptography``'s: nothing here encrypts or authenticates a byte by itself.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

from kdissect.dataclass import dataclass

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305

# (code, IANA name) of the suites Kafka clients negotiate (JSSE, OpenSSL, Go, Node), TLS 1.2 and 1.3.
_IANA = (
    (0x1301, "TLS_AES_128_GCM_SHA256"), (0x1302, "TLS_AES_256_GCM_SHA384"),
    (0x1303, "TLS_CHACHA20_POLY1305_SHA256"), (0x1304, "TLS_AES_128_CCM_SHA256"),
    (0x1305, "TLS_AES_128_CCM_8_SHA256"),
    (0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"), (0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    (0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"), (0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    (0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256"), (0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384"),
    (0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"), (0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384"),
    (0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"), (0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    (0xCCAA, "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    (0xC009, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"), (0xC00A, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"),
    (0xC013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"), (0xC014, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
    (0xC023, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"), (0xC024, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384"),
    (0xC027, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"), (0xC028, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"),
    (0x002F, "TLS_RSA_WITH_AES_128_CBC_SHA"), (0x0035, "TLS_RSA_WITH_AES_256_CBC_SHA"),
    (0x003C, "TLS_RSA_WITH_AES_128_CBC_SHA256"), (0x003D, "TLS_RSA_WITH_AES_256_CBC_SHA256"),
    (0x0033, "TLS_DHE_RSA_WITH_AES_128_CBC_SHA"), (0x0039, "TLS_DHE_RSA_WITH_AES_256_CBC_SHA"),
    (0x0067, "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256"), (0x006B, "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256"),
    (0xC0AC, "TLS_ECDHE_ECDSA_WITH_AES_128_CCM"), (0xC0AD, "TLS_ECDHE_ECDSA_WITH_AES_256_CCM"),
    (0xC0AE, "TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8"), (0xC0AF, "TLS_ECDHE_ECDSA_WITH_AES_256_CCM_8"),
    (0xC09C, "TLS_RSA_WITH_AES_128_CCM"), (0xC09D, "TLS_RSA_WITH_AES_256_CCM"),
    (0xC09E, "TLS_DHE_RSA_WITH_AES_128_CCM"), (0xC09F, "TLS_DHE_RSA_WITH_AES_256_CCM"),
    (0xC0A0, "TLS_RSA_WITH_AES_128_CCM_8"), (0xC0A1, "TLS_RSA_WITH_AES_256_CCM_8"),
)  # fmt: skip
_HASH_BYTES = {"SHA": 20, "SHA256": 32, "SHA384": 48}
_MAC_HASH = {"SHA": "sha1", "SHA256": "sha256", "SHA384": "sha384"}
_TAG = 16
_EXPLICIT_NONCE = 8  # TLS 1.2 AES-GCM/CCM: the per-record half of the nonce travels in the record
_BLOCK = 16
_TLS13_OUTER_TYPE = 23  # every protected TLS 1.3 record travels as application_data (its real type is inside)


class DecryptError(Exception):
    """A record that did not authenticate (wrong key, wrong sequence number, or damaged)."""


@dataclass(frozen=True, slots=True)
class Suite:
    """What the record layer needs to know of a suite."""

    code: int
    name: str
    tls13: bool
    mode: str  # "gcm", "ccm", "ccm8", "chacha", "cbc"
    key_len: int
    iv_len: int  # fixed IV bytes from the key schedule (TLS 1.2 CBC: none, the IV is per record)
    mac: str | None  # the HMAC hash of a CBC suite
    mac_len: int
    prf: str  # "sha256" or "sha384": the PRF / HKDF hash

    @property
    def hash_len(self) -> int:
        return 48 if self.prf == "sha384" else 32


def _parse(code: int, name: str) -> Suite:
    cipher = name.split("_WITH_")[-1].removeprefix("TLS_")
    parts = cipher.split("_")
    tls13 = "_WITH_" not in name
    last = parts[-1]
    if parts[0] == "CHACHA20":
        mode, key_len = "chacha", 32
    else:
        key_len = int(parts[1]) // 8
        mode = {"GCM": "gcm", "CBC": "cbc", "CCM": "ccm"}[parts[2]]
        if mode == "ccm" and "8" in parts[3:]:
            mode = "ccm8"
    mac = _MAC_HASH[last] if mode == "cbc" else None
    prf = "sha384" if last == "SHA384" else "sha256"
    iv_len = 12 if (tls13 or mode == "chacha") else (0 if mode == "cbc" else 4)
    return Suite(code, name, tls13, mode, key_len, iv_len, mac, _HASH_BYTES[last] if mac else 0, prf)


SUITES: dict[int, Suite] = {code: _parse(code, name) for code, name in _IANA}
TLS13_SUITES = tuple(s for s in SUITES.values() if s.tls13)


def suite_name(code: int) -> str:
    """The IANA name, or the code in hex for a suite this registry does not hold."""
    suite = SUITES.get(code)
    return suite.name if suite else f"0x{code:04X}"


class RecordCipher:
    """One direction's record protection under one key: decrypts records in sequence order.

    ``seq`` is the record sequence number of the next record (TLS 1.2 and 1.3 both count from 0
    at each key change). :meth:`open` returns (content type, plaintext) and advances ``seq``; a
    record that does not authenticate raises :class:`DecryptError` and still advances it (the
    peer counted it)."""

    __slots__ = ("_aead", "_cbc_key", "_etm", "_iv", "_mac_key", "seq", "suite", "tag_len")

    def __init__(self, suite: Suite, key: bytes, iv: bytes, mac_key: bytes = b"", etm: bool = False) -> None:
        self.suite = suite
        self.seq = 0
        self._iv = iv
        self._mac_key = mac_key
        self._cbc_key = key if suite.mode == "cbc" else b""
        self.tag_len = 8 if suite.mode == "ccm8" else _TAG
        self._aead = _aead(suite, key, self.tag_len)
        self._etm = etm

    def open(self, content_type: int, version: int, fragment: bytes) -> tuple[int, bytes]:
        seq = self.seq
        self.seq += 1
        try:
            if self.suite.tls13:
                return self._open13(version, fragment, seq)
            return self._open12(content_type, version, fragment, seq)
        except (_invalid_tag(), ValueError) as exc:
            raise DecryptError(f"record {seq} did not authenticate") from exc

    def first_opening(self, seqs: range, version: int, fragment: bytes) -> int | None:
        """The first sequence number of ``seqs`` under which this TLS 1.3 record authenticates
        (trial decryption's inner loop: as little Python per guess as the AEAD call allows)."""
        assert self._aead is not None and self.suite.tls13
        header = bytes((_TLS13_OUTER_TYPE,)) + version.to_bytes(2, "big") + len(fragment).to_bytes(2, "big")
        iv, size, decrypt = int.from_bytes(self._iv, "big"), len(self._iv), self._aead.decrypt
        invalid_tag = _invalid_tag()
        for seq in seqs:
            try:
                decrypt((iv ^ seq).to_bytes(size, "big"), fragment, header)
            except invalid_tag:
                continue
            return seq
        return None

    def _open13(self, version: int, fragment: bytes, seq: int) -> tuple[int, bytes]:
        assert self._aead is not None
        header = bytes((_TLS13_OUTER_TYPE,)) + version.to_bytes(2, "big") + len(fragment).to_bytes(2, "big")
        inner = self._aead.decrypt(_xor_nonce(self._iv, seq), fragment, header)
        # TLSInnerPlaintext: content, type byte, zero padding (rarely any: look before copying)
        end = len(inner) if inner[-1:] != b"\x00" else len(inner.rstrip(b"\x00"))
        if end == 0:
            raise DecryptError(f"record {seq}: no content type")
        return inner[end - 1], inner[: end - 1]

    def _open12(self, content_type: int, version: int, fragment: bytes, seq: int) -> tuple[int, bytes]:
        if self.suite.mode == "cbc":
            return content_type, self._open_cbc(content_type, version, fragment, seq)
        assert self._aead is not None
        if self.suite.mode == "chacha":
            nonce, body = _xor_nonce(self._iv, seq), fragment
        else:
            nonce, body = self._iv + fragment[:_EXPLICIT_NONCE], fragment[_EXPLICIT_NONCE:]
        plain_len = len(body) - self.tag_len
        if plain_len < 0:
            raise DecryptError(f"record {seq}: shorter than its tag")
        return content_type, self._aead.decrypt(nonce, body, _aad12(seq, content_type, version, plain_len))

    def _open_cbc(self, content_type: int, version: int, fragment: bytes, seq: int) -> bytes:
        mac_len = self.suite.mac_len
        if len(fragment) < mac_len:
            raise DecryptError(f"record {seq}: shorter than its MAC")
        if self._etm:  # RFC 7366: the MAC covers IV + ciphertext, and comes first to check
            body = memoryview(fragment)[: len(fragment) - mac_len]
            self._check_mac(_aad12(seq, content_type, version, len(body)), body, fragment[len(body) :], seq)
            plain = self._cbc_decrypt(body, seq)
            return plain[: _unpadded(plain, seq)]
        plain = self._cbc_decrypt(memoryview(fragment), seq)
        end = _unpadded(plain, seq) - mac_len
        if end < 0:
            raise DecryptError(f"record {seq}: shorter than its MAC")
        self._check_mac(_aad12(seq, content_type, version, end), memoryview(plain)[:end], plain[end : end + mac_len],
                        seq)  # fmt: skip
        return plain[:end]

    def _cbc_decrypt(self, body: memoryview, seq: int) -> bytes:
        if len(body) < 2 * _BLOCK or len(body) % _BLOCK:
            raise DecryptError(f"record {seq}: not whole CBC blocks")
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        dec = Cipher(algorithms.AES(self._cbc_key), modes.CBC(bytes(body[:_BLOCK]))).decryptor()
        return dec.update(body[_BLOCK:]) + dec.finalize()

    def _check_mac(self, header: bytes, content: memoryview, tag: bytes, seq: int) -> None:
        assert self.suite.mac is not None
        mac = hmac.new(self._mac_key, header, self.suite.mac)
        mac.update(content)
        if not hmac.compare_digest(mac.digest(), tag):
            raise DecryptError(f"record {seq}: bad MAC")


def _invalid_tag() -> Any:
    """PyCA's failed-authentication exception. PyCA is imported on first use, here and in
    :func:`_aead`: a capture without decryptable TLS (most) never pays for loading it."""
    from cryptography.exceptions import InvalidTag

    return InvalidTag


def _aead(suite: Suite, key: bytes, tag_len: int) -> AESGCM | AESCCM | ChaCha20Poly1305 | None:
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305

    if suite.mode == "gcm":
        return AESGCM(key)
    if suite.mode in ("ccm", "ccm8"):
        return AESCCM(key, tag_length=tag_len)
    if suite.mode == "chacha":
        return ChaCha20Poly1305(key)
    return None


def _xor_nonce(iv: bytes, seq: int) -> bytes:
    return (int.from_bytes(iv, "big") ^ seq).to_bytes(len(iv), "big")


def _aad12(seq: int, content_type: int, version: int, length: int) -> bytes:
    return seq.to_bytes(8, "big") + bytes((content_type,)) + version.to_bytes(2, "big") + length.to_bytes(2, "big")


def _unpadded(plain: bytes, seq: int) -> int:
    """The length of a CBC plaintext without its padding (checked byte by byte)."""
    if not plain:
        raise DecryptError(f"record {seq}: empty")
    pad = plain[-1]
    if pad + 1 > len(plain) or plain[-pad - 1 :] != bytes((pad,)) * (pad + 1):
        raise DecryptError(f"record {seq}: bad padding")
    return len(plain) - pad - 1
