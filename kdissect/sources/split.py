"""Where a classic pcap file may be cut into byte ranges that are read apart (Spark tasks).

A pcap record has no marker, so a boundary inside the file must be proven: a run of consecutive
record headers that agree with each other and with the file (captured length within the snap
length and below the wire length, a valid fraction of a second, timestamps going forward within
a tolerance) that ends on another header or exactly at the end of the file. The chance that packet
bytes look like eight such headers in a row is negligible; two readers looking for the boundary
after the same offset find the same one, so neighbouring ranges meet exactly.

A pcapng file is cut where a walk over its block heads from the start of the file proves a block
starts: every block on the way of a known type, its leading and trailing lengths agreeing and the
block inside the file. A range read apart needs its section's Section Header Block and Interface
Description Blocks, which lie before it; the walk notes where they are (:class:`BlockCut`), and the
range is read as those blocks followed by its own. The walk reads eight bytes per block and needs
the file at hand (a local file, mapped); a remote pcapng file is read whole by one task, as a gzip
file always is (a compressed stream needs what came before).
"""

from __future__ import annotations

from struct import Struct

from kdissect.dataclass import dataclass
from kdissect.sources.pcap import GLOBAL_HEADER_LEN, record_layout
from kdissect.sources.pcapng import BYTE_ORDERS, IDB_TYPE, KNOWN_TYPES, SHB_TYPE

CHAIN = 8  # consecutive agreeing record headers that prove a boundary
# A stored length may exceed the snap length a little (a 65535 snap length on loopback holds
# 65550-byte frames); more than this and the header is not believed.
_SNAP_SLACK = 256
_MAX_WIRE_LEN = 1 << 20
_BACKWARDS_S = 1  # timestamps may step back this much between consecutive records
_FORWARDS_S = 86_400  # ... and forward this much


@dataclass(frozen=True, slots=True)
class PcapLayout:
    """What a classic pcap file's global header says about its records."""

    header: bytes  # the global header itself: a range is read as header + its records
    record: Struct  # sec, fraction, captured length, wire length
    record_len: int
    units_per_s: int
    max_caplen: int


def pcap_layout(head: bytes) -> PcapLayout | None:
    """The layout of a file starting with ``head`` (at least the global header), or None when it is
    not a classic pcap file (pcapng, gzip, anything else: such files are read whole)."""
    found = record_layout(head[:4]) if len(head) >= GLOBAL_HEADER_LEN else None
    if found is None:
        return None
    order, ns_per_unit, record_len = found
    snaplen = Struct(order + "I").unpack_from(head, 16)[0]
    return PcapLayout(
        bytes(head[:GLOBAL_HEADER_LEN]),
        Struct(order + "IIII"),
        record_len,
        1_000_000_000 // ns_per_unit,
        min(snaplen, 1 << 18) + _SNAP_SLACK,
    )


def chain_span(layout: PcapLayout) -> int:
    """Bytes a window needs past a candidate offset to prove it whatever the records' sizes."""
    return CHAIN * (layout.record_len + layout.max_caplen)


def prove_boundary(layout: PcapLayout, window: bytes, *, at_eof: bool) -> int | None:
    """The first offset in ``window`` where a proven run of records starts, or None.

    ``at_eof`` says the window ends where the file ends (a run may then stop there); otherwise a
    candidate whose run would leave the window is judged only if the window holds ``chain_span``
    bytes past it, which callers give by overlapping windows.
    """
    end = len(window)
    limit = end if at_eof else end - chain_span(layout)
    for at in range(max(limit, 0)):
        if _proven(layout, window, at, end, at_eof):
            return at
    return None


def _proven(layout: PcapLayout, window: bytes, at: int, end: int, at_eof: bool) -> bool:
    unpack, hdr, units = layout.record.unpack_from, layout.record_len, layout.units_per_s
    last_sec = None
    for _ in range(CHAIN):
        if at == end:
            return at_eof
        if end - at < hdr:
            return False
        sec, frac, incl, orig = unpack(window, at)
        if incl > layout.max_caplen or not 0 < orig <= _MAX_WIRE_LEN or incl > orig or frac >= units:
            return False
        if last_sec is not None and not -_BACKWARDS_S <= sec - last_sec <= _FORWARDS_S:
            return False
        last_sec = sec
        at += hdr + incl
        if at > end:
            return False
    return True


@dataclass(frozen=True, slots=True)
class BlockCut:
    """A proven block start of a pcapng file, and the (offset, length) of each block its section's
    reader needs first: the Section Header Block and the Interface Description Blocks before it (none
    when the cut is itself a Section Header Block)."""

    at: int
    section: tuple[tuple[int, int], ...]


def pcapng_cuts(data: bytes | memoryview, every: int) -> list[BlockCut]:
    """Cuts of a pcapng file (``data``: its bytes, e.g. mapped) about ``every`` bytes apart, at block
    starts proven by the walk from the file's start; the walk stops at the first block it cannot
    prove, and the rest of the file then stays with the last range."""
    cuts: list[BlockCut] = []
    size, at, order, section, due = len(data), 0, None, [], every
    head = None
    while at + 12 <= size:
        if int.from_bytes(data[at : at + 4], "little") == SHB_TYPE:
            order = BYTE_ORDERS.get(bytes(data[at + 8 : at + 12]))
            head = None if order is None else Struct(order + "II")
        if head is None:
            break
        btype, length = head.unpack_from(data, at)
        end = at + length
        if btype not in KNOWN_TYPES or length < 12 or length % 4 or end > size or \
                head.unpack_from(data, end - 8)[1] != length:  # fmt: skip
            break
        if at >= due:
            cuts.append(BlockCut(at, () if btype == SHB_TYPE else tuple(section)))
            due = at + every
        if btype == SHB_TYPE:
            section = [(at, length)]
        elif btype == IDB_TYPE:
            section.append((at, length))
        at = end
    return cuts
