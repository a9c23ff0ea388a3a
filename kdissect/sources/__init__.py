"""Capture input: pcap/pcapng bytes in, ``TcpSegment`` and ``SourceAnomaly`` events out.

Rule: the first stage; it owns the ``TcpSegment`` type (``segment``) and imports no other stage.

Layers, each usable alone: ``CaptureParser`` (sans-I/O push parser: bytes to capture
records), ``PacketDecoder`` (records to TCP segments: link, IP with reassembly, TCP),
``CaptureDecoder`` (both, plus counters) and ``iter_capture`` (files, gzip).
"""

from kdissect.sources.decoder import CaptureDecoder, decode_capture
from kdissect.sources.defrag import DefragLimits
from kdissect.sources.files import iter_capture
from kdissect.sources.packets import PacketDecoder
from kdissect.sources.reader import CaptureParser
from kdissect.sources.record_loop import ReaderLimits
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import (
    AnomalyKind,
    CaptureFormatError,
    CaptureRecord,
    SourceAnomaly,
    SourceEvent,
    SourceStats,
)

__all__ = [
    "AnomalyKind",
    "CaptureDecoder",
    "CaptureFormatError",
    "CaptureParser",
    "CaptureRecord",
    "DefragLimits",
    "PacketDecoder",
    "ReaderLimits",
    "SourceAnomaly",
    "SourceEvent",
    "SourceStats",
    "TcpSegment",
    "decode_capture",
    "iter_capture",
]
