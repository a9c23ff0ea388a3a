"""Which request an orphan response answers, when the request was not captured.

A capture that starts mid-conversation (or loses a request) leaves responses whose request is
unknown, and a response cannot be decoded without its request's api key and version. The rule:
try the (key, version) pairs already seen on that connection, and, when none of them fits, the
requests a client usually sends; accept a pair only when it is the one pair in its round that
decodes the whole frame *consistently* (exactly to its end, no bytes left, a throttle time that
is not negative and only error codes Kafka defines). Two fits in one round are ambiguous: the
response stays undecoded, its bytes kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from kdissect.decoders import api as decode_api
from kdissect.decoders import apis, schema
from kdissect.decoders.entities import is_error_field, walk
from kdissect.decoders.error_codes import ERROR_CODES
from kdissect.decoders.errors import DecodeError

Pair = tuple[int, int]  # (api key, api version) of the request a response answers

# What clients send on a connection, roughly in order (connect, authenticate, discover, join a
# group, consume, produce): the second round of guesses, every version of each.
USUAL_CLIENT_SEQUENCE = (
    "ApiVersions",
    "SaslHandshake",
    "SaslAuthenticate",
    "Metadata",
    "FindCoordinator",
    "InitProducerId",
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "OffsetFetch",
    "ListOffsets",
    "Fetch",
    "Produce",
    "OffsetCommit",
    "LeaveGroup",
)


@cache
def usual_pairs() -> tuple[Pair, ...]:
    """Every response version of the usual client APIs."""
    out: list[Pair] = []
    for name in USUAL_CLIENT_SEQUENCE:
        key = apis.key_of(name)
        rng = apis.version_range(key, "response")
        if rng is not None:
            out.extend((key, v) for v in range(rng[0], rng[1] + 1))
    return tuple(out)


def consistent(data: bytes, key: int, version: int) -> bool:
    """``data`` (a response frame, no size prefix) decodes exactly as the answer to ``key`` v``version``,
    with a throttle time that is not negative and only error codes Kafka defines."""
    if not decode_api.frame_fits(data, key, version, "response"):
        return False
    try:
        decoded = decode_api.decode_response_frame(data, key, version)
    except DecodeError:  # pragma: no cover - frame_fits said it decodes
        return False
    body = decoded["body"]
    if decoded.get("warnings") or (body.get("throttle_time_ms") or 0) < 0:
        return False
    message = schema.api_message(key, version, "response")
    for entry in walk(message, body, errors_only=True):
        if any(is_error_field(k) and v not in ERROR_CODES for k, v in entry.scalars.items()):
            return False
    return True


def infer_request(data: bytes, seen: Iterable[Pair]) -> Pair | None:
    """The one (key, version) that explains an orphan response, or None (none fits, or several do)."""
    seen = tuple(seen)
    for candidates in (seen, tuple(p for p in usual_pairs() if p not in seen)):
        fitting = [pair for pair in candidates if consistent(data, *pair)]
        if len(fitting) == 1:
            return fitting[0]
        if fitting:
            return None
    return None
