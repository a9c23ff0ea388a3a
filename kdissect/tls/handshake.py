"""TLS handshake messages: joined from records, and the hellos read for what the key schedule and
the connections table need (randoms, version, suite, SNI, ALPN, resumption, EMS, encrypt-then-MAC).

Everything here is untrusted: a length that runs past its container raises :class:`HandshakeError`,
and a message larger than :data:`MAX_MESSAGE` is refused rather than buffered.
"""

from __future__ import annotations

from dataclasses import field

from kdissect.dataclass import dataclass

HELLO_REQUEST, CLIENT_HELLO, SERVER_HELLO = 0, 1, 2
ENCRYPTED_EXTENSIONS, FINISHED, KEY_UPDATE = 8, 20, 24
EXT_SNI, EXT_ALPN, EXT_ETM, EXT_EMS = 0, 16, 22, 23
EXT_PRE_SHARED_KEY, EXT_SUPPORTED_VERSIONS = 41, 43
TLS12, TLS13 = 0x0303, 0x0304
VERSION_NAMES = {0x0300: "SSL 3.0", 0x0301: "TLS 1.0", 0x0302: "TLS 1.1", TLS12: "TLS 1.2", TLS13: "TLS 1.3"}
# A ServerHello with this random is a HelloRetryRequest (RFC 8446 §4.1.3).
HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
MAX_MESSAGE = 1 << 18  # certificate chains are the largest handshake messages Kafka sees (a few KB)


class HandshakeError(ValueError):
    """A handshake message that does not parse."""


class _Reader:
    __slots__ = ("at", "data", "end")

    def __init__(self, data: bytes, at: int = 0, end: int | None = None) -> None:
        self.data, self.at, self.end = data, at, len(data) if end is None else end

    def take(self, n: int) -> bytes:
        if self.at + n > self.end:
            raise HandshakeError("a length runs past its message")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def vector(self, length_bytes: int) -> _Reader:
        n = self.uint(length_bytes)
        sub = _Reader(self.data, self.at, self.at + n)
        if sub.end > self.end:
            raise HandshakeError("a vector runs past its message")
        self.at += n
        return sub

    @property
    def left(self) -> int:
        return self.end - self.at


@dataclass(slots=True)
class Hello:
    """What a ClientHello or ServerHello says (the fields of the other kind stay empty)."""

    random: bytes
    session_id: bytes
    suites: list[int] = field(default_factory=list)  # offered (client) or chosen (server, one)
    version: int = 0  # legacy version, or the supported_versions choice (server)
    sni: str | None = None
    alpn: list[str] = field(default_factory=list)
    ems: bool = False
    etm: bool = False
    psk: bool = False  # pre_shared_key: TLS 1.3 resumption (server: accepted)

    @property
    def retry(self) -> bool:
        return self.random == HRR_RANDOM


class MessageJoiner:
    """Handshake messages of one direction from the handshake records' fragments, in order."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, fragment: bytes) -> list[tuple[int, bytes]]:
        """(type, body) of each message completed by ``fragment``."""
        buf = self._buf + fragment
        out = []
        while len(buf) >= 4:
            length = int.from_bytes(buf[1:4], "big")
            if length > MAX_MESSAGE:
                self._buf = b""
                raise HandshakeError(f"a handshake message of {length} bytes (more than {MAX_MESSAGE})")
            if len(buf) < 4 + length:
                break
            out.append((buf[0], buf[4 : 4 + length]))
            buf = buf[4 + length :]
        self._buf = buf
        return out


def client_hello(body: bytes) -> Hello:
    r = _Reader(body)
    version = r.uint(2)
    hello = Hello(r.take(32), _all(r.vector(1)), version=version)
    suites = r.vector(2)
    hello.suites = [suites.uint(2) for _ in range(suites.left // 2)]
    r.vector(1)  # compression methods
    if r.left:
        _extensions(r.vector(2), hello, client=True)
    return hello


def server_hello(body: bytes) -> Hello:
    r = _Reader(body)
    version = r.uint(2)
    hello = Hello(r.take(32), _all(r.vector(1)), version=version)
    hello.suites = [r.uint(2)]
    r.uint(1)  # compression method
    if r.left:
        _extensions(r.vector(2), hello, client=False)
    return hello


def encrypted_extensions(body: bytes) -> list[str]:
    """The ALPN protocol a TLS 1.3 server chose (sent encrypted, after the ServerHello)."""
    hello = Hello(b"", b"")
    _extensions(_Reader(body).vector(2), hello, client=False)
    return hello.alpn


def _all(r: _Reader) -> bytes:
    return r.take(r.left)


def _extensions(r: _Reader, hello: Hello, client: bool) -> None:
    while r.left:
        kind = r.uint(2)
        ext = r.vector(2)
        if kind == EXT_SNI and client:
            names = ext.vector(2)
            while names.left:
                name_type = names.uint(1)
                name = _all(names.vector(2))
                if name_type == 0:
                    hello.sni = name.decode("utf-8", "replace")
        elif kind == EXT_ALPN:
            protocols = ext.vector(2)
            while protocols.left:
                hello.alpn.append(_all(protocols.vector(1)).decode("utf-8", "replace"))
        elif kind == EXT_EMS:
            hello.ems = True
        elif kind == EXT_ETM:
            hello.etm = True
        elif kind == EXT_PRE_SHARED_KEY:
            hello.psk = True
        elif kind == EXT_SUPPORTED_VERSIONS and not client:
            hello.version = ext.uint(2)
