"""The command line's process heap: keep freed memory for the next allocation rather than give it
back to the system at once.

glibc trims its heap whenever a little of its top is free, and maps a block past its (sliding) mmap
threshold on its own; a run over a record-heavy capture frees and grows big blocks all the time (read
chunks, frames spanning many segments, the records table's buffers), so the heap shrank and grew again
and big blocks were mapped afresh, every page of it a fresh page fault: a quarter of such a run's faults.
Only a process's owner calls this (``kdissect.cli.main``, and a Spark Python worker's first kdissect
task: ``spark_worker.worker_tuned``; in a session of the user's own, ``read_captures``, a reused worker
may go on to run the user's tasks under the same setting, which costs them memory, never answers):
the setting is the whole process's, which a library must not change under its caller.
"""

from __future__ import annotations

from kdissect.native import native_module

HEAP_PAD = 64 << 20  # what the heap grows by beyond a request, and keeps free when it trims
MMAP_FROM = 32 << 20  # blocks this big or more are mappings of their own (glibc's ceiling for its sliding threshold)

_heap = native_module("engines._heap")  # glibc's mallopt (engines/_heap.c)


def keep_freed_heap(pad: int = HEAP_PAD, mmap_from: int = MMAP_FROM) -> bool:
    """Let the heap keep ``pad`` bytes free and hold blocks under ``mmap_from`` bytes; whether the allocator
    took it (False without glibc, without the extension, or with ``KDISSECT_PURE_PYTHON`` set: nothing
    else changes then)."""
    return _heap is not None and _heap.keep_heap(pad, mmap_from)
