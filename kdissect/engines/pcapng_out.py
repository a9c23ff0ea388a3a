"""``kdissect live --write FILE.pcapng``: every captured record, as captured, to a pcapng file.

One section; an interface description per link type, added when its first packet arrives (a
``--read`` of a multi-interface pcapng keeps its link types); nanosecond timestamps; each
packet's wire length kept, so a snap-length cut reads back as a cut. Written through a buffer
that is flushed every second and on stop, so ``kdissect analyze`` can read the file while it
grows and gets every packet once the run ends.
"""

from __future__ import annotations

import struct
from pathlib import Path

from kdissect.sources.pcapng import BYTE_ORDER_MAGIC, EPB_TYPE, IDB_TYPE, OPT_TSRESOL, SHB_TYPE
from kdissect.sources.shapes import CaptureRecord

_SECTION_HEADER = struct.pack("<IHHq", BYTE_ORDER_MAGIC, 1, 0, -1)  # little-endian, v1.0, length unknown
_NS_RESOLUTION = struct.pack("<HHB3xHH", OPT_TSRESOL, 1, 9, 0, 0)  # if_tsresol 10**-9 s, then opt_endofopt


def _block(block_type: int, body: bytes) -> bytes:
    """A little-endian pcapng block: type, total length, body padded to 4 bytes, total length."""
    body += b"\0" * (-len(body) % 4)
    total = len(body) + 12
    return struct.pack("<II", block_type, total) + body + struct.pack("<I", total)


class PcapngRecorder:
    """Appends records to ``path`` (created or truncated)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.packets = 0
        self._file = self.path.open("wb", buffering=1 << 20)
        self._file.write(_block(SHB_TYPE, _SECTION_HEADER))
        self._interfaces: dict[int, int] = {}  # link type -> interface id

    def write(self, record: CaptureRecord) -> None:
        iface = self._interfaces.get(record.link_type)
        if iface is None:
            iface = self._interfaces[record.link_type] = len(self._interfaces)
            self._file.write(_block(IDB_TYPE, struct.pack("<HHI", record.link_type, 0, 0) + _NS_RESOLUTION))
        ts = record.ts_ns
        head = struct.pack("<IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(record.data), record.orig_len)
        self._file.write(_block(EPB_TYPE, head + record.data))
        self.packets += 1

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
