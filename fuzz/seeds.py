"""Write the seed inputs of every fuzz target into ``fuzz/corpus/<target>/seed-*``.

Seeds are small valid inputs built with kdissect's own encoders and capture writers, so the
fuzzer starts from real structure instead of random bytes. Re-run after changing a target's
input format: ``python -m fuzz.seeds``.
"""

from __future__ import annotations

import gzip
import random
import struct
from pathlib import Path

from fuzz.targets import _SEG, ALL_APIS, SASL_MECHANISMS, conversation_bytes
from kdissect.decoders.codecs import CODEC_NAMES
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.kafka_frames import metadata_request, metadata_response, produce_request, produce_response
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.records_encode import (
    control_record,
    encode_batch,
    encode_message_set,
    new_record,
    wrapper,
)
from kdissect.testing.records_encode import encode_message as encode_legacy

CORPUS = Path(__file__).parent / "corpus"
T0 = 1_700_000_000_000_000_000


def _exchange(records: bytes = b"rec") -> list[tuple[int, bytes]]:
    return [(0, metadata_request(1)), (1, metadata_response(1)),
            (0, produce_request(2, records=records)), (1, produce_response(2))]


def _records() -> dict[str, bytes]:
    recs = [new_record(b"k%d" % i, b"value-%d" % i, [("h", b"v")], offset=i, timestamp=i) for i in range(3)]
    plain = [r._replace(headers=()) for r in recs]
    out = {f"v2-{name}": encode_batch(recs, codec=codec, base_offset=5) for codec, name in CODEC_NAMES.items()}
    out["control"] = encode_batch([control_record(1)], control=True, transactional=True)
    for magic in (0, 1):
        out[f"legacy-m{magic}"] = encode_message_set(plain, magic=magic)
        for codec in (1, 2, 3):
            out[f"wrapper-m{magic}-c{codec}"] = encode_legacy(wrapper(plain, magic=magic, codec=codec), magic=magic)
    return out


def seeds() -> dict[str, dict[str, bytes]]:
    convo = [(d, m, T0 + i * 1_000_000) for i, (d, m) in enumerate(_exchange())]
    segments = tcp_conversation(convo, mss=700)
    pcap = write_capture(segments)
    captures = {
        "pcap": pcap,
        "pcap-ns-be": write_capture(segments, nanosecond=True, byteorder="big"),
        "pcapng": write_capture(segments, fmt="pcapng", encap=Encapsulation(vlans=(7,))),
        "pcapng-spb": write_capture(segments, fmt="pcapng", block="spb"),
        "pcap-snaplen": write_capture(segments, snaplen=120),
        "pcap-frag6": write_capture(tcp_conversation(convo, client=("fd00::1", 5000), server=("fd00::2", 9092)),
                                    encap=Encapsulation(fragment_size=256)),
        "pcap-gz": gzip.compress(pcap, mtime=0),
    }
    decode = {}
    for key in sorted({k for k, _, _ in ALL_APIS}):
        for i, (k, v, kind) in enumerate(ALL_APIS):
            if k == key and (v == 0 or (i + 1 < len(ALL_APIS) and ALL_APIS[i + 1][:1] != (key,))):
                encode = encode_request if kind == "request" else encode_response
                body = encode(k, v, {}, correlation_id=7, size_prefix=False)
                decode[f"{kind}-{k}-v{v}"] = struct.pack(">H", i) + body
    stream = b"".join(metadata_request(i) for i in range(4)) + produce_request(9)
    framing = {"whole": b"\xff\x00" + stream, "small-chunks": b"\x06\x00" + stream, "lossy": b"\x1f\x12" + stream}
    reassembly = {
        "handshake-data-fin": b"".join(_SEG.pack(*s) for s in [
            (2 << 2, -1, 0, 0, 1), (1 | (0x12 << 2), -1, 0, 0, 1), (0x10 << 2, 0, 100, 100, 1),
            (0x10 << 2, 200, 50, 50, 1), (0x10 << 2, 100, 100, 60, 1), (1 | (0x10 << 2), 0, 80, 80, 1),
            (0x11 << 2, 250, 0, 0, 1), (1 | (0x11 << 2), 80, 0, 0, 1)]),
        "midstream-two-conns": b"".join(_SEG.pack(*s) for s in [
            (0x10 << 2, 500, 200, 200, 3), (2 | (0x10 << 2), 0, 30, 30, 2), (0x10 << 2, 700, 10, 10, 0),
            (0x04 << 2, 710, 0, 0, 9)]),
    }
    sasl = [(0, encode_request(17, 0, {"mechanism": "PLAIN"}, correlation_id=1)),
            (1, b"\x00\x00\x00\x06\x00\x00\x00\x01\x00\x00"), (0, b"\x00\x00\x00\x05\x00u\x00pw"),
            (1, b"\x00\x00\x00\x00"), *_exchange()]
    scram = [b"n,,n=user,r=cnonce", b"\x80r=cnonceSNONCE,s=c2FsdHNhbHQ=,i=4096",
             b"c=biws,r=cnonceSNONCE,p=cHJvb2Zwcm9vZnByb29mcHJvb2Y=", b"\x80v=c2lnbmF0dXJl", b"\x80e=unknown-user"]
    jwt = b"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1In0.c2ln"
    tokens = {
        "PLAIN": [b"authz\x00user\x00password", b"\x80"],
        "SCRAM-SHA-256": scram,
        "OAUTHBEARER": [b"n,a=u,\x01host=h\x01auth=Bearer " + jwt + b"\x01\x01", b'\x80{"status":"invalid_token"}',
                        b"\x01"],
        "GSSAPI": [b"\x60\x82\x01\x00"],
    }
    sasl_tokens = {f"{name}-{i}": bytes([SASL_MECHANISMS.index(name) | (t[0] & 0x80)]) + t.removeprefix(b"\x80")
                   for name, ts in tokens.items() for i, t in enumerate(ts)}
    scram_v1 = [(0, encode_request(17, 1, {"mechanism": "SCRAM-SHA-256"}, correlation_id=1)),
                (1, encode_response(17, 1, {"mechanisms": ["SCRAM-SHA-256"]}, correlation_id=1))]
    for i, token in enumerate(scram[:4]):  # client-first, server-first, client-final, server-final
        if i % 2 == 0:
            scram_v1.append((0, encode_request(36, 2, {"auth_bytes": token}, correlation_id=2 + i // 2)))
        else:
            scram_v1.append((1, encode_response(36, 2, {"auth_bytes": token[1:]}, correlation_id=2 + i // 2)))
    scram_v1 += _exchange()
    conversation = {
        "metadata-produce": conversation_bytes(_exchange()),
        "unknown-port": conversation_bytes(_exchange(), unknown_port=True),
        "records": conversation_bytes(_exchange(_records()["v2-gzip"])),
        "sasl-v0": conversation_bytes(sasl),
        "sasl-v1-scram": conversation_bytes(scram_v1),
        "tls": conversation_bytes([(0, b"\x16\x03\x01\x00\x40" + bytes(64))]),
    }
    return {"capture": captures, "pipeline": captures, "decode": decode, "records": _records(),
            "framing": framing, "reassembly": reassembly, "conversation": conversation, "sasl": sasl_tokens}


def regressions() -> dict[str, dict[str, bytes]]:
    """Inputs that once hung or lost frames, rebuilt here so they stay readable."""
    rng = random.Random(1)
    claim = struct.pack(">i", 60_000) + metadata_request(1)[4:]  # a request header claiming 60 kB
    stray = b"\x01" + b"".join(metadata_request(i) for i in range(3))  # one stray byte, then requests
    return {
        # hunting rescanned the whole buffer behind a waiting candidate on every chunk (quadratic)
        "framing": {"slow-hunt-behind-waiting-candidate": b"\xff\x00\xff\xff\xff\xff" + claim + rng.randbytes(58_000)},
        # a stray byte made the splitter wait for a 16 MiB frame and swallow the connection
        "conversation": {"lost-stray-byte-swallowed-requests": conversation_bytes(
            [(0, stray), (1, metadata_response(0)), (1, metadata_response(1)), (1, metadata_response(2))])},
    }


def main() -> None:
    for prefix, kinds in (("seed-", seeds()), ("", regressions())):
        for target, files in kinds.items():
            folder = CORPUS / target
            folder.mkdir(parents=True, exist_ok=True)
            for name, data in files.items():
                (folder / f"{prefix}{name}").write_bytes(data)
            print(f"{target}: {len(files)} {'seeds' if prefix else 'regression inputs'}")


if __name__ == "__main__":
    main()
