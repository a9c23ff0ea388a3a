"""How a direction proves a frame boundary: what a Kafka request or response may look like.

The framer asks these while hunting (after a gap or a mid-stream start) and, loosely, on every
frame while in sync. A request is proven by decoding exactly; a response by a pending
correlation id whose response decodes exactly, which is where pairing feeds back into framing.
"""

from __future__ import annotations

import struct
from functools import cache

from kdissect.decoders import api as decode_api
from kdissect.decoders import apis, schema
from kdissect.kafka.framing import Validator
from kdissect.kafka.pairing import Pairer

_HH = struct.Struct(">hh")
_HHIH = struct.Struct(">hhih")
_IIH = struct.Struct(">iih")
_I = struct.Struct(">i")
_REQUEST_VERSIONS = {key: api.versions["request"] for key, api in apis.registry().items() if "request" in api.versions}
_MAX_KEY = max(_REQUEST_VERSIONS)
_NEWER_KEYS = 8  # api keys beyond the table's that may still be Kafka's
_NEWER_VERSIONS = 2  # likewise for versions beyond the newest known
_MAX_ORPHAN = 64 * 1024  # an in-sync response frame answering no known request may claim this much


# Per api key up to the newest Kafka could send, the newest version sane() lets through (-1: none).
_SANE_VERSIONS = [(_REQUEST_VERSIONS[key][1] if key in _REQUEST_VERSIONS else 0 if key > _MAX_KEY else -1)
                  + _NEWER_VERSIONS * (key in _REQUEST_VERSIONS or key > _MAX_KEY)
                  for key in range(_MAX_KEY + _NEWER_KEYS + 1)]

# api_key << 16 | api_version of every request the table knows: what a plausible request starts with
_KEY_VERSIONS = frozenset(key << 16 | v for key, (lo, hi) in _REQUEST_VERSIONS.items() for v in range(lo, hi + 1))


@cache
def smallest_response() -> int:
    """Fewest bytes (header and body, no size prefix) of any response the table defines.

    The one rule for frames on a connection never proven Kafka (no request decoded, no answer
    paired): a response frame shorter than this cannot be Kafka's, so it is not taken as an
    orphan. Without it a 9-byte HTTP/2 SETTINGS frame on a broker port read as a 4-byte answer."""
    sizes = []
    for key, version, kind in schema.all_api_versions():
        if kind == "response":
            header = schema.message("ResponseHeader", apis.header_version(key, version, kind))
            body = schema.api_message(key, version, kind)
            sizes.append(schema.min_message_size(header) + schema.min_message_size(body))
    return min(sizes)


class RequestValidator(Validator):
    heads = _KEY_VERSIONS

    def plausible(self, head: bytes, size: int) -> bool:
        if len(head) < 10 or size < 10:
            return len(head) >= 8 and size >= 8 and _I.unpack_from(head, 0)[0] in _KEY_VERSIONS
        key_version, _, client_id_len = _IIH.unpack_from(head, 0)
        return key_version in _KEY_VERSIONS and -1 <= client_id_len <= size - 10

    def accept(
        self, buf: bytearray, start: int, end: int, at_chunk_edges: bool, budget: int
    ) -> tuple[bool | None, int]:
        if end - start < 4:
            return False, budget
        key, version = _HH.unpack_from(buf, start)
        return decode_api.frame_proof(buf, key, version, "request", start, end, budget)

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

    def native_sane(self) -> tuple:
        """("request", newest sane version per api key): sane's rule as a table."""
        return "request", _SANE_VERSIONS


class ResponseValidator(Validator):
    """A response boundary is proven by a pending correlation id whose response decodes
    exactly, or (for orphans) by a frame that exactly fills whole segments."""

    reads_chunk_edges = True

    def __init__(self, pairer: Pairer) -> None:
        self.pairer = pairer
        self.proven = False  # the connection was shown to be Kafka (the session says when)

    def plausible(self, head: bytes, size: int) -> bool:
        return len(head) >= 4 and (self.proven or size >= smallest_response())

    def sane(self, head: bytes, size: int) -> bool:
        """A response to a pending request, or a modest orphan (its request was lost): a stray
        byte turning the next size field into megabytes must not hold the direction hostage;
        before the connection is proven Kafka, no smaller than the smallest response."""
        if _I.unpack_from(head, 0)[0] in self.pairer:
            return True
        return size <= _MAX_ORPHAN and (self.proven or size >= smallest_response())

    def native_sane(self) -> tuple | None:
        """("response", the orphan bound) once proven: a lane checks it itself while its pairing holds the
        waiting requests (the pairer then holds none)."""
        return ("response", _MAX_ORPHAN) if self.proven else None

    def accept(
        self, buf: bytearray, start: int, end: int, at_chunk_edges: bool, budget: int
    ) -> tuple[bool | None, int]:
        request = self.pairer.request_for(_I.unpack_from(buf, start)[0])
        if request is None:  # an orphan (its request was lost or before the capture)
            return at_chunk_edges, budget
        assert request.api_key is not None and request.api_version is not None
        return decode_api.frame_proof(buf, request.api_key, request.api_version, "response", start, end, budget)
