"""TCP stream reassembly: segments in, ordered byte runs and gap markers out, per direction.

Rule: knows nothing about Kafka (docs/architecture.md); it imports only the segment type
from ``sources``.
"""

from kdissect.reassembly.reassembler import TcpReassembler
from kdissect.reassembly.streams import (
    DirectionStats,
    ReassemblyEvent,
    StreamConflict,
    StreamData,
    StreamEnd,
    StreamGap,
    StreamStart,
)

__all__ = [
    "DirectionStats",
    "ReassemblyEvent",
    "StreamConflict",
    "StreamData",
    "StreamEnd",
    "StreamGap",
    "StreamStart",
    "TcpReassembler",
]
