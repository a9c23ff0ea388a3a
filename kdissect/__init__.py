"""kdissect: a Kafka wire-protocol dissector and analyzer.

``import kdissect`` stays light: the capture/table layer (pandas) loads on first use.
"""

from typing import Any

from kdissect.decoders import DecodeError, decode_data, decode_request, decode_response

__all__ = [
    "Capture",
    "DecodeError",
    "Limits",
    "Payloads",
    "RecordOptions",
    "decode_data",
    "decode_request",
    "decode_response",
    "open_capture",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("Capture", "open_capture"):
        from kdissect import capture

        return getattr(capture, name)
    if name in ("Limits", "Payloads"):
        from kdissect.decoders import records

        return getattr(records, name)
    if name == "RecordOptions":
        from kdissect.tables.record_rows import RecordOptions

        return RecordOptions
    raise AttributeError(f"module 'kdissect' has no attribute {name!r}")
