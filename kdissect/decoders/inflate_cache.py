"""The run's recently inflated record payloads, so a compressed batch is inflated once per run.

Why: a batch a producer sends is read back by every consumer group that fetches it, and the broker
returns the very bytes it was sent; on record-heavy traffic (three groups reading back what three
producers wrote) every compressed payload was inflated four times, and inflating was a third of the
run's CPU. Decompression is a pure function of (codec, payload, byte limit), so its result, with its
warnings, is kept by those and handed out again.

Bounded: only payloads of at least ``MIN_PAYLOAD`` bytes are kept (small ones cost less to inflate
than to keep), and the oldest go once the kept payloads and results pass ``max_bytes``.
"""

from __future__ import annotations

from .codecs import Decompressed, decompress

MIN_PAYLOAD = 1024
DEFAULT_MAX_BYTES = 32 << 20


_Key = tuple[int, bool, int, bytes]  # codec, legacy LZ4, byte limit, payload


class InflateCache:
    """Inflates record payloads, keeping the results of the recent large ones (oldest evicted first)."""

    __slots__ = ("_entries", "held", "max_bytes")

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.held = 0  # payload and result bytes kept
        self._entries: dict[_Key, Decompressed] = {}

    def inflate(self, codec: int, payload: bytes | memoryview, limit: int, legacy_lz4: bool) -> Decompressed:
        """``codecs.decompress``'s result for these arguments, kept or computed."""
        if len(payload) < MIN_PAYLOAD:
            return decompress(codec, payload, limit, legacy_lz4=legacy_lz4)
        key = (codec, legacy_lz4, limit, bytes(payload))
        result = self._entries.get(key)
        if result is None:
            result = decompress(codec, payload, limit, legacy_lz4=legacy_lz4)
            self._put(key, result)
        return result

    def _put(self, key: _Key, result: Decompressed) -> None:
        size = len(key[3]) + len(result.data)
        if size > self.max_bytes:
            return
        entries = self._entries
        while self.held + size > self.max_bytes:
            old_key = next(iter(entries))
            self.held -= len(old_key[3]) + len(entries.pop(old_key).data)
        entries[key] = result
        self.held += size
