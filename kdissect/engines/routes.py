"""Which decode task each connection that crosses units goes to, and which task passes on (and so
writes) each unit's own pieces, so that the decode tasks and the write tasks get equal shares.

Hashed by their key, a few long connections (a chatty capture's busy clients, each a third of its
file's work) fall into the decode tasks unevenly: over mixed-1g on ``local[2]`` one of four tasks got
half the stage's work, and one core idled for the last third of the stage. The census counts each
crossing connection's segments and payload bytes (:func:`decoding_work`), so the driver deals them
out heaviest first, each to the task with the least so far (the longest-processing-time rule), and
numbers the tasks heaviest first: Spark starts a stage's tasks in partition order, so the lighter
ones fill the cores as the heavy ones end.

The connections that start in one file stay in one task where its share allows (up to a quarter
over an even share): connections of files whose times interleave (captures of several hosts, copies)
cost more together. Three busy connections of such files took 8 CPU-s in one task, 0.7 each alone,
when a task's batches still ended where the file changed (they now span files, each segment named
with its own).

The write tasks are the decode tasks' partitions: each finishes and writes its own pieces and those
of the units whose pieces it passed on. Hashed by unit, those fell unevenly too (over mixed-1g one of
four write tasks 2.7 CPU-s, the others 1.5-1.8, and a core idle for the stage's last second), so the
units' own connections are dealt after the crossing ones, by :func:`writing_work`, heaviest first to
the task with the least writing so far.

A row carries, in place of its key, a routing key that Spark's hash partitioning puts in its task
(:func:`spark_partition`, the hash Spark computes). Where a row goes decides only which task decodes
or writes it, never what it decodes to: if the hash were not Spark's, every row of a connection would
still go to one task, by the same routing key.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from kdissect.dataclass import dataclass

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


def decoding_work(segments: int, payload: int) -> int:
    """The work of decoding a connection of ``segments`` segments carrying ``payload`` bytes, in segments:
    over mixed-1g's decode tasks a segment took 8.4 us and a payload byte 8.4 ns, so a segment weighs as
    1 KB (reports/spark-scale-2026-11-30.md)."""
    return segments + (payload >> 10)


def writing_work(segments: int, payload: int) -> int:
    """The work of finishing and writing a connection's rows: 0.8 us a segment and 5.6 ns a payload byte
    over mixed-1g's write tasks (the records' values dominate), so a segment weighs as 128 bytes."""
    return segments + (payload >> 7)


@dataclass(frozen=True, slots=True)
class Routes:
    """The routing keys of a read task's rows: per crossing connection's key (its decode task), and per
    unit index (the task that passes its own pieces on, and writes them)."""

    connections: dict[int, int]
    units: dict[int, int]


def routes(crossing: Mapping[int, tuple[int, int, int]], own: Sequence[tuple[int, int]], partitions: int) -> Routes:
    """The routing keys for the census's ``crossing`` (key -> (segments, payload bytes, the file it starts
    in)) and for the units whose own connections hold ``own`` (segments, payload bytes; by unit index):
    the crossing keys in :func:`shares` (the heaviest share in partition 0), then each unit, most writing
    first, to the partition with the least writing so far (its share's, and the units' dealt to it)."""
    keys = routing_keys(partitions)
    dealt = shares({key: (decoding_work(s, b), file) for key, (s, b, file) in crossing.items()}, partitions)
    writing = [sum(writing_work(*crossing[key][:2]) for key in share) for share in dealt]
    units = {}
    for unit in sorted(range(len(own)), key=lambda u: (-writing_work(*own[u]), u)):
        least = min(range(partitions), key=lambda p: (writing[p], p))
        writing[least] += writing_work(*own[unit])
        units[unit] = keys[least]
    return Routes({key: route for share, route in zip(dealt, keys, strict=True) for key in share}, units)
