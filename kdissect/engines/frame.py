"""The smallest engine: one Kafka frame's bytes -> the decoded message, with SASL secrets redacted as
in every other output (``kdissect decode``). No capture, no connection: the decoders alone."""

from __future__ import annotations

from typing import Any

from kdissect.decoders import DecodeError as DecodeError  # what a frame that does not decode raises
from kdissect.decoders import apis, decode_request, decode_response
from kdissect.decoders.jsonable import to_jsonable as to_jsonable  # the message as JSON holds it
from kdissect.decoders.sasl import redact_frame_body


def decode_frame(frame: bytes, api_key: int | None = None, api_version: int | None = None) -> dict[str, Any]:
    """A request's bytes (``api_key`` None), or a response's to a request of ``api_key``/``api_version``."""
    is_request = api_key is None
    msg = decode_request(frame) if is_request else decode_response(frame, api_key, api_version)  # type: ignore[arg-type]
    redact_frame_body(msg["header"].get("request_api_key") if is_request else api_key, msg["body"], is_request)
    return msg


def api_key_of(name: str) -> int | None:
    """The api key of an API name, None for a name the schema table does not hold."""
    try:
        return apis.key_of(name)
    except LookupError:
        return None
