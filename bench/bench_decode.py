"""Frames decoded per second: kdissect's decoders (native and pure Python) against kio on the same bytes.

The mix is fixed: a Metadata v12 response with 1,000 partitions, a Fetch v16 response, a
Produce v11 request, an OffsetCommit v9 request and a JoinGroup v9 response. Frames are
built once (by kdissect's encoder) and both decoders read exactly those bytes, header
included: kdissect through ``decode_request``/``decode_response`` (once with the C
interpreter, once with the generated Python decoders), kio through its (Rust-backed)
``entity_reader`` for the header class, then the body class. Rounds alternate between the
sides so a busy machine hurts all alike; each figure is the best round.

    python bench/bench_decode.py [--rounds 7] [--repeat 50]
"""

from __future__ import annotations

import argparse
import gc
import time
import uuid
from collections.abc import Callable

from kio.index import load_request_schema, load_response_schema
from kio.schema.request_header.v2.header import RequestHeader as KioRequestHeaderV2
from kio.schema.response_header.v1.header import ResponseHeader as KioResponseHeaderV1
from kio.serial import entity_reader

import kdissect
from kdissect.decoders import compiler
from kdissect.testing import encoder

Frame = tuple[str, bytes, int, int, str]  # label, frame without size prefix, api key, version, kind


def _metadata_response() -> dict:
    """Metadata v12 response: 5 brokers, 20 topics of 50 partitions (1,000 partitions)."""
    brokers = [{"node_id": i, "host": f"broker-{i}.kafka.internal", "port": 9092, "rack": f"rack-{i % 3}"}
               for i in range(5)]  # fmt: skip
    topics = []
    for t in range(20):
        parts = [
            {"error_code": 0, "partition_index": p, "leader_id": p % 5, "leader_epoch": 7,
             "replica_nodes": [p % 5, (p + 1) % 5, (p + 2) % 5], "isr_nodes": [p % 5, (p + 1) % 5, (p + 2) % 5],
             "offline_replicas": []}
            for p in range(50)
        ]  # fmt: skip
        topics.append({"error_code": 0, "name": f"orders.events.v{t}", "topic_id": uuid.UUID(int=t + 1),
                       "is_internal": False, "partitions": parts, "topic_authorized_operations": -(2**31)})  # fmt: skip
    return {"throttle_time_ms": 0, "brokers": brokers, "cluster_id": "Zk9xq2TbRsaVj3D1pQwA0g", "controller_id": 1,
            "topics": topics}  # fmt: skip


def _fetch_response() -> dict:
    """Fetch v16 response: 4 topics x 8 partitions, each with a 4 KiB records field."""
    records = bytes(range(256)) * 16
    responses = [
        {"topic_id": uuid.UUID(int=100 + t), "partitions": [
            {"partition_index": p, "error_code": 0, "high_watermark": 10_000 + p, "last_stable_offset": 10_000 + p,
             "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1, "records": records}
            for p in range(8)]}
        for t in range(4)
    ]  # fmt: skip
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 12345, "responses": responses}


def _produce_request() -> dict:
    """Produce v11 request: 3 topics x 4 partitions, each with a 2 KiB records field."""
    records = bytes(range(256)) * 8
    topics = [{"name": f"orders.events.v{t}", "partition_data": [{"index": p, "records": records} for p in range(4)]}
              for t in range(3)]  # fmt: skip
    return {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": topics}


def _offset_commit_request() -> dict:
    """OffsetCommit v9 request: 5 topics x 10 partitions."""
    topics = [{"name": f"orders.events.v{t}", "partitions": [
        {"partition_index": p, "committed_offset": 1_000_000 + p, "committed_leader_epoch": 7,
         "committed_metadata": ""} for p in range(10)]} for t in range(5)]  # fmt: skip
    return {"group_id": "billing-consumers", "generation_id_or_member_epoch": 42,
            "member_id": "consumer-billing-1-4f1c2a9e", "group_instance_id": None, "topics": topics}  # fmt: skip


def _join_group_response() -> dict:
    """JoinGroup v9 response to the group leader: 20 members with subscription metadata."""
    members = [{"member_id": f"consumer-billing-{i}-4f1c2a9e", "group_instance_id": None,
                "metadata": b"\x00\x03" + bytes(60)} for i in range(20)]  # fmt: skip
    return {"throttle_time_ms": 0, "error_code": 0, "generation_id": 42, "protocol_type": "consumer",
            "protocol_name": "cooperative-sticky", "leader": members[0]["member_id"], "skip_assignment": False,
            "member_id": members[0]["member_id"], "members": members}  # fmt: skip


def build_mix() -> list[Frame]:
    def req(key: int, version: int, body: dict) -> bytes:
        return encoder.encode_request(key, version, body, correlation_id=7, client_id="bench", size_prefix=False)

    def resp(key: int, version: int, body: dict) -> bytes:
        return encoder.encode_response(key, version, body, correlation_id=7, size_prefix=False)

    return [
        ("Metadata v12 response (1,000 partitions)", resp(3, 12, _metadata_response()), 3, 12, "response"),
        ("Fetch v16 response", resp(1, 16, _fetch_response()), 1, 16, "response"),
        ("Produce v11 request", req(0, 11, _produce_request()), 0, 11, "request"),
        ("OffsetCommit v9 request", req(8, 9, _offset_commit_request()), 8, 9, "request"),
        ("JoinGroup v9 response", resp(11, 9, _join_group_response()), 11, 9, "response"),
    ]


def kdissect_decoder(frame: Frame) -> Callable[[], object]:
    _, raw, key, version, kind = frame
    if kind == "request":
        return lambda: kdissect.decode_request(raw)
    return lambda: kdissect.decode_response(raw, key, version)


def kio_decoder(frame: Frame) -> Callable[[], object]:
    """Header then body, as kio's own users read a frame (every frame in the mix uses a flexible header)."""
    _, raw, key, version, kind = frame
    if kind == "request":
        header, body = entity_reader(KioRequestHeaderV2), entity_reader(load_request_schema(key, version))
    else:
        header, body = entity_reader(KioResponseHeaderV1), entity_reader(load_response_schema(key, version))

    def decode() -> object:
        h, p = header(raw, 0)
        return h, body(raw, p)

    return decode


def timed(fns: list[Callable[[], object]], repeat: int, native: bool | None = None) -> float:
    """Seconds for ``repeat`` passes over ``fns``, with kdissect's native or Python decoders selected."""
    if native is not None:
        compiler.use_native(native)
    t = time.perf_counter()
    for _ in range(repeat):
        for fn in fns:
            fn()
    return time.perf_counter() - t


def timed_collector_off(fns: list[Callable[[], object]], repeat: int, native: bool | None = None) -> float:
    """The same passes with the cycle collector off for both sides: decoding work alone."""
    gc.disable()
    try:
        return timed(fns, repeat, native)
    finally:
        gc.enable()


def timed_consumer(fns: list[Callable[[], object]], repeat: int, native: bool | None = None) -> float:
    """The same passes, each result put in a new list while it is held, as a consumer storing it
    would: a collection due then visits the result (one kdissect decode leaves for its caller)."""
    if native is not None:
        compiler.use_native(native)
    t = time.perf_counter()
    for _ in range(repeat):
        for fn in fns:
            [fn()]  # the allocation a consumer makes while holding the result
    return time.perf_counter() - t


def best_of(rounds: int, sides: dict, repeat: int, timer: Callable[..., float]) -> dict[str, float]:
    """Best seconds per side over ``rounds`` rounds that alternate between the sides."""
    best = dict.fromkeys(sides, float("inf"))
    for _ in range(rounds):
        for name, (fns, native) in sides.items():
            best[name] = min(best[name], timer(fns, repeat, native))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=50, help="passes over the mix per round")
    args = ap.parse_args()
    mix = build_mix()
    total_bytes = sum(len(f[1]) for f in mix)
    print(f"mix: {len(mix)} frames, {total_bytes:,} bytes per pass")
    for label, raw, *_ in mix:
        print(f"  {label:<42} {len(raw):>8,} bytes")
    kd = [kdissect_decoder(f) for f in mix]
    sides = {"kdissect": (kd, True)} if compiler.native_loaded() else {}
    if not sides:
        print("(native extension not built: only the pure-Python decoders are measured)")
    sides["kdissect-py"] = (kd, False)
    sides["kio"] = ([kio_decoder(f) for f in mix], None)
    for fns, native in sides.values():  # warm up: compile decoders, load kio classes
        timed(fns, 1, native)
    best = best_of(args.rounds, sides, args.repeat, timed)
    print(f"\nbest of {args.rounds} rounds, {args.repeat} passes each:")
    for name, secs in best.items():
        msgs = len(mix) * args.repeat / secs
        mbs = total_bytes * args.repeat / secs / 1e6
        print(f"  {name:<12} {msgs:>10,.0f} messages/s  {mbs:>8,.1f} MB/s  {best['kio'] / secs:.2f}x kio")
    ours = [n for n in sides if n != "kio"]
    print("\nper frame (best of 3 more rounds, alternating as above): µs per frame, ratio to kio")
    print(f"  {'':<42} " + "  ".join(f"{n:>21}" for n in sides))
    for i, frame in enumerate(mix):
        per = best_of(3, {n: ([fns[i]], native) for n, (fns, native) in sides.items()}, args.repeat, timed)
        cells = [f"{per[n] / args.repeat * 1e6:>10.1f} µs {per['kio'] / per[n]:>6.2f}x" for n in sides]
        print(f"  {frame[0]:<42} " + "  ".join(cells))
    # The headline figure drops each result at once. Shown apart, for reading it: the decoding work
    # alone, and the cost of a collection visiting results a consumer still holds.
    print("\nthe mix again, kdissect native vs kio (best of the same rounds):")
    native_vs_kio = {n: sides[n] for n in sides if n != "kdissect-py"}
    for label, timer in (("collector off for both", timed_collector_off), ("consumer", timed_consumer)):
        other = best_of(args.rounds, native_vs_kio, args.repeat, timer)
        cells = [f"{n} {other[n] / args.repeat / len(mix) * 1e6:.1f} µs/frame" for n in ours if n in other]
        print(f"  {label:<24} " + ", ".join(cells) + f", kio {other['kio'] / args.repeat / len(mix) * 1e6:.1f}"
              + " µs/frame: " + "  ".join(f"{other['kio'] / other[n]:.2f}x kio" for n in ours if n in other))


if __name__ == "__main__":
    main()
