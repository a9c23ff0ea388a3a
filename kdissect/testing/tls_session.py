"""Real TLS sessions made in-process (Python's ``ssl`` over MemoryBIO pairs), for tests.

The bytes are OpenSSL's own: a client and a server ``SSLObject`` talk through memory, each flight
of records becomes one message of :func:`~kdissect.testing.conversation.tcp_conversation`, and the
plaintext they carry (Kafka frames from the project's encoder) is given back with the same
timestamps, so a decrypted capture can be compared with the plaintext one. The key log is what
OpenSSL writes through ``keylog_filename``. TLS 1.3 suites can only be chosen through an OpenSSL
config file, so :func:`tls_session_subprocess` runs the same code under ``OPENSSL_CONF``.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from kdissect.dataclass import dataclass

Message = tuple[int, bytes, int]  # (direction 0: client to server, payload, ts_ns)
HANDSHAKE_STEP_NS = 100_000
_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
OP_NO_ENCRYPT_THEN_MAC = 0x00080000  # OpenSSL's SSL_OP_NO_ENCRYPT_THEN_MAC (Python has no name for it)


@dataclass(frozen=True, slots=True)
class TlsSession:
    records: list[Message]  # the TLS bytes each side sent, flight by flight
    plain: list[Message]  # the application bytes, at the times of the flights that carried them
    keylog: bytes


def write_certificate(directory: Path, key_type: str = "rsa") -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1()) if key_type == "ec" else rsa.generate_private_key(65537, 2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kdissect-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("broker.test"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_path, key_path


def tls_session(plain: list[Message], *, version: str = "1.3", ciphers: str | None = None, key_type: str = "rsa",
                etm: bool = True, sni: str | None = "broker.test", alpn: list[str] | None = None,
                resume: bool = False) -> TlsSession:  # fmt: skip
    """A TLS session carrying ``plain`` (messages in order; the handshake happens before the first).
    With ``resume``, a first connection (not returned) gives the session this one resumes."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        cert, key = write_certificate(directory, key_type)
        keylog = directory / "keys.log"
        server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_ctx.load_cert_chain(cert, key)
        client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client_ctx.check_hostname = False
        client_ctx.verify_mode = ssl.CERT_NONE
        client_ctx.keylog_filename = str(keylog)
        for ctx in (server_ctx, client_ctx):
            ctx.minimum_version = ctx.maximum_version = _VERSIONS[version]
            if ciphers:
                ctx.set_ciphers(ciphers)
            if not etm:
                ctx.options |= OP_NO_ENCRYPT_THEN_MAC
            if alpn:
                ctx.set_alpn_protocols(alpn)
        t0 = plain[0][2] - 100 * HANDSHAKE_STEP_NS if plain else 0
        session = None
        if resume:
            client, server, pump = _connect(client_ctx, server_ctx, sni, t0, None)
            _send(client, server, pump, b"ping", t0)  # TLS 1.3 tickets come after the handshake
            _send(server, client, pump, b"pong", t0)
            session = client.session
        client, server, pump = _connect(client_ctx, server_ctx, sni, t0, session)
        for direction, payload, ts in plain:
            sender, receiver = (client, server) if direction == 0 else (server, client)
            _send(sender, receiver, pump, payload, ts)
        return TlsSession(pump.records, list(plain), keylog.read_bytes())


def _connect(client_ctx: ssl.SSLContext, server_ctx: ssl.SSLContext, sni: str | None, t0: int,
             session: ssl.SSLSession | None) -> tuple[ssl.SSLObject, ssl.SSLObject, _Pump]:  # fmt: skip
    ends = [ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()]
    client = client_ctx.wrap_bio(ends[0], ends[1], server_side=False, server_hostname=sni, session=session)
    server = server_ctx.wrap_bio(ends[2], ends[3], server_side=True)
    pump = _Pump(ends, [])
    for step in range(40):
        done = [_handshake(client), _handshake(server)]
        pump.move(t0 + step * HANDSHAKE_STEP_NS)
        if all(done) and not ends[1].pending and not ends[3].pending:
            break
    return client, server, pump


def _send(sender: ssl.SSLObject, receiver: ssl.SSLObject, pump: _Pump, payload: bytes, ts: int) -> None:
    sender.write(payload)
    pump.move(ts)
    got = b""
    while len(got) < len(payload):
        got += receiver.read(len(payload) - len(got))


class _Pump:
    """Moves what each side wrote to the other side's input, recording each flight."""

    def __init__(self, ends: list[ssl.MemoryBIO], records: list[Message]) -> None:
        self.ends = ends
        self.records = records

    def move(self, ts: int) -> None:
        for direction, (out_bio, in_bio) in enumerate(((self.ends[1], self.ends[2]), (self.ends[3], self.ends[0]))):
            data = out_bio.read()
            if data:
                in_bio.write(data)
                self.records.append((direction, data, ts))


def _handshake(obj: ssl.SSLObject) -> bool:
    try:
        obj.do_handshake()
        return True
    except ssl.SSLWantReadError:
        return False


def tls_session_subprocess(plain: list[Message], *, tls13_suite: str, **kw) -> TlsSession:
    """:func:`tls_session` in a child Python whose OpenSSL config allows only ``tls13_suite``."""
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "openssl.cnf"
        conf.write_text("openssl_conf = conf\n[conf]\nssl_conf = ssl\n[ssl]\nsystem_default = sys\n"
                        f"[sys]\nCiphersuites = {tls13_suite}\n")  # fmt: skip
        request = json.dumps({"plain": [(d, p.hex(), t) for d, p, t in plain], "kw": kw})
        env = {**os.environ, "OPENSSL_CONF": str(conf)}
        done = subprocess.run([sys.executable, "-m", "kdissect.testing.tls_session"], input=request, env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
        answer = json.loads(done.stdout)
        return TlsSession([(d, bytes.fromhex(p), t) for d, p, t in answer["records"]],
                          [(d, bytes.fromhex(p), t) for d, p, t in answer["plain"]],
                          bytes.fromhex(answer["keylog"]))  # fmt: skip


def _main() -> None:
    request = json.loads(sys.stdin.read())
    session = tls_session([(d, bytes.fromhex(p), t) for d, p, t in request["plain"]], **request["kw"])
    json.dump({"records": [(d, p.hex(), t) for d, p, t in session.records],
               "plain": [(d, p.hex(), t) for d, p, t in session.plain], "keylog": session.keylog.hex()},
              sys.stdout)  # fmt: skip


if __name__ == "__main__":
    _main()
