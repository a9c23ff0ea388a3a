"""How often bytes that are not Kafka are taken for Kafka at the first captured byte of a direction.

Two rules accept a frame with no context: a request at the start of a direction picked up mid-stream
(it must decode exactly to its size with a known key and version and a plausible header) and an
orphan response decoded by inference (exactly one request kind must explain it). Each trial is a
one-packet mid-stream flow; a false positive is a decoded request or an inferred response.

Inputs: uniformly random bytes; random bytes behind a size prefix that matches their length (the
worst case for framing); that plus a valid request api key and version (the worst case for the
request rule); and the first packets of common non-Kafka protocols.

    python bench/bench_false_frames.py [TRIALS]
"""

from __future__ import annotations

import random
import struct
import sys
from collections.abc import Callable

from kdissect.decoders import apis
from kdissect.engines import local
from kdissect.events import Exchange
from kdissect.options import Options
from kdissect.testing.conversation import tcp_conversation

PROTOCOLS = {
    "http": b"GET /index.html HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\n\r\n",
    "http-response": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 12\r\n\r\nhello world\n",
    "tls": b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" + bytes(190),
    "ssh": b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n",
    "smtp": b"220 mail.example.org ESMTP Postfix\r\n",
    "redis": b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n",
    "postgres-startup": struct.pack(">ii", 41, 196608) + b"user\x00app\x00database\x00app\x00\x00",
    "mysql-greeting": bytes.fromhex("4a0000000a382e302e3333000800000052") + bytes(57),
    "dns-tcp": struct.pack(">H", 29) + bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001"),
    "mqtt-connect": bytes.fromhex("101000044d5154540402003c000474657374"),
    "amqp": b"AMQP\x00\x00\x09\x01",
}


def kafka_found(payload: bytes, direction: int, port: int) -> bool:
    segs = tcp_conversation([(direction, payload, 1)], handshake=False, close=False, server=("10.0.0.2", port))
    for ev in local.events_from(segs, Options()):
        if isinstance(ev, Exchange) and (
            (ev.request is not None and ev.request.body is not None) or (ev.inferred and ev.response is not None)
        ):
            return True
    return False


def random_bytes(rng: random.Random) -> bytes:
    return rng.randbytes(rng.randint(8, 600))


def sized(rng: random.Random) -> bytes:
    body = rng.randbytes(rng.randint(4, 600))
    return struct.pack(">i", len(body)) + body


def sized_short(rng: random.Random) -> bytes:
    body = rng.randbytes(rng.randint(4, 24))
    return struct.pack(">i", len(body)) + body


def sized_with_header(rng: random.Random) -> bytes:
    key = rng.choice(sorted(k for k, a in apis.registry().items() if "request" in a.versions))
    lo, hi = apis.registry()[key].versions["request"]
    rest = rng.randbytes(rng.randint(4, 600))
    body = struct.pack(">hh", key, rng.randint(lo, hi)) + rest
    return struct.pack(">i", len(body)) + body


def rate(make: Callable[[random.Random], bytes], trials: int, direction: int, port: int) -> tuple[int, int]:
    rng = random.Random(1)
    return sum(kafka_found(make(rng), direction, port) for _ in range(trials)), trials


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"{'input':<34} {'direction':<9} {'port':>6} {'taken for Kafka':>16}")
    for label, make in (
        ("random bytes", random_bytes),
        ("random, size prefix right", sized),
        ("short random, size prefix right", sized_short),
        ("random, size + key/version right", sized_with_header),
    ):
        for direction, port in ((0, 9092), (0, 31337), (1, 9092), (1, 31337)):
            hits, n = rate(make, trials, direction, port)
            print(f"{label:<34} {('client', 'broker')[direction]:<9} {port:>6} {hits:>7} / {n:<7}")
    for name, payload in PROTOCOLS.items():
        for direction, port in ((0, 9092), (1, 9092), (0, 31337), (1, 31337)):
            if kafka_found(payload, direction, port):
                print(f"{name:<34} {('client', 'broker')[direction]:<9} {port:>6} taken for Kafka")
    print(f"{len(PROTOCOLS)} protocol openings tried both ways on both ports; lines above are the false positives")


if __name__ == "__main__":
    main()
