"""Which decode task each connection that crosses units goes to, so that the tasks get equal shares.

Hashed by their key, a few long connections (a chatty capture's busy clients, each a third of its
file's work) fall into the decode tasks unevenly: over mixed-1g on ``local[2]`` one of four tasks got
half the stage's work, and one core idled for the last third of the stage. The census knows each
crossing connection's work (:func:`kdissect.engines.units.decoding_weight`), so the driver deals them
out heaviest first, each to the task with the least so far (the longest-processing-time rule), and
numbers the tasks heaviest first: Spark starts a stage's tasks in partition order, so the lighter
ones fill the cores as the heavy ones end.

The connections that start in one file stay in one task where its share allows (up to a quarter
over an even share): connections of files whose times interleave (captures of several hosts, copies)
cost more together. Three busy connections of such files took 8 CPU-s in one task, 0.7 each alone,
when a task's batches still ended where the file changed (they now span files, each segment named
with its own).

A connection's rows carry, in place of their key, a routing key that Spark's hash partitioning puts
in its task (:func:`spark_partition`, the hash Spark computes). Where a row goes decides only which
task decodes it, never what it decodes to: if the hash were not Spark's, every row of a connection
would still go to one task, by the same routing key.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

_M32 = 0xFFFFFFFF
_SEED = 42  # Spark's seed for hash partitioning (``Murmur3Hash``)
KEEP_TOGETHER = 1.25  # how far over an even share a share may take a key to keep a file's keys together


def _mix_k1(k: int) -> int:
    k = (k * 0xCC9E2D51) & _M32
    k = ((k << 15) | (k >> 17)) & _M32
    return (k * 0x1B873593) & _M32


def _mix_h1(h: int, k: int) -> int:
    h ^= k
    h = ((h << 13) | (h >> 19)) & _M32
    return (h * 5 + 0xE6546B64) & _M32


def spark_partition(value: int, partitions: int) -> int:
    """The partition that ``repartition(partitions, column)`` puts a row in whose long ``column`` is
    ``value``: ``pmod(murmur3(value, seed 42), partitions)``, Spark's ``Murmur3_x86_32.hashLong``."""
    value &= 0xFFFFFFFFFFFFFFFF
    h = _mix_h1(_mix_h1(_SEED, _mix_k1(value & _M32)), _mix_k1(value >> 32))
    h ^= 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return (h - (1 << 32) if h >> 31 else h) % partitions


def routing_keys(partitions: int) -> list[int]:
    """For each partition, the smallest non-negative routing key Spark hashes into it."""
    keys: dict[int, int] = {}
    value = 0
    while len(keys) < partitions:
        keys.setdefault(spark_partition(value, partitions), value)
        value += 1
    return [keys[p] for p in range(partitions)]


def shares(crossing: Mapping[int, tuple[int, int]], partitions: int) -> list[list[int]]:
    """The keys of ``crossing`` (key -> (work, the file it starts in)) dealt into ``partitions`` shares,
    heaviest key first, to the lightest share so far, or to the lightest share already holding a key of
    its file if that share stays within ``KEEP_TOGETHER`` times an even share; the shares heaviest first
    (ties in key order, so every run deals alike)."""
    total = sum(weight for weight, _ in crossing.values())
    limit = KEEP_TOGETHER * total / max(1, partitions)
    totals = [0] * partitions
    dealt: list[list[int]] = [[] for _ in range(partitions)]
    lightest = [(0, i) for i in range(partitions)]  # a heap of (total, share), stale entries skipped
    holding: dict[int, list[int]] = {}  # file -> the shares holding a key starting in it
    for key, (weight, file) in sorted(crossing.items(), key=lambda item: (-item[1][0], item[0])):
        same = min(holding.get(file, ()), key=lambda share: (totals[share], share), default=None)
        if same is not None and totals[same] + weight <= limit:
            share = same
        else:
            while lightest[0][0] != totals[lightest[0][1]]:
                heapq.heappop(lightest)
            share = lightest[0][1]
        dealt[share].append(key)
        totals[share] += weight
        heapq.heappush(lightest, (totals[share], share))
        if share not in holding.setdefault(file, []):
            holding[file].append(share)
    order = sorted(range(partitions), key=lambda share: (-totals[share], share))
    return [dealt[share] for share in order]


def routes(crossing: Mapping[int, tuple[int, int]], partitions: int) -> dict[int, int]:
    """Each key of ``crossing`` -> the routing key its rows carry, which puts them in the partition of
    its share (:func:`shares`: the heaviest share in partition 0)."""
    return {key: route for keys, route in zip(shares(crossing, partitions), routing_keys(partitions), strict=True)
            for key in keys}  # fmt: skip
