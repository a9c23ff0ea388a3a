"""kdissect: a Kafka wire-protocol dissector and analyzer.

Data flows one way, one folder per stage: ``sources`` (capture bytes -> TCP segments) ->
``reassembly`` (segments -> ordered byte runs and gaps) -> ``kafka`` (byte runs -> frames ->
decoded messages -> paired exchanges, per connection) -> ``tables`` (events -> columns) ->
``analysis`` (columns -> figures) -> ``report`` (figures -> text). ``decoders`` (bytes -> Python
data) serves every stage; ``events`` and ``options`` are the vocabulary and settings they share;
``engines`` is the only wiring; ``cli`` and ``capture`` are the faces; ``testing`` builds
synthetic input and is never imported by the rest. A stage imports only from stages before it:
the allowed imports are written down once, in ``tests/test_architecture.py``, which enforces them.

``import kdissect`` stays light: the engine and its tables (pandas, Arrow) load on first use.
Exports: ``open_capture``, ``Capture``, ``Options``, ``Payloads``, ``Limits``, ``decode_request``,
``decode_response``, ``decode_data``, ``DecodeError``.
"""

from typing import Any

from kdissect.decoders import DecodeError, decode_data, decode_request, decode_response

__all__ = [
    "Capture",
    "DecodeError",
    "Limits",
    "Options",
    "Payloads",
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
    if name == "Options":
        from kdissect.options import Options

        return Options
    raise AttributeError(f"module 'kdissect' has no attribute {name!r}")
