"""The command line's process heap: keep freed memory for the next allocation rather than give it
back to the system at once.

glibc trims its heap whenever a little of its top is free; a run over a record-heavy capture frees
big blocks all the time (read chunks, frames spanning many segments, decoded values), so the heap
shrank and grew again, and every page it grew by was a fresh page fault: about a third of such a
run's faults and of its system time. Only the process's owner (``kdissect.cli.main``) calls this:
the setting is the whole process's, which a library must not change under its caller.
"""

from __future__ import annotations

from kdissect.native import native_module

HEAP_PAD = 64 << 20  # what the heap grows by beyond a request, and keeps free when it trims

_heap = native_module("engines._heap")  # glibc's mallopt (engines/_heap.c)


def keep_freed_heap(pad: int = HEAP_PAD) -> bool:
    """Let the heap keep ``pad`` bytes free; whether the allocator took it (False without glibc,
    without the extension, or with ``KDISSECT_PURE_PYTHON`` set: nothing else changes then)."""
    return _heap is not None and _heap.pad_heap(pad)
