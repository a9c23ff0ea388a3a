"""The run's inflate cache: a compressed batch read back is inflated once, with the same results.

A batch decoded again with the same run meter (a consumer reading back what a producer sent) must
give exactly what inflating it again gives (records, warnings, and the budget spent), while the
codec runs once; the cache stays within its bound, and small payloads are not kept.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import kdissect.decoders.inflate_cache as inflate_cache
from kdissect.decoders.codecs import CODEC_GZIP, CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD
from kdissect.decoders.inflate_cache import MIN_PAYLOAD, InflateCache
from kdissect.decoders.records import DEFAULT_LIMITS, RunMeter, decode_records
from kdissect.testing.records_encode import encode_batch, new_record


def _batch(codec: int, n: int = 200, base_offset: int = 0) -> bytes:
    rng = random.Random(n)  # values half random: the compressed records pass MIN_PAYLOAD
    records = [new_record(b"key-%d" % i, rng.randbytes(60) + b"v" * 200, offset=i) for i in range(n)]
    return encode_batch(records, codec=codec, base_offset=base_offset)


@pytest.fixture
def inflations(monkeypatch) -> list[int]:
    """The codec's real runs, counted."""
    calls: list[int] = []
    real = inflate_cache.decompress

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(inflate_cache, "decompress", counted)
    return calls


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_a_batch_read_back_is_inflated_once_with_the_same_result(codec: int, inflations: list[int]) -> None:
    produced, fetched = _batch(codec), _batch(codec, base_offset=5_000)  # the broker assigns offsets
    meter = RunMeter(1 << 30)
    limits = replace(DEFAULT_LIMITS, run=meter)
    first = decode_records(produced, limits=limits)
    spent = meter.total - meter.left
    again = decode_records(fetched, limits=limits)
    assert len(inflations) == 1
    assert meter.total - meter.left == 2 * spent > 0  # the budget is spent as if inflated again
    uncached = decode_records(fetched, limits=replace(DEFAULT_LIMITS, run=RunMeter(1 << 30)))
    assert again == uncached and [r.value for r in again.batches[0].records] == [
        r.value for r in first.batches[0].records]


def test_a_cut_inflation_is_kept_with_its_warning(inflations: list[int]) -> None:
    data = _batch(CODEC_GZIP)
    meter = RunMeter(1 << 30)
    limits = replace(DEFAULT_LIMITS, run=meter, max_decompressed=2_000)
    results = [decode_records(data, limits=limits) for _ in range(2)]
    assert len(inflations) == 1
    assert results[0] == results[1] and results[0].batches[0].warnings


def test_the_cache_stays_within_its_bound_and_keeps_no_small_payload(inflations: list[int]) -> None:
    cache = InflateCache(max_bytes=64 << 10)
    payloads = [_batch(CODEC_GZIP, 20 + i)[61:] for i in range(40)]  # the compressed records, all distinct
    assert all(len(p) >= MIN_PAYLOAD for p in payloads)
    for payload in payloads:
        cache.inflate(CODEC_GZIP, payload, 1 << 20, False)
        assert cache.held <= cache.max_bytes
    cache.inflate(CODEC_GZIP, payloads[-1], 1 << 20, False)  # the newest is still kept
    assert len(inflations) == len(payloads)
    small = _batch(CODEC_GZIP, 1)[61:]
    assert len(small) < MIN_PAYLOAD
    held = cache.held
    for _ in range(2):
        cache.inflate(CODEC_GZIP, small, 1 << 20, False)
    assert cache.held == held and len(inflations) == len(payloads) + 2
