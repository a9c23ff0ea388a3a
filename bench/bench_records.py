"""Records decoded per second: kdissect's decode_records against kafka-python's DefaultRecordBatch.

kdissect runs with its record loop in C (the default when the extension is built) and in pure
Python (``records.use_native(False)``, as with ``KDISSECT_PURE_PYTHON=1``).

Both read the same magic 2 batches, written by kafka-python's own builder, for every codec.
kafka-python decodes key, value and headers of each record as it iterates, and so does
kdissect (plus the CRC check, which kafka-python skips unless asked). Each figure is the best
of several rounds, measured alternately, so a busy machine hurts both sides alike.

    /work/venv/bin/python bench/bench_records.py [--batches 200] [--records 100] [--value-size 100]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kdissect.decoders import records
from kdissect.decoders.codecs import CODEC_NAMES
from kdissect.decoders.records import LENGTHS_ONLY, decode_records


def build_batches(codec: int, batches: int, records: int, value_size: int, headers: int) -> list[bytes]:
    """Batches of records with short keys and text-like values (so the codecs have work to do)."""
    rnd = random.Random(codec)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"order", b"user", b"42", b"true", b"null", b"{", b"}"]
    out = []
    for b in range(batches):
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=False, producer_id=-1, producer_epoch=-1,
            base_sequence=-1, batch_size=1 << 30,
        )  # fmt: skip
        for i in range(records):
            value = b" ".join(rnd.choice(words) for _ in range(value_size // 4))[:value_size]
            hdrs = [(f"h{j}", b"v%d" % (b * j)) for j in range(headers)]
            builder.append(i, 1_700_000_000_000 + i, b"key-%d" % i, value, hdrs)
        out.append(bytes(builder.build()))
    return out


def kafka_python(batches: list[bytes]) -> int:
    n = 0
    for data in batches:
        for _ in DefaultRecordBatch(data):
            n += 1
    return n


def kdissect(batches: list[bytes]) -> int:
    return sum(len(batch.records) for data in batches for batch in decode_records(data).batches)


def kdissect_lengths(batches: list[bytes]) -> int:
    return sum(len(batch.records) for data in batches for batch in decode_records(data, payloads=LENGTHS_ONLY).batches)


def kdissect_python(batches: list[bytes]) -> int:
    native = records.native_enabled()
    records.use_native(False)
    try:
        return kdissect(batches)
    finally:
        records.use_native(native)


def best_rate(fn: Callable[[list[bytes]], int], batches: list[bytes]) -> float:
    t = time.perf_counter()
    n = fn(batches)
    return n / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--records", type=int, default=100, help="records per batch")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--headers", type=int, default=0, help="headers per record")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    print(
        f"{args.batches} batches x {args.records} records, values {args.value_size} B, {args.headers} headers; "
        f"best of {args.rounds} rounds"
    )
    loop = "C" if records.native_enabled() else "Python"
    print(f"kdissect's record loop: {loop} (pure Python column: the Python loop, whatever the build)")
    print(
        f"{'codec':8} {'kafka-python':>14} {'kdissect':>14} {'ratio':>6} {'lengths-only':>14} {'ratio':>6} "
        f"{'pure Python':>14} {'ratio':>6}"
    )
    sides = {"kp": kafka_python, "kd": kdissect, "kl": kdissect_lengths, "py": kdissect_python}
    for codec in sorted(CODEC_NAMES):
        batches = build_batches(codec, args.batches, args.records, args.value_size, args.headers)
        assert kafka_python(batches) == kdissect(batches) == args.batches * args.records
        best = dict.fromkeys(sides, 0.0)
        for _ in range(args.rounds):
            for name, fn in sides.items():
                best[name] = max(best[name], best_rate(fn, batches))
        print(
            f"{CODEC_NAMES[codec]:8} {best['kp']:>12,.0f}/s {best['kd']:>12,.0f}/s {best['kd'] / best['kp']:>5.2f}x "
            f"{best['kl']:>12,.0f}/s {best['kl'] / best['kp']:>5.2f}x "
            f"{best['py']:>12,.0f}/s {best['py'] / best['kp']:>5.2f}x"
        )


if __name__ == "__main__":
    main()
