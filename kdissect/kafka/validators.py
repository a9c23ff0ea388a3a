"""How a direction proves a frame boundary: what a Kafka request or response may look like.

The framer asks these while hunting (after a gap or a mid-stream start) and, loosely, on every
frame while in sync. A request is proven by decoding exactly; a response by a pending
correlation id whose response decodes exactly, which is where pairing feeds back into framing.
"""

from __future__ import annotations

import struct

from kdissect.decoders import api as decode_api
from kdissect.decoders import apis
from kdissect.kafka.framing import Validator
from kdissect.kafka.pairing import Pairer

_HH = struct.Struct(">hh")
_HHIH = struct.Struct(">hhih")
_I = struct.Struct(">i")
_REQUEST_VERSIONS = {key: api.versions["request"] for key, api in apis.registry().items() if "request" in api.versions}
_MAX_KEY = max(_REQUEST_VERSIONS)
_NEWER_KEYS = 8  # api keys beyond the table's that may still be Kafka's
_NEWER_VERSIONS = 2  # likewise for versions beyond the newest known
_MAX_ORPHAN = 64 * 1024  # an in-sync response frame answering no known request may claim this much


class RequestValidator(Validator):
    head_pattern = rb"\x00[\x00-\xff]\x00"  # api key and version below 256 (what plausible asks)

    def plausible(self, head: bytes, size: int) -> bool:
        if len(head) < 10 or size < 10:
            return len(head) >= 8 and size >= 8 and _request_key_ok(head)
        if not _request_key_ok(head):
            return False
        client_id_len = _HHIH.unpack_from(head, 0)[3]
        return -1 <= client_id_len <= size - 10

    def accept(self, buf: bytearray, start: int, end: int, at_chunk_edges: bool) -> bool:
        return end - start >= 4 and decode_api.frame_fits(buf, *_HH.unpack_from(buf, start), "request", start, end)

    def sane(self, head: bytes, size: int) -> bool:
        """An api key and version Kafka could send (a little beyond the table, for newer
        clients, whose requests still come out as undecodable frames with their bytes) and a
        client id that fits the frame."""
        if size < 8:
            return False
        key, version = _HH.unpack_from(head, 0)
        rng = _REQUEST_VERSIONS.get(key)
        if rng is None and not _MAX_KEY < key <= _MAX_KEY + _NEWER_KEYS:
            return False
        if not 0 <= version <= (rng[1] if rng is not None else 0) + _NEWER_VERSIONS:
            return False
        return size < 10 or -1 <= _HHIH.unpack_from(head, 0)[3] <= size - 10


def _request_key_ok(head: bytes) -> bool:
    key, version = _HH.unpack_from(head, 0)
    rng = _REQUEST_VERSIONS.get(key)
    return rng is not None and rng[0] <= version <= rng[1]


class ResponseValidator(Validator):
    """A response boundary is proven by a pending correlation id whose response decodes
    exactly, or (for orphans) by a frame that exactly fills whole segments."""

    def __init__(self, pairer: Pairer) -> None:
        self.pairer = pairer

    def plausible(self, head: bytes, size: int) -> bool:
        return len(head) >= 4

    def sane(self, head: bytes, size: int) -> bool:
        """A response to a pending request, or a modest orphan (its request was lost): a stray
        byte turning the next size field into megabytes must not hold the direction hostage."""
        return _I.unpack_from(head, 0)[0] in self.pairer or size <= _MAX_ORPHAN

    def accept(self, buf: bytearray, start: int, end: int, at_chunk_edges: bool) -> bool:
        request = self.pairer.request_for(_I.unpack_from(buf, start)[0])
        if request is None:  # an orphan (its request was lost or before the capture)
            return at_chunk_edges
        assert request.api_key is not None and request.api_version is not None
        return decode_api.frame_fits(buf, request.api_key, request.api_version, "response", start, end)
